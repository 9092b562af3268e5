package httpserve

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// messages returns the JSON-RPC messages of a response body: the data of
// each SSE event, or the body itself.
func messages(resp *http.Response, body string) []string {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return []string{body}
	}
	var msgs []string
	for line := range strings.Lines(body) {
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			msgs = append(msgs, data)
		}
	}
	return msgs
}

// idOf returns the raw text of the top-level "id" member of msg.
func idOf(msg string) string {
	_, rest, ok := strings.Cut(msg, `"id":`)
	if !ok {
		return ""
	}
	end := strings.IndexAny(rest, ",}")
	return rest[:end]
}

// TestIDFidelity: JSON-RPC ids come back exactly as they were sent, in both
// eras, including those the SDK would coerce through float64.
func TestIDFidelity(t *testing.T) {
	env := start(t, Options{})
	ids := []string{"9007199254740993", "1.5", "123456789012345678901234567890", "-0", "1e2", "7", `"seven"`}
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	}
	check := func(era, id string, resp *http.Response, body string) {
		t.Helper()
		msgs := messages(resp, body)
		if resp.StatusCode != http.StatusOK || len(msgs) != 1 || idOf(msgs[0]) != id || strings.Contains(msgs[0], `"error"`) {
			t.Errorf("%s, id %s: %d %v", era, id, resp.StatusCode, msgs)
		}
	}

	// Legacy: the initialize itself, then calls on the session.
	init := strings.Replace(initBody, `"id":7`, `"id":9007199254740993`, 1)
	resp, body := env.do(t, http.MethodPost, MCPPath, init, nil)
	check("initialize", "9007199254740993", resp, body)
	hdr := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": legacyVersion}
	env.do(t, http.MethodPost, MCPPath, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	for _, id := range ids {
		resp, body := env.do(t, http.MethodPost, MCPPath, call(id), hdr)
		check("legacy", id, resp, body)
	}

	// Stateless, each request alone.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, id := range ids {
		list := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{` + meta + `}}`
		resp, body := env.do(t, http.MethodPost, MCPPath, list, map[string]string{"Mcp-Protocol-Version": statelessVersion, "Mcp-Method": "tools/list"})
		check("stateless", id, resp, body)
	}
}

// TestCancelledGetsNoReply: a request the client cancels with
// notifications/cancelled gets no response, and its POST stream ends.
func TestCancelledGetsNoReply(t *testing.T) {
	srv := newTestServer()
	started := make(chan struct{}, 1)
	mcp.AddTool(srv, &mcp.Tool{Name: "block", Description: "block until cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, echoOut{}, ctx.Err()
		})
	env := start(t, Options{Server: srv})
	cs := env.quietConnect(t)
	for _, id := range []string{"1.5", "5", `"five"`} {
		req, err := http.NewRequest(http.MethodPost, env.url, strings.NewReader(
			`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"block","arguments":{"text":"x"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Session-Id": cs.ID(), "Mcp-Protocol-Version": legacyVersion,
		} {
			req.Header.Set(k, v)
		}
		// The SDK sends the response headers with the first event, so the
		// call's response arrives only when its stream ends.
		type reply struct {
			resp *http.Response
			body string
			err  error
		}
		replies := make(chan reply, 1)
		go func() {
			resp, err := env.client.Do(req)
			if err != nil {
				replies <- reply{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			replies <- reply{resp, string(b), err}
		}()
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatalf("id %s: the call did not start", id)
		}
		cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"test"}}`, id)
		if r, b := env.do(t, http.MethodPost, MCPPath, cancel, map[string]string{"Mcp-Session-Id": cs.ID(), "Mcp-Protocol-Version": legacyVersion}); r.StatusCode != http.StatusAccepted {
			t.Fatalf("id %s: cancel: %d %s", id, r.StatusCode, b)
		}
		select {
		case r := <-replies:
			if r.err != nil {
				t.Fatalf("id %s: %v", id, r.err)
			}
			if msgs := messages(r.resp, r.body); r.resp.StatusCode != http.StatusOK || len(msgs) != 0 {
				t.Errorf("id %s: the cancelled call's stream: %d %v, want no message", id, r.resp.StatusCode, msgs)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("id %s: the cancelled call's stream did not end", id)
		}
	}
	// The session goes on.
	callEcho(t, cs, "echo", "after")
}

// TestRefusedRequestsGiveTheirIDsBack: requests with translated ids that the
// SDK refuses before handling them (here an unknown method) leave nothing in
// the session's id table.
func TestRefusedRequestsGiveTheirIDsBack(t *testing.T) {
	env := start(t, Options{})
	resp, _ := env.do(t, http.MethodPost, MCPPath, initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": legacyVersion}
	env.do(t, http.MethodPost, MCPPath, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	for i := range 20 {
		resp, _ := env.do(t, http.MethodPost, MCPPath, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d.5,"method":"no/such"}`, i), hdr)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("an unknown method: HTTP %d, want 400", resp.StatusCode)
		}
	}
	env.h.mu.Lock()
	s := env.h.sessions[sid]
	env.h.mu.Unlock()
	if s == nil {
		t.Fatal("the session is gone")
	}
	if n := s.ids.Len(); n != 0 {
		t.Fatalf("%d ids left in the session's table after refused requests", n)
	}
}
