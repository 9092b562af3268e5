package actions

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/httpserve"
	"github.com/mcpkit/mcpkit/plugins/actions/exampleapp"
)

// oauthWeb serves the example app (cheap bcrypt) with the plugin
// configuration cfg (JSON, "%s" replaced by the server's own URL) over
// HTTP in process, exactly as `mcpkit serve` mounts it, and returns the
// server's URL. tokens are the core's static bearer tokens.
func oauthWeb(t testing.TB, cfg string, tokens ...string) string {
	t.Helper()
	return webWithOrigins(t, cfg, nil, tokens...)
}

// webWithOrigins is oauthWeb with origins as the configuration's
// http.allowed_origins, which the plugin and the core both follow.
func webWithOrigins(t testing.TB, cfg string, origins []string, tokens ...string) string {
	t.Helper()
	web := httptest.NewUnstartedServer(nil)
	base := "http://" + web.Listener.Addr().String()
	p := New(func(_ context.Context, c Config, ps action.PubSub) (*action.App, io.Closer, error) {
		opts := exampleapp.Options{BcryptCost: 4}
		if c.oauthOn() {
			opts.PrincipalPrefix = OAuthPrincipalPrefix
		}
		ex, err := exampleapp.Open("", ps, opts)
		if err != nil {
			return nil, nil, err
		}
		return ex.App(), ex, nil
	})
	c := mcpcore.DefaultConfig()
	c.Plugins = map[string]mcpcore.PluginConfig{"actions": {Prefix: new(""), Config: json.RawMessage(strings.ReplaceAll(cfg, "%s", base))}}
	c.HTTP.AllowedOrigins = origins
	srv, err := mcpcore.NewServer(t.Context(), mcpcore.Options{Config: c, Instances: []mcpcore.Instance{{Name: "actions", Plugin: p}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	contrib := srv.HTTP()
	var routes []httpserve.Route
	for _, r := range contrib.Routes {
		routes = append(routes, httpserve.Route{Pattern: r.Pattern, Handler: r.Handler, Owner: r.Plugin})
	}
	h, err := httpserve.NewHandler(httpserve.Options{Server: srv.MCP(), BearerTokens: tokens, Verifier: contrib.Verifier, AllowedOrigins: origins,
		ResourceMetadataURL: contrib.ResourceMetadataURL, SessionStore: contrib.SessionStore, Routes: routes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	web.Config.Handler = h
	web.Start()
	t.Cleanup(web.Close)
	return base
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// registerClient registers a client with redirect at base and returns
// its id.
func registerClient(t testing.TB, base, redirect string) string {
	t.Helper()
	resp, err := http.Post(base+"/oauth/register", "application/json", strings.NewReader(`{"redirect_uris":["`+redirect+`"],"client_name":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %v", resp.StatusCode, err)
	}
	return reg.ClientID
}

// oauthToken registers a client at base, signs up (or in) as email on the
// authorize page, and exchanges the code with golang.org/x/oauth2 (PKCE).
func oauthToken(t testing.TB, base, mode, email string) *oauth2.Token {
	t.Helper()
	const redirect = "http://127.0.0.1:1/callback"
	conf := &oauth2.Config{ClientID: registerClient(t, base, redirect), RedirectURL: redirect, Scopes: []string{"mcp"},
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth/authorize", TokenURL: base + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(conf.AuthCodeURL("xyz", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", base+"/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], m[2])
	}
	for k, v := range map[string]string{"mode": mode, "email": email, "password": "correct horse", "name": "Ann"} {
		form.Set(k, v)
	}
	resp, err = browser.PostForm(base+"/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Query().Get("state") != "xyz" || loc.Query().Get("iss") != base {
		t.Fatalf("authorize (%s): %d %s", mode, resp.StatusCode, loc)
	}
	tok, err := conf.Exchange(t.Context(), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// connectBearer connects a legacy MCP client to base/mcp with a token.
func connectBearer(t testing.TB, base, token string) (*mcp.ClientSession, error) {
	hc := oauth2.NewClient(t.Context(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"}))
	return mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

func TestOAuthProtectsMCP(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) string
	}{
		{"memory", func(*testing.T) string { return `{"oauth": {"issuer": "%s"}}` }},
		{"redis", func(t *testing.T) string {
			r := redistest.Start(t, redistest.Options{})
			return `{"oauth": {"issuer": "%s"}, "redis": {"addr": "` + r.Addr + `"}}`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := oauthWeb(t, tc.cfg(t))
			resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := `resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`; resp.StatusCode != 401 ||
				!strings.Contains(resp.Header.Get("WWW-Authenticate"), want) {
				t.Fatalf("unauthenticated /mcp: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			if _, err := connectBearer(t, base, "not-a-token"); err == nil {
				t.Fatal("a made-up token connected")
			}
			tok := oauthToken(t, base, "signup", "ann@example.com")
			cs, err := connectBearer(t, base, tok.AccessToken)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			// The app sees the OAuth user as the caller: the author is the user's name.
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "message-post", Arguments: map[string]any{"channel": "c", "text": "hi"}})
			if err != nil || res.IsError {
				t.Fatalf("message-post: %v %+v", err, res)
			}
			var msg exampleapp.Message
			if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &msg); err != nil || msg.Author != "Ann" || msg.UserID == 0 {
				t.Fatalf("posted as %+v (%v)", msg, err)
			}
			// Signing in again from a new client is the same user.
			tok2 := oauthToken(t, base, "signin", "ann@example.com")
			cs2, err := connectBearer(t, base, tok2.AccessToken)
			if err != nil {
				t.Fatal(err)
			}
			defer cs2.Close()
			res, _ = cs2.CallTool(t.Context(), &mcp.CallToolParams{Name: "message-post", Arguments: map[string]any{"channel": "c", "text": "again"}})
			var msg2 exampleapp.Message
			_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &msg2)
			if msg2.UserID != msg.UserID {
				t.Fatalf("second sign-in is user %d, the first %d", msg2.UserID, msg.UserID)
			}
		})
	}
}

func TestOAuthConfig(t *testing.T) {
	env := map[string]string{EnvOAuthCodeTTL: "60", EnvOAuthRegisterLimit: "9", EnvOAuthRegisterWindow: "1000", EnvAllowedOrigins: "https://a.example, https://b.example"}
	c, err := (Config{OAuth: &OAuthConfig{ClientTTLSeconds: 5}}).resolve(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	// MCP_ALLOWED_ORIGINS is the listener's one origin policy
	// (http.allowed_origins under `mcpkit actions start`), not the OAuth
	// server's own.
	if o := c.OAuth; o.CodeTTLSeconds != 60 || o.ClientTTLSeconds != 5 || o.RegisterLimit != 9 || o.RegisterWindowMS != 1000 ||
		len(o.AllowedOrigins) != 0 {
		t.Fatalf("resolved %+v", o)
	}
	for _, tc := range []struct{ cfg, env, field string }{
		{`{"oauth": {}, "mcp_enabled": false}`, "", "oauth"},
		{`{"oauth": true, "mcp_enabled": false}`, "", "oauth"},
		{`{"oauth": {"allowed_origins": ["https://a.example"]}}`, "", "oauth.allowed_origins"},
		{`{"oauth": "yes"}`, "", "oauth"},
		{`{"oauth": {"nope": 1}}`, "", "oauth"},
		{`{"oauth": {"code_ttl_seconds": -1}}`, "", "oauth.code_ttl_seconds"},
		{`{"oauth": {}}`, "x", EnvOAuthCodeTTL},
		{`{"oauth": {"issuer": "ftp://x"}}`, "", ""},
	} {
		p := New(OpenExample)
		err := p.Configure([]byte(tc.cfg))
		if tc.field == "" {
			// An issuer is checked when the server starts.
			c := mcpcore.DefaultConfig()
			c.Plugins = map[string]mcpcore.PluginConfig{"actions": {Config: json.RawMessage(tc.cfg)}}
			_, err = mcpcore.NewServer(t.Context(), mcpcore.Options{Config: c, Instances: []mcpcore.Instance{{Name: "actions", Plugin: New(OpenExample)}}})
			if err == nil || !strings.Contains(err.Error(), "issuer") {
				t.Errorf("%s: %v", tc.cfg, err)
			}
			continue
		}
		if tc.env != "" {
			var cfg Config
			_ = json.Unmarshal([]byte(tc.cfg), &cfg)
			_, err = cfg.resolve(func(k string) string {
				if k == EnvOAuthCodeTTL {
					return tc.env
				}
				return ""
			})
		}
		var ce *mcpcore.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s (env %q): %v", tc.cfg, tc.env, err)
		}
	}
}

// TestOAuthChallengeOrigin: without an issuer, /mcp's 401 names the
// protected-resource metadata on the origin the client used (either
// loopback name), and that document names the same origin's resource and
// authorization server, so a client can follow it.
func TestOAuthChallengeOrigin(t *testing.T) {
	base := oauthWeb(t, `{"oauth": {}}`)
	_, port, _ := strings.Cut(strings.TrimPrefix(base, "http://"), ":")
	for _, origin := range []string{base, "http://localhost:" + port} {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{}`))
		req.Host = strings.TrimPrefix(origin, "http://")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		metadata := origin + "/.well-known/oauth-protected-resource/mcp"
		if want := `Bearer resource_metadata="` + metadata + `"`; resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
			t.Fatalf("%s: %d %q, want 401 %q", origin, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
		}
		req, _ = http.NewRequest(http.MethodGet, base+"/.well-known/oauth-protected-resource/mcp", nil)
		req.Host = strings.TrimPrefix(origin, "http://")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var prm struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(resp.Body).Decode(&prm)
		resp.Body.Close()
		if err != nil || prm.Resource != origin+"/mcp" || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != origin {
			t.Fatalf("%s: metadata %+v (%v)", origin, prm, err)
		}
	}
}

// asHost sends every request with Host host: two instances behind one
// origin, as a load balancer shows them.
type asHost struct {
	host string
	next http.RoundTripper
}

func (h asHost) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return h.next.RoundTrip(r)
}

// TestOAuthRevocationAcrossInstances: two instances share Redis (and, to
// the client, one origin) with a minute of verification cache; a token
// revoked on A is refused by B on the very next call, though B has just
// verified it.
func TestOAuthRevocationAcrossInstances(t *testing.T) {
	r := redistest.Start(t, redistest.Options{})
	cfg := `{"oauth": {"verify_cache_ms": 60000}, "redis": {"addr": "` + r.Addr + `"}}`
	a, b := oauthWeb(t, cfg), oauthWeb(t, cfg)
	tok := oauthToken(t, a, "signup", "rev@example.com")
	hc := &http.Client{Transport: &oauth2.Transport{Source: oauth2.StaticTokenSource(tok),
		Base: asHost{host: strings.TrimPrefix(a, "http://"), next: http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: b + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for range 3 {
		if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "status"}); err != nil || res.IsError {
			t.Fatalf("status on B: %v %+v", err, res)
		}
	}
	resp, err := http.PostForm(a+"/oauth/revoke", url.Values{"token": {tok.AccessToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke on A: %s", resp.Status)
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "status"}); err == nil {
		t.Fatalf("B served a token revoked on A: %+v", res)
	}
}
