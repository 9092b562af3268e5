package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/sessionstore"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// webToken is the one token webPlugin's verifier accepts, as user "alice".
const webToken = "alice-token-0123456789"

// webPlugin serves a route, verifies tokens for /mcp and shares sessions
// through store: what the action framework will contribute.
type webPlugin struct {
	store   sessionstore.Store
	pattern string
}

func (p webPlugin) Attach(_ context.Context, h *mcpcore.Host) error {
	mcpcore.AddTool(h, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (any, error) {
		return map[string]string{"principal": mcpcore.Principal(req)}, nil
	})
	h.HandleHTTP(p.pattern, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello from "+h.Name()) }))
	h.SetTokenVerifier(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != webToken {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "alice", Expiration: time.Now().Add(time.Hour)}, nil
	}, "https://mcp.example/.well-known/oauth-protected-resource/mcp")
	if p.store != nil {
		h.SetSessionStore(p.store)
	}
	return nil
}

func (webPlugin) Close(context.Context) error { return nil }

// serveWeb runs Serve over HTTP at addr with webPlugin until the test ends
// and returns the /mcp URL.
func serveWeb(t *testing.T, addr string, p webPlugin) string {
	t.Helper()
	logs := &logRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Serve(ctx, ServeParams{
			Options:  mcpcore.Options{Instances: []mcpcore.Instance{{Name: "web", Plugin: p}}, Logger: slog.New(logs)},
			HTTPAddr: addr,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("exit %d: %v", code, logs.all())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, m := range logs.all() {
			if m["msg"] == "listening" {
				if m["auth"] != true {
					t.Errorf("listening without auth: %v", m)
				}
				return m["url"].(string)
			}
		}
	}
	t.Fatalf("not listening: %v", logs.all())
	return ""
}

// bearer adds a token to every request and sends it to the current target
// host, so that one client session can move between instances.
type bearer struct {
	token  string
	target atomic.Pointer[string]
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if host := b.target.Load(); host != nil {
		r.URL.Host, r.Host = *host, *host
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestServePluginHTTP: through Serve, a plugin's route is served, its
// verifier authenticates /mcp (the principal is its user, a refusal names
// its metadata URL), and its session store lets a second instance serve a
// legacy session the first one opened.
func TestServePluginHTTP(t *testing.T) {
	store := sessionstore.NewMemory()
	urlA := serveWeb(t, "127.0.0.1:0", webPlugin{store: store, pattern: "GET /web/hello"})
	urlB := serveWeb(t, "127.0.0.1:0", webPlugin{store: store, pattern: "GET /web/hello"})

	res, err := http.Get(strings.TrimSuffix(urlA, "/mcp") + "/web/hello")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != "hello from web" {
		t.Errorf("plugin route: %d %q", res.StatusCode, body)
	}

	res, err = http.Post(urlA, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), `resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("no token: %d, WWW-Authenticate %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}

	rt := &bearer{token: webToken}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: urlA, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, target := range []string{urlA, urlB} {
		u, _ := url.Parse(target)
		rt.target.Store(&u.Host)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "web_whoami", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("whoami at %s: %v %+v", target, err, res)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != `{"principal":"alice"}` {
			t.Errorf("whoami at %s = %s", target, got)
		}
	}
}

// TestServePluginHTTPRefusals: two plugins' conflicting routes stop the
// start naming both (exit 3); a plugin's verifier is enough to listen
// beyond loopback.
func TestServePluginHTTPRefusals(t *testing.T) {
	var logs bytes.Buffer
	code := Serve(t.Context(), ServeParams{
		Options: mcpcore.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Instances: []mcpcore.Instance{
			{Name: "one", Plugin: webPlugin{pattern: "GET /same"}},
			{Name: "two", Plugin: mcpcore.Plugin(routeOnly{"GET /same"})},
		}},
		HTTPAddr: "127.0.0.1:0",
	})
	if code != ExitConfig || !strings.Contains(logs.String(), "plugin one") || !strings.Contains(logs.String(), "plugin two") {
		t.Errorf("conflicting routes: exit %d, logs %s", code, logs.String())
	}
	// Listening on every interface is refused without authentication
	// (TestServeRefuses) and accepted with the plugin's verifier.
	serveWeb(t, "0.0.0.0:0", webPlugin{pattern: "GET /web/hello"})
}

// routeOnly serves one route and nothing else.
type routeOnly struct{ pattern string }

func (p routeOnly) Attach(_ context.Context, h *mcpcore.Host) error {
	h.HandleHTTP(p.pattern, http.NotFoundHandler())
	return nil
}

func (routeOnly) Close(context.Context) error { return nil }
