package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/oauth"
	"github.com/mcpkit/mcpkit/pkg/action/redisstate"
)

type signUpIn struct {
	Email    string `json:"email" jsonschema:"your email address"`
	Password string `json:"password" action:"secret" jsonschema:"a password"`
	Nick     string `json:"nick,omitempty"`
}

func (*signUpIn) AdjustSchema(s *jsonschema.Schema) error {
	lo, hi := 8, 64
	s.Properties["password"].MinLength, s.Properties["password"].MaxLength = &lo, &hi
	return nil
}

type signInIn struct {
	Email    string `json:"email"`
	Password string `json:"password" action:"secret"`
}

// testApp is an app whose users live in a map: user ids count from 1.
func testApp(t *testing.T) *action.App {
	t.Helper()
	var mu sync.Mutex
	users := map[string]string{} // email → password
	ids := map[string]int{}
	app := action.NewApp("testapp", "a test app")
	app.MustAdd(action.Action{Name: "user:create", Description: "sign up", Inputs: (*signUpIn)(nil), MCP: action.MCP{SignupAction: true},
		Run: func(_ context.Context, _ *action.Conn, in any) (any, error) {
			u := in.(*signUpIn)
			mu.Lock()
			defer mu.Unlock()
			if _, ok := users[u.Email]; ok {
				return nil, &action.Error{Kind: action.KindConflict, Message: "taken"}
			}
			users[u.Email], ids[u.Email] = u.Password, len(ids)+1
			return map[string]any{"user": map[string]any{"id": ids[u.Email]}}, nil
		}})
	app.MustAdd(action.Action{Name: "session:create", Description: "sign in", Inputs: (*signInIn)(nil), MCP: action.MCP{LoginAction: true},
		Run: func(_ context.Context, _ *action.Conn, in any) (any, error) {
			u := in.(*signInIn)
			mu.Lock()
			defer mu.Unlock()
			if p, ok := users[u.Email]; !ok || p != u.Password {
				return nil, &action.Error{Kind: action.KindUnauthorized, Message: "wrong email address or password"}
			}
			return map[string]any{"user": map[string]any{"id": ids[u.Email]}}, nil
		}})
	return app
}

// stores are the two Store implementations: each call of new makes a
// fresh store (the Redis ones on one disposable server per test).
var stores = []struct {
	name string
	new  func(t *testing.T) func() oauth.Store
}{
	{"memory", func(*testing.T) func() oauth.Store {
		return func() oauth.Store { return oauth.NewMemoryStore() }
	}},
	{"redis", func(t *testing.T) func() oauth.Store {
		srv := redistest.Start(t, redistest.Options{})
		return func() oauth.Store {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
			t.Cleanup(func() { _ = c.Close() })
			return redisstate.NewOAuthStore(c, "test:")
		}
	}},
}

// env is a running server and a browser-like client that does not
// follow redirects.
type env struct {
	t      *testing.T
	srv    *oauth.Server
	ts     *httptest.Server
	client *http.Client
}

func newEnv(t *testing.T, opts oauth.Options) *env {
	t.Helper()
	if opts.App == nil {
		opts.App = testApp(t)
	}
	s, err := oauth.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	return &env{t: t, srv: s, ts: ts, client: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (e *env) do(req *http.Request) (*http.Response, string) {
	e.t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (e *env) postJSON(path string, v any) (*http.Response, map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(v)
	req, _ := http.NewRequest("POST", e.ts.URL+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, body := e.do(req)
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	return resp, m
}

func (e *env) postForm(path string, form url.Values) (*http.Response, map[string]any) {
	e.t.Helper()
	resp, body := e.postFormRaw(path, form)
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	return resp, m
}

func (e *env) postFormRaw(path string, form url.Values) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return e.do(req)
}

func (e *env) get(path string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.ts.URL+path, nil)
	return e.do(req)
}

const redirect = "http://127.0.0.1:9/callback"

func (e *env) register(uris ...string) string {
	e.t.Helper()
	if len(uris) == 0 {
		uris = []string{redirect}
	}
	resp, m := e.postJSON("/oauth/register", map[string]any{"redirect_uris": uris, "client_name": "test client"})
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("register: %d %v", resp.StatusCode, m)
	}
	return m["client_id"].(string)
}

type pkce struct{ verifier, challenge string }

func newPKCE(seed string) pkce {
	v := strings.Repeat(seed, 64)[:64]
	s := sha256.Sum256([]byte(v))
	return pkce{v, base64.RawURLEncoding.EncodeToString(s[:])}
}

func authzQuery(client string, p pkce) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {p.challenge}, "code_challenge_method": {"S256"}}
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// page opens the authorize page and returns its hidden fields.
func (e *env) page(q url.Values) url.Values {
	e.t.Helper()
	resp, body := e.get("/oauth/authorize?" + q.Encode())
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("authorize page: %d %s", resp.StatusCode, body)
	}
	hidden := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(body, -1) {
		hidden.Set(m[1], strings.ReplaceAll(m[2], "&#34;", `"`))
	}
	return hidden
}

// authorize signs up (or in) on the page for q and returns the redirect.
func (e *env) authorize(q url.Values, mode, email string) *url.URL {
	e.t.Helper()
	form := e.page(q)
	form.Set("mode", mode)
	form.Set("email", email)
	form.Set("password", "correct horse")
	resp, body := e.postFormRaw("/oauth/authorize", form)
	if resp.StatusCode != http.StatusFound {
		e.t.Fatalf("authorize post: %d %s", resp.StatusCode, body)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

func (e *env) code(client string, p pkce, email string) string {
	e.t.Helper()
	u := e.authorize(authzQuery(client, p), "signup", email)
	if got := u.Query().Get("code"); got != "" {
		return got
	}
	e.t.Fatalf("no code in %s", u)
	return ""
}

func (e *env) exchange(client, code string, p pkce) (*http.Response, map[string]any) {
	e.t.Helper()
	return e.postForm("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {p.verifier}})
}

func (e *env) resource() string { return e.ts.URL + "/mcp" }

func TestFlow(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauth.Options{Store: st.new(t)()})
			// Metadata.
			_, body := e.get("/.well-known/oauth-authorization-server")
			var as map[string]any
			if err := json.Unmarshal([]byte(body), &as); err != nil {
				t.Fatal(err)
			}
			if as["issuer"] != e.ts.URL || as["token_endpoint"] != e.ts.URL+"/oauth/token" ||
				fmt.Sprint(as["code_challenge_methods_supported"]) != "[S256]" || as["authorization_response_iss_parameter_supported"] != true {
				t.Fatalf("server metadata: %v", as)
			}
			for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
				_, body = e.get(path)
				var pr map[string]any
				_ = json.Unmarshal([]byte(body), &pr)
				if pr["resource"] != e.resource() || fmt.Sprint(pr["authorization_servers"]) != "["+e.ts.URL+"]" {
					t.Fatalf("%s: %v", path, pr)
				}
			}
			client := e.register()
			p := newPKCE("a")
			u := e.authorize(authzQuery(client, p), "signup", "ann@example.com")
			if u.Query().Get("state") != "st-1" || u.Query().Get("iss") != e.ts.URL || u.Query().Get("code") == "" ||
				!strings.HasPrefix(u.String(), redirect+"?") {
				t.Fatalf("redirect %s", u)
			}
			resp, tok := e.exchange(client, u.Query().Get("code"), p)
			if resp.StatusCode != 200 || tok["token_type"] != "Bearer" || resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("token: %d %v", resp.StatusCode, tok)
			}
			g, err := e.srv.Verify(t.Context(), tok["access_token"].(string), e.resource())
			if err != nil || g.User != "1" || g.ClientID != client || fmt.Sprint(g.Scopes) != "[mcp]" {
				t.Fatalf("verify: %+v %v", g, err)
			}
			// Sign in as the same user from a second client.
			client2 := e.register()
			u = e.authorize(authzQuery(client2, p), "signin", "ann@example.com")
			_, tok2 := e.exchange(client2, u.Query().Get("code"), p)
			if g, err := e.srv.Verify(t.Context(), tok2["access_token"].(string), e.resource()); err != nil || g.User != "1" {
				t.Fatalf("sign-in grant: %+v %v", g, err)
			}
			// Rotation: the new refresh token works, the old access token stays valid until revoked.
			resp, rot := e.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {tok["refresh_token"].(string)}})
			if resp.StatusCode != 200 || rot["refresh_token"] == tok["refresh_token"] {
				t.Fatalf("refresh: %d %v", resp.StatusCode, rot)
			}
			if _, err := e.srv.Verify(t.Context(), rot["access_token"].(string), e.resource()); err != nil {
				t.Fatal(err)
			}
			// Revocation of an access token (RFC 7009: 200).
			resp, _ = e.postForm("/oauth/revoke", url.Values{"client_id": {client2}, "token": {tok2["access_token"].(string)}})
			if resp.StatusCode != 200 {
				t.Fatalf("revoke: %d", resp.StatusCode)
			}
			if _, err := e.srv.Verify(t.Context(), tok2["access_token"].(string), e.resource()); !errors.Is(err, oauth.ErrInvalidToken) {
				t.Fatalf("revoked token: %v", err)
			}
			resp, _ = e.postForm("/oauth/revoke", url.Values{"client_id": {client2}, "token": {"never-issued"}})
			if resp.StatusCode != 200 {
				t.Fatalf("revoke unknown: %d", resp.StatusCode)
			}
		})
	}
}

// TestRefusals covers every refusal of the issue on both stores.
func TestRefusals(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			newStore := st.new(t)
			e := newEnv(t, oauth.Options{Store: newStore()})
			client := e.register()
			p := newPKCE("b")

			t.Run("code replay", func(t *testing.T) {
				code := e.code(client, p, "replay@example.com")
				resp, tok := e.exchange(client, code, p)
				if resp.StatusCode != 200 {
					t.Fatal(resp.Status)
				}
				resp, m := e.exchange(client, code, p)
				if resp.StatusCode != 400 || m["error"] != "invalid_grant" || !strings.Contains(fmt.Sprint(m["error_description"]), "revoked") {
					t.Fatalf("replayed code: %d %v", resp.StatusCode, m)
				}
				// The replay revokes what the first exchange issued (OAuth
				// 2.1 4.1.3): its access token, and its refresh token.
				if _, err := e.srv.Verify(t.Context(), tok["access_token"].(string), e.resource()); !errors.Is(err, oauth.ErrInvalidToken) {
					t.Fatalf("access token of a replayed code: %v", err)
				}
				resp, m = e.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {tok["refresh_token"].(string)}})
				if resp.StatusCode != 400 || m["error"] != "invalid_grant" {
					t.Fatalf("refresh token of a replayed code: %d %v", resp.StatusCode, m)
				}
				// A third try is refused too.
				if resp, m := e.exchange(client, code, p); resp.StatusCode != 400 || m["error"] != "invalid_grant" {
					t.Fatalf("code tried a third time: %d %v", resp.StatusCode, m)
				}
			})
			t.Run("PKCE mismatch", func(t *testing.T) {
				code := e.code(client, p, "pkce@example.com")
				resp, m := e.exchange(client, code, newPKCE("c"))
				if resp.StatusCode != 400 || m["error"] != "invalid_grant" || !strings.Contains(m["error_description"].(string), "code_verifier") {
					t.Fatalf("%d %v", resp.StatusCode, m)
				}
				// The code is spent even so.
				if resp, _ := e.exchange(client, code, p); resp.StatusCode != 400 {
					t.Fatalf("code after a failed exchange: %d", resp.StatusCode)
				}
			})
			t.Run("plain PKCE", func(t *testing.T) {
				q := authzQuery(client, p)
				q.Set("code_challenge_method", "plain")
				q.Set("code_challenge", p.verifier)
				resp, _ := e.get("/oauth/authorize?" + q.Encode())
				loc, _ := url.Parse(resp.Header.Get("Location"))
				if resp.StatusCode != http.StatusFound || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("state") != "st-1" ||
					loc.Query().Get("iss") != e.ts.URL {
					t.Fatalf("%d %s", resp.StatusCode, loc)
				}
			})
			t.Run("wrong redirect at the token endpoint", func(t *testing.T) {
				code := e.code(client, p, "redir@example.com")
				resp, m := e.postForm("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {code},
					"redirect_uri": {redirect + "/other"}, "code_verifier": {p.verifier}})
				if resp.StatusCode != 400 || m["error"] != "invalid_grant" {
					t.Fatalf("%d %v", resp.StatusCode, m)
				}
			})
			t.Run("unregistered redirect renders a page", func(t *testing.T) {
				for _, uri := range []string{"https://evil.example/cb", redirect + "/x", redirect + "?a=1"} {
					q := authzQuery(client, p)
					q.Set("redirect_uri", uri)
					q.Set("code_challenge_method", "plain") // an error that would redirect, were the URI good
					resp, body := e.get("/oauth/authorize?" + q.Encode())
					if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || !strings.Contains(body, "not one the client registered") {
						t.Fatalf("%s: %d %q", uri, resp.StatusCode, resp.Header.Get("Location"))
					}
				}
				q := authzQuery("no-such-client", p)
				if resp, _ := e.get("/oauth/authorize?" + q.Encode()); resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
					t.Fatalf("unknown client: %d", resp.StatusCode)
				}
			})
			t.Run("token for another resource", func(t *testing.T) {
				code := e.code(client, p, "res@example.com")
				_, tok := e.exchange(client, code, p)
				if _, err := e.srv.Verify(t.Context(), tok["access_token"].(string), "http://other.example/mcp"); !errors.Is(err, oauth.ErrInvalidToken) {
					t.Fatalf("verify for another resource: %v", err)
				}
				q := authzQuery(client, p)
				q.Set("resource", "http://other.example/mcp")
				resp, _ := e.get("/oauth/authorize?" + q.Encode())
				loc, _ := url.Parse(resp.Header.Get("Location"))
				if loc.Query().Get("error") != "invalid_target" {
					t.Fatalf("authorize for another resource: %s", loc)
				}
			})
			t.Run("rotated refresh token reused revokes the family", func(t *testing.T) {
				code := e.code(client, p, "family@example.com")
				_, tok := e.exchange(client, code, p)
				old := tok["refresh_token"].(string)
				_, rot := e.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {old}})
				if rot["access_token"] == nil {
					t.Fatalf("rotation: %v", rot)
				}
				resp, m := e.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {old}})
				if resp.StatusCode != 400 || m["error"] != "invalid_grant" || !strings.Contains(m["error_description"].(string), "family") {
					t.Fatalf("reuse: %d %v", resp.StatusCode, m)
				}
				for _, a := range []any{tok["access_token"], rot["access_token"]} {
					if _, err := e.srv.Verify(t.Context(), a.(string), e.resource()); !errors.Is(err, oauth.ErrInvalidToken) {
						t.Fatalf("access token of a revoked family: %v", err)
					}
				}
				resp, m = e.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {rot["refresh_token"].(string)}})
				if resp.StatusCode != 400 || m["error"] != "invalid_grant" {
					t.Fatalf("new refresh token of a revoked family: %d %v", resp.StatusCode, m)
				}
			})
			t.Run("CSRF token missing or wrong", func(t *testing.T) {
				form := e.page(authzQuery(client, p))
				form.Set("mode", "signup")
				form.Set("email", "csrf@example.com")
				form.Set("password", "correct horse")
				for _, bad := range []string{"", "forged"} {
					form.Set("csrf_token", bad)
					resp, body := e.postFormRaw("/oauth/authorize", form)
					if resp.StatusCode != 403 || resp.Header.Get("Location") != "" || !strings.Contains(body, "security token") {
						t.Fatalf("csrf %q: %d", bad, resp.StatusCode)
					}
				}
			})
			t.Run("wrong password", func(t *testing.T) {
				form := e.page(authzQuery(client, p))
				form.Set("mode", "signin")
				form.Set("email", "replay@example.com")
				form.Set("password", "wrong password")
				resp, body := e.postFormRaw("/oauth/authorize", form)
				if resp.StatusCode != 401 || !strings.Contains(body, "wrong email address or password") || resp.Header.Get("Location") != "" {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
			})
			t.Run("unknown client at the token endpoint", func(t *testing.T) {
				resp, m := e.exchange("nobody", "x", p)
				if resp.StatusCode != 401 || m["error"] != "invalid_client" {
					t.Fatalf("%d %v", resp.StatusCode, m)
				}
			})
			t.Run("expired code", func(t *testing.T) {
				short := newEnv(t, oauth.Options{Store: newStore(), CodeTTL: 200 * time.Millisecond})
				c := short.register()
				code := short.code(c, p, "late@example.com")
				time.Sleep(300 * time.Millisecond)
				resp, m := short.exchange(c, code, p)
				if resp.StatusCode != 400 || m["error"] != "invalid_grant" {
					t.Fatalf("%d %v", resp.StatusCode, m)
				}
			})
			t.Run("expired registration", func(t *testing.T) {
				short := newEnv(t, oauth.Options{Store: newStore(), ClientTTL: 200 * time.Millisecond})
				c := short.register()
				time.Sleep(300 * time.Millisecond)
				resp, body := short.get("/oauth/authorize?" + authzQuery(c, p).Encode())
				if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || !strings.Contains(body, "expired") {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
			})
			t.Run("refresh token of another client", func(t *testing.T) {
				other := e.register()
				_, tok := e.exchange(client, e.code(client, p, "thief@example.com"), p)
				refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {other}, "refresh_token": {tok["refresh_token"].(string)}}
				if resp, m := e.postForm("/oauth/token", refresh); resp.StatusCode != 400 || m["error"] != "invalid_grant" {
					t.Fatalf("%d %v", resp.StatusCode, m)
				}
				refresh.Set("client_id", client) // still the owner's
				if resp, m := e.postForm("/oauth/token", refresh); resp.StatusCode != 200 {
					t.Fatalf("owner after a foreign attempt: %d %v", resp.StatusCode, m)
				}
			})
			t.Run("revoking a refresh token revokes its family", func(t *testing.T) {
				_, tok := e.exchange(client, e.code(client, p, "revoke@example.com"), p)
				if resp, _ := e.postForm("/oauth/revoke", url.Values{"client_id": {client}, "token": {tok["refresh_token"].(string)}}); resp.StatusCode != 200 {
					t.Fatal(resp.Status)
				}
				if _, err := e.srv.Verify(t.Context(), tok["access_token"].(string), e.resource()); !errors.Is(err, oauth.ErrInvalidToken) {
					t.Fatalf("access token after its refresh token was revoked: %v", err)
				}
			})
			t.Run("registration rate limit", func(t *testing.T) {
				lim := newEnv(t, oauth.Options{Store: newStore(), RegisterLimit: 2})
				lim.register()
				lim.register()
				resp, m := lim.postJSON("/oauth/register", map[string]any{"redirect_uris": []string{redirect}})
				if resp.StatusCode != 429 || m["error"] != "rate_limited" || resp.Header.Get("Retry-After") == "" {
					t.Fatalf("%d %v", resp.StatusCode, m)
				}
			})
		})
	}
}

// TestSharedStore: a token one instance issued is verified by another
// sharing the Redis. That instance, watching revocations, caches what it
// verified (a record deleted behind its back is still accepted), yet a
// token revoked through the first instance is refused by it as soon as
// the revocation is answered; so is it by an instance not watching, which
// caches nothing.
func TestSharedStore(t *testing.T) {
	t.Parallel()
	newStore := stores[1].new(t)
	a := newEnv(t, oauth.Options{Store: newStore()})
	other := func() (*oauth.Server, oauth.Store) {
		st := newStore()
		s, err := oauth.New(oauth.Options{App: testApp(t), Store: st, Issuer: a.ts.URL, VerifyCache: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return s, st
	}
	b, bStore := other()
	watch(t, b)
	unwatched, _ := other()
	client := a.register()
	token := func(email string) string {
		p := newPKCE(strings.NewReplacer("@", "", ".", "").Replace(email)) // verifier characters only
		_, tok := a.exchange(client, a.code(client, p, email), p)
		return tok["access_token"].(string)
	}
	verifies := func(s *oauth.Server, access string) bool {
		g, err := s.Verify(t.Context(), access, a.resource())
		if err != nil && !errors.Is(err, oauth.ErrInvalidToken) {
			t.Fatal(err)
		}
		return err == nil && g.User != ""
	}

	// Once b's watch listens, b trusts what it verified without the store.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		access := token(fmt.Sprintf("cache%d@example.com", i))
		if !verifies(b, access) {
			t.Fatal("b refuses a valid token")
		}
		sum := sha256.Sum256([]byte(access))
		if err := bStore.Delete(t.Context(), "access:"+hex.EncodeToString(sum[:])); err != nil {
			t.Fatal(err)
		}
		if verifies(b, access) {
			break // cached
		}
		if time.Now().After(deadline) {
			t.Fatal("b never caches a verified token: its revocation watch does not listen")
		}
		time.Sleep(20 * time.Millisecond)
	}

	access := token("shared@example.com")
	for name, s := range map[string]*oauth.Server{"a": a.srv, "b": b, "unwatched": unwatched} {
		if !verifies(s, access) {
			t.Fatalf("%s refuses a valid token", name)
		}
	}
	if resp, _ := a.postForm("/oauth/revoke", url.Values{"client_id": {client}, "token": {access}}); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	for name, s := range map[string]*oauth.Server{"the revoking instance": a.srv, "the watching instance": b, "the unwatched instance": unwatched} {
		if verifies(s, access) {
			t.Errorf("%s accepts a token revoked on another instance", name)
		}
	}
}

// watch runs s.WatchRevocations until the test ends.
func watch(t *testing.T, s *oauth.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.WatchRevocations(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchRevocations: %v", err)
		}
	})
}

func TestRedirectURIRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauth.Options{RegisterLimit: 100})
	for uri, ok := range map[string]bool{
		"https://app.example/cb":         true,
		"http://localhost:3000/cb":       true,
		"http://127.0.0.1/cb":            true,
		"http://[::1]:8080/cb":           true,
		"com.example.app:/oauth":         true,
		"http://app.example/cb":          false,
		"https://app.example/cb#frag":    false,
		"https://user:pw@app.example/cb": false,
		"javascript:alert(1)":            false,
		"data:text/html,hi":              false,
		"file:///etc/passwd":             false,
		"/relative":                      false,
		// Remote schemes other than https, and custom schemes that are
		// not a native app's reverse-domain one (RFC 8252 7.1).
		"ftp://evil.example/cb":            false,
		"ws://evil.example/cb":             false,
		"wss://evil.example/cb":            false,
		"myapp://cb":                       false,
		"vbscript:msgbox":                  false,
		"http://127.0.0.2:8080/cb":         true,
		"http://localhost.evil.example/cb": false,
		"http://[::2]/cb":                  false,
	} {
		resp, m := e.postJSON("/oauth/register", map[string]any{"redirect_uris": []string{uri}})
		if got := resp.StatusCode == 201; got != ok {
			t.Errorf("%s: %d %v", uri, resp.StatusCode, m)
		} else if !ok && m["error"] != "invalid_redirect_uri" {
			t.Errorf("%s: %v", uri, m)
		}
	}
}

func TestAuthorizePage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauth.Options{})
	client := e.register()
	resp, body := e.get("/oauth/authorize?" + authzQuery(client, newPKCE("e")).Encode())
	csp := resp.Header.Get("Content-Security-Policy")
	// Referrer-Policy no-referrer would make browsers post the form with
	// "Origin: null", which the core's origin check refuses.
	if !strings.Contains(csp, "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" ||
		resp.Header.Get("Referrer-Policy") != "same-origin" {
		t.Fatalf("headers: %v", resp.Header)
	}
	for _, want := range []string{
		`<label for="signup-email">Your email address</label>`,
		`<input id="signup-email" name="email" type="email" required autocomplete="email">`,
		`<input id="signup-password" name="password" type="password" required autocomplete="new-password" minlength="8" maxlength="64">`,
		`<input id="signup-nick" name="nick" type="text">`,
		`<label for="signup-nick">Nick</label>`,
		`<input id="signin-password" name="password" type="password" required autocomplete="current-password">`,
		`name="csrf_token"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	var csrf string
	for _, c := range resp.Cookies() {
		if c.Name == "mcpkit_oauth_csrf" {
			csrf = c.Value
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("cookie %+v", c)
			}
		}
	}
	if csrf == "" || !strings.Contains(body, `name="csrf_token" value="`+csrf+`"`) {
		t.Fatalf("csrf cookie %q not in the form", csrf)
	}
	if resp, _ := e.get("/oauth/assets/oauth-common.css"); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("css: %d", resp.StatusCode)
	}
}

// CORS: an allowed origin is echoed with credentials, "*" answers any
// origin without them, and another origin gets no CORS headers.
func TestCORS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		allowed            []string
		origin, want, cred string
	}{
		{[]string{"https://app.example"}, "https://app.example", "https://app.example", "true"},
		{[]string{"*"}, "https://any.example", "*", ""},
		{[]string{"https://app.example"}, "https://evil.example", "", ""},
	} {
		e := newEnv(t, oauth.Options{AllowedOrigins: tc.allowed})
		req, _ := http.NewRequest("OPTIONS", e.ts.URL+"/oauth/token", nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, _ := e.do(req)
		h := resp.Header
		if h.Get("Access-Control-Allow-Origin") != tc.want || h.Get("Access-Control-Allow-Credentials") != tc.cred ||
			(tc.want != "") != strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
			t.Errorf("allowed %v, origin %s: %v", tc.allowed, tc.origin, h)
		}
	}
}
