package test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPClientMistakeLoggedAtInfo: a 2026-07-28 ping (the protocol has
// none) sent to `mcpkit serve --http` is answered with a JSON-RPC error
// that says so, and logged at info with the client's address; nothing is
// logged at error (before: the SDK's "method removed in the new protocol"
// at ERROR, for any client to trigger). The server goes on serving.
func TestHTTPClientMistakeLoggedAtInfo(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, "--plugins", "diag")
	post := func(method string) map[string]any {
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}}}}`
		req, err := http.NewRequest(http.MethodPost, hp.base+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		text := string(b)
		if i := strings.Index(text, "data: "); i >= 0 { // an event stream's one message
			text = strings.TrimSpace(text[i+len("data: "):])
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			t.Fatalf("%s answered HTTP %d %q", method, resp.StatusCode, b)
		}
		m["http_status"] = float64(resp.StatusCode)
		return m
	}
	m := post("ping")
	if m["http_status"] != float64(http.StatusNotFound) { // SEP-2575: a removed method is a 404
		t.Errorf("2026-07-28 ping answered HTTP %v, want 404", m["http_status"])
	}
	if errCode(m) != -32601 || !strings.Contains(errMessage(m), `"ping" does not exist in protocol 2026-07-28`) {
		t.Fatalf("2026-07-28 ping answered with %v", m)
	}
	if m := post("tools/list"); m["result"] == nil {
		t.Fatalf("tools/list after the mistake answered with %v", m)
	}
	var info bool
	for line := range strings.Lines(hp.stderr.String()) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if rec["level"] == "ERROR" {
			t.Errorf("logged at ERROR: %s", line)
		}
		if rec["msg"] == "refused a client's mistaken request" && rec["level"] == "INFO" && strings.HasPrefix(rec["remote_addr"].(string), "127.0.0.1:") && rec["method"] == "ping" {
			info = true
		}
	}
	if !info {
		t.Errorf("no info line with the client's address:\n%s", hp.stderr.String())
	}
}
