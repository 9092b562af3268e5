package test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// initializeBody is a legacy initialize request.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// crossOrigin sends method path to base from origin (with its body, a
// preflight for preflight when not ""), as a browser would, and returns
// the response (its body read and closed).
func crossOrigin(t *testing.T, base, method, path, origin, preflight, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	switch {
	case preflight != "":
		req.Header.Set("Access-Control-Request-Method", preflight)
		req.Header.Set("Access-Control-Request-Headers", "content-type, authorization")
	case path == "/oauth/token":
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	case body != "":
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// logLines are the JSON log lines of stderr with message msg.
func logLines(stderr, msg string) []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(stderr) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && strings.Contains(m["msg"].(string), msg) {
			out = append(out, m)
		}
	}
	return out
}

// TestActionsStartOAuthByDefault: `mcpkit actions start --http` without
// a configuration serves the OAuth server, as Keryx does: an MCP client
// meets a 401 naming the protected-resource metadata (it used to be
// served without any token), the go-sdk client without credentials
// fails, and the go-sdk's OAuth client signs up and calls a tool; the app's
// HTTP API stays open. `"oauth": false` opts out, and the log says /mcp is
// then unauthenticated, in a WARN.
func TestActionsStartOAuthByDefault(t *testing.T) {
	t.Parallel()
	hp := startActionsDefault(t)
	resp := crossOrigin(t, hp.base, "POST", "/mcp", "", "", initializeBody)
	m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || m == nil || m[1] != hp.base+"/.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("initialize without a token: %d, WWW-Authenticate %q; want 401 naming the resource metadata", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: hp.base + "/mcp", DisableStandaloneSSE: true}, nil); err == nil {
		t.Fatal("the go-sdk client connected without a token")
	}
	h := sdkOAuthHandler(t, "signup", "default@example.com", hp.base+"/oauth/authorize")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: hp.base + "/mcp", OAuthHandler: h, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("the go-sdk OAuth client: %v", err)
	}
	defer cs.Close()
	if author, user := postAs(t, cs, "signed in by default"); author != "Ann" || user == 0 {
		t.Errorf("posted as %q (user %d), want the user who signed up", author, user)
	}
	if code, body := httpDo(t, "GET", hp.base+"/api/status", ""); code != http.StatusOK {
		t.Errorf("GET /api/status: %d %s", code, body)
	}
	if w := logLines(hp.stderr.String(), "unauthenticated"); len(w) != 0 {
		t.Errorf("a warning that /mcp is unauthenticated while OAuth guards it: %v", w)
	}

	// The opt-out.
	off := startActions(t)
	if resp := crossOrigin(t, off.base, "POST", "/mcp", "", "", initializeBody); resp.StatusCode != http.StatusOK {
		t.Errorf(`initialize with "oauth": false: %d, want 200`, resp.StatusCode)
	}
	if code, _ := httpDo(t, "GET", off.base+"/.well-known/oauth-authorization-server", ""); code != http.StatusNotFound {
		t.Errorf(`"oauth": false still serves the authorization server metadata: %d`, code)
	}
	w := logLines(off.stderr.String(), "/mcp is unauthenticated")
	if len(w) != 1 || w[0]["level"] != "WARN" {
		t.Errorf(`"oauth": false: want one WARN that /mcp is unauthenticated, got %v`, w)
	}
}

// TestActionsOriginAny: with MCP_ALLOWED_ORIGINS='*' (any origin),
// cross-origin requests to the metadata, the token endpoint, /mcp and /api
// are answered (they were all 403) with Access-Control-Allow-Origin "*"
// and no credentials header; preflights are answered too. With OAuth
// opted out, the start WARNs that any web page can then call the tools.
func TestActionsOriginAny(t *testing.T) {
	t.Setenv("MCP_ALLOWED_ORIGINS", "*")
	hp := startActionsDefault(t)
	const origin = "https://any.example"
	for _, c := range []struct {
		method, path, preflight, body string
		want                          int
	}{
		{"GET", "/.well-known/oauth-protected-resource/mcp", "", "", 200},
		{"GET", "/.well-known/oauth-authorization-server", "", "", 200},
		{"OPTIONS", "/oauth/token", "POST", "", 204},
		{"POST", "/oauth/token", "", "grant_type=authorization_code&code=x&client_id=nobody", 401},
		{"OPTIONS", "/oauth/register", "POST", "", 204},
		{"OPTIONS", "/mcp", "POST", "", 204},
		{"POST", "/mcp", "", initializeBody, 401},
		{"GET", "/api/status", "", "", 200},
		{"OPTIONS", "/api/session", "PUT", "", 204},
	} {
		resp := crossOrigin(t, hp.base, c.method, c.path, origin, c.preflight, c.body)
		if resp.StatusCode != c.want || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("%s %s from %s: %d, Access-Control-Allow-Origin %q, Access-Control-Allow-Credentials %q; want %d, \"*\" and none",
				c.method, c.path, origin, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Credentials"), c.want)
		}
	}
	// Without OAuth, "*" opens the tools to any web page: the start says so.
	off := startActions(t)
	if w := logLines(off.stderr.String(), "any web page"); len(w) != 1 || w[0]["level"] != "WARN" {
		t.Errorf(`"*" with "oauth": false: want a WARN that any web page can call the tools, got %v`, w)
	}
}

// TestActionsOriginPolicy: `mcpkit serve --plugins actions` with
// http.allowed_origins: /api, /ws, /oauth, /.well-known and /mcp follow the
// one list. The listed origin reaches /api (it got 403 forbidden while the
// CORS header said yes), its PUT preflight is answered with PUT, its
// WebSocket connects; another origin is refused everywhere, without a
// CORS header.
func TestActionsOriginPolicy(t *testing.T) {
	t.Parallel()
	const app, evil = "https://app.example", "https://evil.example"
	cfg := writeConfig(t, `{"http": {"allowed_origins": ["`+app+`"]}, "plugins": {"actions": {"config": {"oauth": {}}}}}`)
	hp := startListening(t, binary(t), "serve", "--log-format", "json", "--http", "127.0.0.1:0", "--plugins", "actions", "--config", cfg)
	checks := []struct {
		method, path, preflight, body string
		want                          int
	}{
		{"GET", "/api/status", "", "", 200},
		{"POST", "/api/messages", "", `{"channel":"o","text":"hi","author":"ann"}`, 200},
		{"OPTIONS", "/api/session", "PUT", "", 204},
		{"GET", "/.well-known/oauth-protected-resource/mcp", "", "", 200},
		{"OPTIONS", "/oauth/token", "POST", "", 204},
		{"POST", "/mcp", "", initializeBody, 401},
	}
	for _, c := range checks {
		resp := crossOrigin(t, hp.base, c.method, c.path, app, c.preflight, c.body)
		if resp.StatusCode != c.want || resp.Header.Get("Access-Control-Allow-Origin") != app {
			t.Errorf("%s %s from %s: %d, Access-Control-Allow-Origin %q; want %d and the origin", c.method, c.path, app, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), c.want)
		}
		if c.path == "/api/session" && !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PUT") {
			t.Errorf("the preflight of PUT /api/session allows %q", resp.Header.Get("Access-Control-Allow-Methods"))
		}
		resp = crossOrigin(t, hp.base, c.method, c.path, evil, c.preflight, c.body)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s from %s: %d, Access-Control-Allow-Origin %q; want 403 and none", c.method, c.path, evil, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	ws := "ws" + strings.TrimPrefix(hp.base, "http") + "/ws"
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {app}}})
	if err != nil {
		t.Fatalf("WebSocket from %s: %v", app, err)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	if _, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {evil}}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("WebSocket from %s: %v %v, want 403", evil, resp, err)
	}
}

// TestActionsMCPServerDisabled: MCP_SERVER_ENABLED=false leaves /mcp
// unserved (404; it served an empty server without auth), serves /api,
// and says so in the log; over stdio, which carries MCP only, the start is
// refused with exit code 3.
func TestActionsMCPServerDisabled(t *testing.T) {
	t.Setenv("MCP_SERVER_ENABLED", "false")
	hp := startActionsDefault(t)
	if resp := crossOrigin(t, hp.base, "POST", "/mcp", "", "", initializeBody); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /mcp: %d, want 404", resp.StatusCode)
	}
	if code, body := httpDo(t, "GET", hp.base+"/api/status", ""); code != http.StatusOK {
		t.Errorf("GET /api/status: %d %s", code, body)
	}
	if code, _ := httpDo(t, "GET", hp.base+"/.well-known/oauth-authorization-server", ""); code != http.StatusNotFound {
		t.Errorf("the OAuth server of a disabled /mcp is served: %d", code)
	}
	if l := logLines(hp.stderr.String(), "MCP server disabled (MCP_SERVER_ENABLED=false)"); len(l) != 1 {
		t.Errorf("no log line saying /mcp is disabled:\n%s", hp.stderr.String())
	}
	out, err := exec.Command(binary(t), "actions", "start", "--stdio").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "MCP is disabled") {
		t.Errorf("start --stdio with MCP disabled: %v\n%s", err, out)
	}
}
