package httpserve

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a log destination safe for concurrent handlers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestClientMistakesAreNotErrors: requests any client can send by mistake
// (a 2026-07-28 ping, a second initialize on a session, a call before
// initialize) are answered with an error that says what to do, and logged
// at Info with the client's address; nothing reaches the error log, the
// SDK's included (before: the SDK logged each at ERROR, and the second
// initialize reached it).
func TestClientMistakesAreNotErrors(t *testing.T) {
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := mcp.NewServer(&mcp.Implementation{Name: "mistakes", Version: "0"}, &mcp.ServerOptions{Logger: logger})
	env := start(t, Options{Server: srv, Logger: logger})

	modernMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`
	resp, _ := env.do(t, http.MethodPost, MCPPath, initBody, nil)
	sid := resp.Header.Get(headerSessionID)
	if sid == "" {
		t.Fatal("initialize opened no session")
	}
	inSession := map[string]string{headerSessionID: sid, headerProtocolVersion: legacyVersion}
	tests := []struct {
		name, body string
		hdr        map[string]string
		id         string
		code       int64
		message    string
	}{
		{"2026-07-28 ping", `{"jsonrpc":"2.0","id":"p1","method":"ping","params":{` + modernMeta + `}}`,
			map[string]string{headerProtocolVersion: statelessVersion, "Mcp-Method": "ping"},
			`"p1"`, -32601, `method "ping" does not exist in protocol 2026-07-28`},
		{"2026-07-28 ping without the era header", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{` + modernMeta + `}}`,
			nil, "2", -32601, `method "ping" does not exist in protocol 2026-07-28`},
		{"second initialize", strings.Replace(initBody, `"id":7`, `"id":3`, 1),
			inSession, "3", -32600, "this session is already initialized"},
		{"call before initialize", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
			nil, "4", -32600, `"tools/list" needs an initialized session`},
		{"call before initialize, a long method", `{"jsonrpc":"2.0","id":6,"method":"` + strings.Repeat("m", 100_000) + `"}`,
			nil, "6", -32600, `"` + strings.Repeat("m", maxMethodBytes) + `..." needs an initialized session`},
	}
	for _, tt := range tests {
		resp, body := env.do(t, http.MethodPost, MCPPath, tt.body, tt.hdr)
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		// A method 2026-07-28 removed is a 404 (SEP-2575), the others a 200.
		status := http.StatusOK
		if tt.code == -32601 {
			status = http.StatusNotFound
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil || resp.StatusCode != status {
			t.Errorf("%s: HTTP %d %q", tt.name, resp.StatusCode, body)
			continue
		}
		if string(m.ID) != tt.id || m.Error.Code != tt.code || !strings.Contains(m.Error.Message, tt.message) {
			t.Errorf("%s: answered id %s, error %+v; want id %s, code %d, %q", tt.name, m.ID, m.Error, tt.id, tt.code, tt.message)
		}
	}
	// The session and the server carry on.
	if resp, body := env.do(t, http.MethodPost, MCPPath, `{"jsonrpc":"2.0","id":5,"method":"ping"}`, inSession); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result":{}`) {
		t.Errorf("ping on the session after the mistakes: HTTP %d %s", resp.StatusCode, body)
	}
	out := logs.String()
	if len(out) > 16<<10 {
		t.Errorf("the log grew by %d bytes: a client's method name is repeated whole", len(out))
	}
	if strings.Contains(out, "level=ERROR") {
		t.Errorf("a client's mistake was logged at ERROR:\n%s", out)
	}
	if n := strings.Count(out, `level=INFO msg="refused a client's mistaken request" remote_addr=127.0.0.1:`); n != len(tests) {
		t.Errorf("%d Info lines with the client's address, want %d:\n%s", n, len(tests), out)
	}
}
