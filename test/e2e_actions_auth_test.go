package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/httpserve"
)

// principalOf is the principal the core gives a static bearer token.
func principalOf(t *testing.T, token string) string {
	t.Helper()
	info, err := httpserve.StaticTokens([]string{token})(t.Context(), token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return info.UserID
}

// logged is a PubSub message an MCP client got as a log notification.
type logged struct{ channel, text string }

// listenLogs connects a legacy MCP client with token (none when "") that
// keeps the standalone SSE stream, on which a legacy session's
// notifications come, sets its log level to info and returns the PubSub
// messages it gets.
func listenLogs(t *testing.T, hp *httpProc, token string) (*mcp.ClientSession, chan logged) {
	t.Helper()
	ch := make(chan logged, 10)
	client := &http.Client{}
	if token != "" {
		client.Transport = bearer{token: token}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, &mcp.ClientOptions{
		LoggingMessageHandler: pubsubLogs(ch)}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hp.base + "/mcp", HTTPClient: client},
		&mcp.ClientSessionOptions{ProtocolVersion: legacyEra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	return cs, ch
}

// firstLog is the first message ch gets within 5 s.
func firstLog(t *testing.T, name string, ch chan logged) logged {
	t.Helper()
	select {
	case l := <-ch:
		return l
	case <-time.After(5 * time.Second):
		t.Fatalf("%s got no notification", name)
	}
	return logged{}
}

// TestActionsStartConfigAuth: `mcpkit actions start --config FILE` reads
// the file `mcpkit serve` reads (the instructions of plugins.actions and
// the bearer tokens of http); /mcp then answers 401 with WWW-Authenticate
// without a valid token, 404 for an unknown session, 403 for a session
// used (or deleted) with another client's token; and an inbox's PubSub
// messages reach only the MCP session of its principal.
func TestActionsStartConfigAuth(t *testing.T) {
	t.Parallel()
	const tokenA, tokenB = "e2e-actions-token-a1", "e2e-actions-token-b2"
	tokens := writeConfig(t, tokenA+"\n"+tokenB+"\n")
	cfg := writeConfig(t, fmt.Sprintf(`{"http": {"bearer_tokens_file": %q},
		"plugins": {"actions": {"config": {"instructions": "from the file"}}, "store": {"config": {"ignored": true}}}}`, tokens))
	hp := startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", "127.0.0.1:0", "--config", cfg)

	for name, token := range map[string]string{"no token": "", "a wrong token": "e2e-actions-token-zz"} {
		c := &rawHTTP{hp: hp, token: token}
		resp, _ := c.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("initialize with %s: HTTP %d, WWW-Authenticate %q; want 401 with a Bearer challenge", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	a := &rawHTTP{hp: hp, token: tokenA}
	msgs := a.initialize(t, "1")
	if !strings.Contains(member(t, msgs[0], "result"), `"instructions":"from the file"`) {
		t.Errorf("the instructions of the file are not served: %s", msgs[0])
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp, msgs := a.post(t, list); resp.StatusCode != http.StatusOK || !strings.Contains(msgs[0], `"name":"user-create"`) {
		t.Fatalf("tools/list in its own session: HTTP %d %v", resp.StatusCode, msgs)
	}
	stolen := &rawHTTP{hp: hp, token: tokenB, session: a.session, era: a.era}
	if resp, msgs := stolen.post(t, list); resp.StatusCode != http.StatusForbidden {
		t.Errorf("A's session with B's token: HTTP %d %v, want 403", resp.StatusCode, msgs)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, hp.base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", a.session)
	req.Header.Set("Authorization", "Bearer "+tokenB)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.Body.Close() != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("DELETE of A's session with B's token: %v %v, want 403", resp, err)
	}
	unknown := &rawHTTP{hp: hp, token: tokenA, session: "no-such-session", era: a.era}
	if resp, msgs := unknown.post(t, list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown session: HTTP %d %v, want 404", resp.StatusCode, msgs)
	}
	if resp, msgs := a.post(t, list); resp.StatusCode != http.StatusOK {
		t.Errorf("A's session after B's attempts: HTTP %d %v", resp.StatusCode, msgs)
	}

	// Inboxes: A's inbox reaches A's session only.
	csA, logsA := listenLogs(t, hp, tokenA)
	_, logsB := listenLogs(t, hp, tokenB)
	inbox := "inbox:" + principalOf(t, tokenA)
	for _, channel := range []string{inbox, "open"} {
		if res := callTool(t, csA, "message-post", map[string]any{"channel": channel, "text": "to " + channel, "author": "ann"}); res.IsError {
			t.Fatalf("message-post: %s", resultText(res))
		}
	}
	if l := firstLog(t, "A", logsA); l.channel != inbox || l.text != "to "+inbox {
		t.Errorf("A's first notification is %+v, want its inbox's message", l)
	}
	if l := firstLog(t, "B", logsB); l.channel != "open" {
		t.Errorf("B's first notification is %+v, want the open channel's (A's inbox is not B's)", l)
	}
	if strings.Contains(hp.stderr.String(), tokenA) || strings.Contains(hp.stderr.String(), tokenB) {
		t.Error("a bearer token is in the log")
	}
}

// TestActionsStartMCPDisabled: with mcp_enabled false in the file, `mcpkit
// actions start` serves the app's HTTP API and no /mcp at all (404, where
// it served an empty MCP server), saying so in its log; a route other than
// /mcp is refused with exit code 3 rather than ignored.
func TestActionsStartMCPDisabled(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"mcp_enabled": false}}}}`)
	hp := startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", "127.0.0.1:0", "--config", cfg)
	if code, body := httpDo(t, "GET", hp.base+"/api/status", ""); code != 200 {
		t.Errorf("GET /api/status: %d %s", code, body)
	}
	if resp := crossOrigin(t, hp.base, "POST", "/mcp", "", "", initializeBody); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /mcp with mcp_enabled false: %d, want 404", resp.StatusCode)
	}
	if l := logLines(hp.stderr.String(), "MCP server disabled (plugins.actions.config.mcp_enabled is false)"); len(l) != 1 {
		t.Errorf("no log line saying /mcp is disabled:\n%s", hp.stderr.String())
	}
	bad := writeConfig(t, `{"plugins": {"actions": {"config": {"mcp_route": "/other"}}}}`)
	out, err := exec.Command(binary(t), "actions", "start", "--http", "127.0.0.1:0", "--config", bad).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "mcp_route") {
		t.Errorf("mcp_route /other: %v\n%s", err, out)
	}
}

// pubsubLogs is a client's log handler that passes on the PubSub messages
// (logger "pubsub", data {channel, message: {text}}) it receives.
func pubsubLogs(ch chan<- logged) func(context.Context, *mcp.LoggingMessageRequest) {
	return func(_ context.Context, r *mcp.LoggingMessageRequest) {
		b, _ := json.Marshal(r.Params.Data)
		var d struct {
			Channel string
			Message struct{ Text string }
		}
		_ = json.Unmarshal(b, &d)
		ch <- logged{d.Channel, d.Message.Text}
	}
}
