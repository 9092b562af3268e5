package action_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action"
)

type signIn struct {
	Email    string `json:"email"`
	Password string `json:"password" action:"secret"`
}

// signInApp has a login action that accepts password "right" and signs
// the web session in as "user:"+email, and an action that tells who
// called it.
func signInApp(t *testing.T) *action.App {
	t.Helper()
	app := action.NewApp("signin", "")
	app.MustAdd(action.Action{Name: "session:create", Description: "sign in", Inputs: (*signIn)(nil), MCP: action.MCP{LoginAction: true},
		Web: &action.Web{Method: "PUT", Route: "/session"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			s := in.(*signIn)
			if s.Password != "right" {
				return nil, action.Errorf(action.KindUnauthorized, "wrong email address or password")
			}
			if c.Session != nil {
				return "ok", c.Session.SignIn(ctx, "user:"+s.Email)
			}
			return "ok", nil
		}})
	app.MustAdd(action.Action{Name: "who", Description: "the caller", Web: &action.Web{Method: "GET", Route: "/who"},
		Run: func(_ context.Context, c *action.Conn, _ any) (any, error) { return c.Principal, nil }})
	return app
}

// TestSignInLimit: failed runs of the login action count per account
// (whatever its case) and per address, whichever transport they come
// through; at the limit every attempt is refused before the action runs,
// the right password too, until the window slides on.
func TestSignInLimit(t *testing.T) {
	t.Parallel()
	app := signInApp(t)
	now := time.Unix(1_000_000, 0)
	if err := app.SetSignInLimit(action.SignInLimit{PerAccount: 3, PerAddress: 5, Window: time.Minute, Now: func() time.Time { return now }}); err != nil {
		t.Fatal(err)
	}
	try := func(c *action.Conn, email, pw string) error {
		_, err := app.Run(t.Context(), c, "session:create", json.RawMessage(`{"email":"`+email+`","password":"`+pw+`"}`))
		return err
	}
	kind := func(err error) action.Kind {
		if e, ok := errors.AsType[*action.Error](err); ok {
			return e.Kind
		}
		return ""
	}
	web := &action.Conn{Type: "web", Remote: "192.0.2.1:1000"}
	mcp := &action.Conn{Type: "mcp"} // no address: counted by account only
	for i, c := range []*action.Conn{web, mcp, web} {
		if err := try(c, "Ann@Example.com", "wrong"); kind(err) != action.KindUnauthorized {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	for _, c := range []*action.Conn{web, mcp} {
		if err := try(c, "ann@example.com ", "right"); kind(err) != action.KindRateLimited || !strings.Contains(err.Error(), "for this account") {
			t.Fatalf("the right password at the account's limit (%s): %v", c.Type, err)
		}
	}
	if err := try(&action.Conn{Type: "web", Remote: "192.0.2.1:2000"}, "bob@example.com", "wrong"); kind(err) != action.KindUnauthorized {
		t.Fatalf("another account: %v", err)
	}
	// The address has 3 failures (Ann's two over the web, Bob's): 5 with two more.
	for _, who := range []string{"carol@example.com", "erin@example.com"} {
		if err := try(web, who, "wrong"); kind(err) != action.KindUnauthorized {
			t.Fatal(err)
		}
	}
	if err := try(web, "dave@example.com", "right"); kind(err) != action.KindRateLimited || !strings.Contains(err.Error(), "from this address") {
		t.Fatalf("at the address's limit: %v", err)
	}
	if err := try(&action.Conn{Type: "web", Remote: "192.0.2.9:1"}, "dave@example.com", "right"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	now = now.Add(2 * time.Minute) // both windows over
	if err := try(web, "ann@example.com", "right"); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if err := app.SetSignInLimit(action.SignInLimit{PerAccount: -1}); err == nil {
		t.Error("a negative limit was accepted")
	}
}

// TestHTTPIdentifiesCaller: a request's principal is the one Identify
// finds in its credentials, else its signed-in session's; it is counted
// under the authenticated limit; an Identify error refuses the request,
// with a Bearer challenge when it carried a bearer token.
func TestHTTPIdentifiesCaller(t *testing.T) {
	t.Parallel()
	app := signInApp(t)
	srv := httptest.NewServer(app.HTTPHandler(action.HTTPOptions{
		Sessions:  &action.Sessions{Store: action.NewLocalSessionStore()},
		RateLimit: &action.RateLimit{Unauthenticated: 2, Authenticated: 100},
		Identify: func(r *http.Request) (string, error) {
			switch r.Header.Get("Authorization") {
			case "":
				return "", nil
			case "Bearer good":
				return "token-user", nil
			}
			return "", action.Errorf(action.KindUnauthorized, "bad token")
		},
	}))
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Transport: &http.Transport{}}
	t.Cleanup(browser.CloseIdleConnections)
	get := func(c *http.Client, auth string) (int, string, string) {
		req, _ := http.NewRequest("GET", srv.URL+"/api/who", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var who string
		_ = json.NewDecoder(resp.Body).Decode(&who)
		return resp.StatusCode, who, resp.Header.Get("X-RateLimit-Limit") + " " + resp.Header.Get("WWW-Authenticate")
	}
	req, _ := http.NewRequest("PUT", srv.URL+"/api/session", strings.NewReader(`{"email":"ann","password":"right"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	if code, _, _ := get(http.DefaultClient, ""); code != 200 {
		t.Fatalf("anonymous: %d", code)
	}
	if code, _, _ := get(http.DefaultClient, ""); code != http.StatusTooManyRequests {
		t.Fatalf("anonymous over the limit: %d", code)
	}
	if code, who, hdr := get(browser, ""); code != 200 || who != "user:ann" || !strings.HasPrefix(hdr, "100 ") {
		t.Errorf("signed-in session: %d %q %q", code, who, hdr)
	}
	if code, who, hdr := get(browser, "Bearer good"); code != 200 || who != "token-user" || !strings.HasPrefix(hdr, "100 ") {
		t.Errorf("bearer token over a session: %d %q %q", code, who, hdr)
	}
	if code, _, hdr := get(http.DefaultClient, "Bearer bad"); code != 401 || !strings.Contains(hdr, `Bearer error="invalid_token"`) {
		t.Errorf("bad bearer token: %d %q", code, hdr)
	}
}
