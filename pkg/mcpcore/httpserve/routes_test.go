package httpserve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// nameRoute answers with the {name} path value and the request's body.
func nameRoute() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "hello %s %s", r.PathValue("name"), body)
	})
}

func TestPluginRoutes(t *testing.T) {
	env := start(t, Options{
		BearerTokens:   []string{"secret"},
		AllowedOrigins: []string{"http://app.example"},
		Routes: []Route{
			{Pattern: "GET /api/{name}", Handler: nameRoute(), Owner: "actions"},
			{Pattern: "POST /api/{name}", Handler: nameRoute(), Owner: "actions"},
			{Pattern: "/.well-known/oauth-protected-resource", Handler: nameRoute(), Owner: "actions"},
		},
	})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(env.base, "http://"))
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		want                     int
		wantBody                 string
	}{
		{"no token needed", http.MethodGet, "/api/bob", "", nil, http.StatusOK, "hello bob "},
		{"body", http.MethodPost, "/api/ann", "payload", nil, http.StatusOK, "hello ann payload"},
		{"well-known", http.MethodGet, "/.well-known/oauth-protected-resource", "", nil, http.StatusOK, "hello  "},
		{"method not routed", http.MethodDelete, "/api/bob", "", nil, http.StatusMethodNotAllowed, ""},
		{"unknown path", http.MethodGet, "/other", "", nil, http.StatusNotFound, ""},
		{"rebinding", http.MethodGet, "/api/bob", "", map[string]string{"Host": "evil.example:" + port}, http.StatusForbidden, ""},
		{"foreign origin", http.MethodGet, "/api/bob", "", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, ""},
		{"allowed origin", http.MethodGet, "/api/bob", "", map[string]string{"Origin": "http://app.example"}, http.StatusOK, "hello bob "},
		// /mcp keeps its bearer check and /healthz stays open.
		{"mcp without token", http.MethodPost, MCPPath, initBody, nil, http.StatusUnauthorized, ""},
		{"health", http.MethodGet, HealthPath, "", nil, http.StatusOK, `{"status":"ok"}` + "\n"},
	}
	for _, tt := range tests {
		resp, body := env.do(t, tt.method, tt.path, tt.body, tt.hdr)
		if resp.StatusCode != tt.want || (tt.wantBody != "" && body != tt.wantBody) {
			t.Errorf("%s: %d %q, want %d %q", tt.name, resp.StatusCode, body, tt.want, tt.wantBody)
		}
	}
}

func TestRouteConflicts(t *testing.T) {
	ok := http.NotFoundHandler()
	tests := []struct {
		name   string
		routes []Route
		err    error
		says   []string // what the error must name
	}{
		{"POST /mcp would win over /mcp", []Route{{"POST /mcp", ok, "actions"}}, ErrRouteConflict, []string{`"POST /mcp"`, "actions", "mcpkit", "/mcp"}},
		{"the same path", []Route{{"/mcp", ok, "actions"}}, ErrRouteConflict, []string{"actions", "mcpkit"}},
		{"health", []Route{{"GET /healthz", ok, "store"}}, ErrRouteConflict, []string{"store", "/healthz"}},
		{"a host pattern", []Route{{"localhost/mcp", ok, "actions"}}, ErrRouteConflict, []string{"actions", "/mcp"}},
		{"two plugins", []Route{{"GET /api/{a}", ok, "actions"}, {"GET /api/{b}", ok, "store"}}, ErrRouteConflict,
			[]string{`"GET /api/{b}" of store`, `"GET /api/{a}" of actions`}},
		{"one plugin twice", []Route{{"/ws", ok, "actions"}, {"/ws", ok, "actions"}}, ErrRouteConflict, []string{"/ws"}},
		{"no owner", []Route{{"/x", ok, ""}}, ErrInvalidOptions, []string{"owner"}},
		{"no handler", []Route{{"/x", nil, "actions"}}, ErrInvalidOptions, []string{"handler"}},
		{"bad pattern", []Route{{"GET", ok, "actions"}}, ErrInvalidOptions, []string{`"GET" of actions`}},
	}
	for _, tt := range tests {
		_, err := NewHandler(Options{Server: newTestServer(), Routes: tt.routes})
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.err)
			continue
		}
		for _, s := range tt.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not name %s", tt.name, err, s)
			}
		}
	}
	// Patterns more general than /mcp do not take it: /mcp stays the core's.
	h, err := NewHandler(Options{Server: newTestServer(), Routes: []Route{{"/", ok, "actions"}, {"/{x}", ok, "store"}, {"/mcp/", ok, "x"}}})
	if err != nil {
		t.Fatalf("general patterns refused: %v", err)
	}
	h.Close()
	if _, err := NewHandler(Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("no server: %v, want ErrInvalidOptions", err)
	}
}

// staticUserID is the identity StaticTokens gives token.
func staticUserID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "token:" + hex.EncodeToString(sum[:])[:16]
}

func TestStaticTokenIdentity(t *testing.T) {
	ctx := context.Background()
	// The same token has the same identity wherever it sits in the list.
	for _, tokens := range [][]string{{"alpha", "beta"}, {"beta"}, {"gamma", "delta", "beta"}} {
		info, err := StaticTokens(tokens)(ctx, "beta", nil)
		if err != nil {
			t.Fatalf("%v: %v", tokens, err)
		}
		if info.UserID != staticUserID("beta") {
			t.Errorf("%v: UserID %q, want %q", tokens, info.UserID, staticUserID("beta"))
		}
		if strings.Contains(info.UserID, "beta") {
			t.Errorf("UserID %q reveals the token", info.UserID)
		}
	}
	if _, err := StaticTokens([]string{"alpha"})(ctx, "alphA", nil); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("wrong token: %v, want ErrInvalidToken", err)
	}
}

// oauthVerifier accepts "oauth-<user>" tokens for that user, and fails
// without deciding on "broken".
func oauthVerifier(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if token == "broken" {
		return nil, errors.New("authorization server unreachable")
	}
	user, ok := strings.CutPrefix(token, "oauth-")
	if !ok {
		return nil, fmt.Errorf("unknown token: %w", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: "oauth:" + user, Scopes: []string{"files"}, Expiration: time.Now().Add(time.Hour)}, nil
}

func TestVerifier(t *testing.T) {
	const metadata = "https://mcp.example/.well-known/oauth-protected-resource"
	env := start(t, Options{BearerTokens: []string{"static"}, Verifier: oauthVerifier, ResourceMetadataURL: metadata})
	if !env.h.Authenticated() {
		t.Fatal("handler with a verifier is not Authenticated")
	}
	resp, _ := env.do(t, http.MethodPost, MCPPath, initBody, map[string]string{"Authorization": "Bearer nope"})
	if want := `Bearer resource_metadata="` + metadata + `"`; resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("refused token: %d, WWW-Authenticate %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	if resp, _ := env.do(t, http.MethodPost, MCPPath, initBody, map[string]string{"Authorization": "Bearer broken"}); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("verifier failure: %d, want 500", resp.StatusCode)
	}
	// Either verifier's token opens a session, bound to its identity.
	var ids []string
	for _, token := range []string{"static", "oauth-ann"} {
		hc := &http.Client{Transport: bearerTransport{token: token, next: env.client.Transport}}
		cs, err := env.connect(t, legacyVersion, nil, hc)
		if err != nil {
			t.Fatalf("token %s: %v", token, err)
		}
		defer cs.Close()
		callEcho(t, cs, "echo", "via "+token)
		ids = append(ids, cs.ID())
	}
	for _, use := range []struct {
		token, session string
	}{{"oauth-bob", ids[0]}, {"oauth-bob", ids[1]}, {"static", ids[1]}} {
		if resp, _ := env.pingSession(t, use.session, use.token); resp.StatusCode != http.StatusForbidden {
			t.Errorf("session %s used with token %s: %d, want 403", use.session, use.token, resp.StatusCode)
		}
	}

	// A verifier alone: no scope is required or named, and the challenge
	// is still there.
	only := start(t, Options{Verifier: oauthVerifier})
	resp, _ = only.do(t, http.MethodPost, MCPPath, initBody, nil)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("verifier only, no token: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	resp, body := only.do(t, http.MethodPost, MCPPath, initBody, map[string]string{"Authorization": "Bearer oauth-ann"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("verifier only, good token: %d %s, WWW-Authenticate %q", resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
	}
	env.h.Close()
	only.h.Close()
}

func TestListenAndServeRefusesUnauthenticated(t *testing.T) {
	open, err := NewHandler(Options{Server: newTestServer()})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []http.Handler{open, http.NotFoundHandler()} {
		ctx, cancel := context.WithCancel(context.Background())
		served := false
		err := ListenAndServe(ctx, "0.0.0.0:0", h, ServeOptions{Ready: func(net.Addr) { served = true; cancel() }})
		cancel()
		if served || !errors.Is(err, ErrUnauthenticatedListen) {
			t.Errorf("%T on 0.0.0.0 without authentication: served %v, error %v, want ErrUnauthenticatedListen", h, served, err)
		}
	}
	// A verifier is authentication.
	authed, err := NewHandler(Options{Server: newTestServer(), Verifier: oauthVerifier})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = ListenAndServe(ctx, "0.0.0.0:0", authed, ServeOptions{Ready: func(net.Addr) { cancel() }})
	if err != nil {
		t.Errorf("authenticated handler on 0.0.0.0: %v", err)
	}
}

// TestOriginAny: "*" admits every origin on /mcp and on plugin routes
// alike (it made every cross-origin request a 403), answering "*" without
// credentials; a plugin route's preflight reaches its handler (which
// knows its methods), while /mcp's is answered by the core.
func TestOriginAny(t *testing.T) {
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "PUT")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		io.WriteString(w, "route")
	})
	env := start(t, Options{AllowedOrigins: []string{"*"}, Routes: []Route{{Pattern: "/oauth/token", Handler: route, Owner: "actions"}}})
	for _, path := range []string{MCPPath, "/oauth/token"} {
		body := ""
		if path == MCPPath {
			body = initBody
		}
		resp, got := env.do(t, http.MethodPost, path, body, map[string]string{"Origin": "https://any.example"})
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("POST %s from any origin: %d %v %q", path, resp.StatusCode, resp.Header, got)
		}
	}
	resp, _ := env.do(t, http.MethodOptions, "/oauth/token", "", map[string]string{"Origin": "https://any.example", "Access-Control-Request-Method": "PUT"})
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Methods") != "PUT" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("a plugin route's preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = env.do(t, http.MethodOptions, MCPPath, "", map[string]string{"Origin": "https://any.example", "Access-Control-Request-Method": "POST"})
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Methods") != "GET, POST, DELETE" {
		t.Errorf("/mcp's preflight: %d %v", resp.StatusCode, resp.Header)
	}
	env.h.Close()
}

// TestNoMCP: with NoMCP, /mcp is 404 and the plugin routes and /healthz
// are served.
func TestNoMCP(t *testing.T) {
	env := start(t, Options{NoMCP: true, Routes: []Route{{Pattern: "GET /api/{name}", Handler: nameRoute(), Owner: "actions"}}})
	if resp, body := env.do(t, http.MethodPost, MCPPath, initBody, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /mcp: %d %s, want 404", resp.StatusCode, body)
	}
	if resp, body := env.do(t, http.MethodGet, "/api/bob", "", nil); resp.StatusCode != http.StatusOK || body != "hello bob " {
		t.Errorf("GET /api/bob: %d %s", resp.StatusCode, body)
	}
	if resp, _ := env.do(t, http.MethodGet, HealthPath, "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %d", resp.StatusCode)
	}
	env.h.Close()
}
