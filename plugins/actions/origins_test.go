package actions

import (
	"net/http"
	"strings"
	"testing"
)

// originDo sends method path from origin (a preflight for preflightMethod
// when not ""), through the core's handler as `mcpkit serve` builds it.
func originDo(t *testing.T, base, method, path, origin, preflightMethod string) *http.Response {
	t.Helper()
	body := ""
	if method == http.MethodPost && path == "/oauth/token" {
		body = "grant_type=authorization_code&code=x"
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if preflightMethod != "" {
		req.Header.Set("Access-Control-Request-Method", preflightMethod)
		req.Header.Set("Access-Control-Request-Headers", "content-type")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestOneOriginPolicy: http.allowed_origins is the one policy of /api,
// /oauth, /.well-known and /mcp. A listed origin reaches /api (it got 403
// forbidden while the core's CORS header said yes) and its preflight for
// PUT is answered by /api itself (the core answered GET, POST, DELETE);
// "*" admits any origin everywhere with "*" and no credentials (every
// cross-origin request was a 403); an unlisted origin is refused
// everywhere.
func TestOneOriginPolicy(t *testing.T) {
	const app = "https://app.example"
	listed := webWithOrigins(t, `{"oauth": {}}`, []string{app})
	any := webWithOrigins(t, `{"oauth": {}}`, []string{"*"})
	type check struct {
		method, path, preflight string
		status                  int
	}
	checks := []check{
		{"GET", "/api/status", "", 200},
		{"OPTIONS", "/api/session", "PUT", 204},
		{"GET", "/.well-known/oauth-authorization-server", "", 200},
		{"GET", "/.well-known/oauth-protected-resource/mcp", "", 200},
		{"OPTIONS", "/oauth/token", "POST", 204},
		{"POST", "/oauth/token", "", 401}, // no client: invalid_client
		{"POST", "/mcp", "", 401},
		{"OPTIONS", "/mcp", "POST", 204},
	}
	for _, c := range checks {
		resp := originDo(t, listed, c.method, c.path, app, c.preflight)
		if resp.StatusCode != c.status || resp.Header.Get("Access-Control-Allow-Origin") != app {
			t.Errorf("listed origin, %s %s: %d, Access-Control-Allow-Origin %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
		if c.path == "/api/session" && !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PUT") {
			t.Errorf("listed origin, preflight of PUT /api/session: Access-Control-Allow-Methods %q", resp.Header.Get("Access-Control-Allow-Methods"))
		}
		resp = originDo(t, any, c.method, c.path, "https://any.example", c.preflight)
		if resp.StatusCode != c.status || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf(`"*", %s %s: %d, Access-Control-Allow-Origin %q, credentials %q`, c.method, c.path, resp.StatusCode,
				resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Credentials"))
		}
		resp = originDo(t, listed, c.method, c.path, "https://evil.example", c.preflight)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("unlisted origin, %s %s: %d, Access-Control-Allow-Origin %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}
