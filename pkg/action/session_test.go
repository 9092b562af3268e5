package action_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/mcpkit/mcpkit/pkg/action"
)

// sessionKV is the inputs of the session test actions.
type sessionKV struct {
	Key   string `json:"key"`
	Value any    `json:"value,omitempty"`
}

// sessionServer serves an app whose actions read, set and destroy the
// caller's session, over HTTP at /api and WebSocket at /ws, both with
// sessions in store (nil: a new LocalSessionStore) under opts.
func sessionServer(t *testing.T, tlsServer bool, opts action.Sessions, origins ...string) (*httptest.Server, *action.Sessions) {
	t.Helper()
	if opts.Store == nil {
		opts.Store = action.NewLocalSessionStore()
	}
	app, _ := testApp(t)
	app.MustAdd(action.Action{
		Name: "session:get", Description: "a session value", Inputs: (*sessionKV)(nil),
		Web: &action.Web{Method: "GET", Route: "/session/:key"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			if c.Session == nil {
				return nil, action.Errorf(action.KindNotFound, "no session on a %s connection", c.Type)
			}
			var v any
			_, err := c.Session.Get(in.(*sessionKV).Key, &v)
			return v, err
		},
	})
	app.MustAdd(action.Action{
		Name: "session:set", Description: "sets a session value", Inputs: (*sessionKV)(nil),
		Web: &action.Web{Method: "POST", Route: "/session"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			kv := in.(*sessionKV)
			if kv.Value == nil {
				return "deleted", c.Session.Delete(ctx, kv.Key)
			}
			return "set", c.Session.Set(ctx, kv.Key, kv.Value)
		},
	})
	app.MustAdd(action.Action{
		Name: "session:destroy", Description: "ends the session",
		Web: &action.Web{Method: "DELETE", Route: "/session"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			return "destroyed", c.Session.Destroy(ctx)
		},
	})
	mux := http.NewServeMux()
	mux.Handle("/api/", app.HTTPHandler(action.HTTPOptions{Sessions: &opts, AllowedOrigins: origins}))
	mux.Handle("/ws", app.WebSocketHandler(action.WebSocketOptions{Sessions: &opts, AllowedOrigins: origins}))
	srv := httptest.NewUnstartedServer(mux)
	if tlsServer {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &opts
}

// sessionDo sends a request with the cookie (if any) and returns the
// status, the decoded JSON body and the one Set-Cookie header ("" for
// none).
func sessionDo(t *testing.T, srv *httptest.Server, method, path, body, cookie string) (int, any, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if cookie != "" {
		req.Header.Set("Cookie", "mcpkit_session="+cookie)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s: body: %v", method, path, err)
	}
	set := resp.Header.Values("Set-Cookie")
	switch len(set) {
	case 0:
		return resp.StatusCode, v, ""
	case 1:
		return resp.StatusCode, v, set[0]
	}
	t.Fatalf("%s %s: %d Set-Cookie headers %q", method, path, len(set), set)
	return 0, nil, ""
}

// cookieID returns the session id a Set-Cookie header sets, checking its
// attributes: HttpOnly, SameSite=Lax, Path=/, Max-Age the TTL, Secure
// exactly when secure.
func cookieID(t *testing.T, setCookie string, ttl time.Duration, secure bool) string {
	t.Helper()
	want := fmt.Sprintf(`^mcpkit_session=([0-9a-f]{32}); Path=/; Max-Age=%d; HttpOnly;%s SameSite=Lax$`, int(ttl/time.Second), map[bool]string{true: " Secure;"}[secure])
	m := regexp.MustCompile(want).FindStringSubmatch(setCookie)
	if m == nil {
		t.Fatalf("Set-Cookie %q: want %s", setCookie, want)
	}
	return m[1]
}

// The session lifecycle over HTTP: none until an action sets a value, then
// a cookie (HttpOnly, SameSite=Lax) that each use extends; an id the
// client made up is never adopted; Destroy deletes it and clears the
// cookie; a session over its limit is refused and left as it was.
func TestHTTPSessions(t *testing.T) {
	t.Parallel()
	store := action.NewLocalSessionStore()
	srv, _ := sessionServer(t, false, action.Sessions{Store: store, TTL: time.Hour, MaxBytes: 200})
	code, v, set := sessionDo(t, srv, "GET", "/api/session/user", "", "")
	if code != 200 || v != nil || set != "" {
		t.Fatalf("read without a session: %d %v, Set-Cookie %q", code, v, set)
	}
	code, _, set = sessionDo(t, srv, "POST", "/api/session", `{"key":"user","value":"ann"}`, "")
	if code != 200 {
		t.Fatalf("set: %d", code)
	}
	id := cookieID(t, set, time.Hour, false)
	code, v, set = sessionDo(t, srv, "GET", "/api/session/user", "", id)
	if code != 200 || v != "ann" || cookieID(t, set, time.Hour, false) != id {
		t.Fatalf("read in the session: %d %v, Set-Cookie %q", code, v, set)
	}
	forged := strings.Repeat("ab", 16)
	if _, v, set := sessionDo(t, srv, "GET", "/api/session/user", "", forged); v != nil || set != "mcpkit_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax" {
		t.Fatalf("read with an unknown id: %v, Set-Cookie %q (want the cookie cleared)", v, set)
	}
	_, _, set = sessionDo(t, srv, "POST", "/api/session", `{"key":"user","value":"eve"}`, forged)
	if got := cookieID(t, set, time.Hour, false); got == forged || got == id {
		t.Fatalf("a session started with an unknown id in the cookie got id %s", got)
	}
	code, v, _ = sessionDo(t, srv, "POST", "/api/session", `{"key":"big","value":"`+strings.Repeat("x", 200)+`"}`, id)
	if e, _ := v.(map[string]any)["error"].(map[string]any); code != http.StatusRequestEntityTooLarge || e["kind"] != "too_large" {
		t.Fatalf("an oversized session: %d %v", code, v)
	}
	if _, v, _ := sessionDo(t, srv, "GET", "/api/session/user", "", id); v != "ann" {
		t.Fatalf("after the refused set, user is %v", v)
	}
	if _, v, set := sessionDo(t, srv, "DELETE", "/api/session", "", id); v != "destroyed" || !strings.Contains(set, "Max-Age=0") {
		t.Fatalf("destroy: %v, Set-Cookie %q (want the cookie cleared)", v, set)
	}
	if _, v, _ := sessionDo(t, srv, "GET", "/api/session/user", "", id); v != nil {
		t.Fatalf("after Destroy, user is %v", v)
	}
	if n := store.Len(); n != 1 { // eve's
		t.Fatalf("the store holds %d sessions, want 1", n)
	}
}

// Over TLS the cookie is Secure.
func TestHTTPSessionCookieSecureOverTLS(t *testing.T) {
	t.Parallel()
	srv, _ := sessionServer(t, true, action.Sessions{})
	_, _, set := sessionDo(t, srv, "POST", "/api/session", `{"key":"k","value":1}`, "")
	cookieID(t, set, action.DefaultSessionTTL, true)
}

// A WebSocket opened with a session's cookie shares the session with
// HTTP, both ways; one opened without gets a cookie on the upgrade, and
// what it sets is then the HTTP session of that cookie.
func TestWebSocketSession(t *testing.T) {
	t.Parallel()
	srv, _ := sessionServer(t, false, action.Sessions{CookieName: "mcpkit_session"})
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	_, _, set := sessionDo(t, srv, "POST", "/api/session", `{"key":"user","value":"ann"}`, "")
	id := cookieID(t, set, action.DefaultSessionTTL, false)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {"mcpkit_session=" + id}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	if got := cookieID(t, resp.Header.Get("Set-Cookie"), action.DefaultSessionTTL, false); got != id {
		t.Fatalf("the upgrade set session %s, want the cookie's %s", got, id)
	}
	if m := wsCall(t, c, `{"messageType":"action","action":"session:get","params":{"key":"user"},"messageId":1}`); m["response"] != "ann" {
		t.Fatalf("the WebSocket's session: %v", m)
	}
	wsCall(t, c, `{"messageType":"action","action":"session:set","params":{"key":"room","value":"lobby"},"messageId":2}`)
	if _, v, _ := sessionDo(t, srv, "GET", "/api/session/room", "", id); v != "lobby" {
		t.Fatalf("HTTP sees room %v, set over the WebSocket", v)
	}
	sessionDo(t, srv, "POST", "/api/session", `{"key":"user","value":"bob"}`, id)
	if m := wsCall(t, c, `{"messageType":"action","action":"session:get","params":{"key":"user"},"messageId":3}`); m["response"] != "bob" {
		t.Fatalf("the WebSocket does not see HTTP's change: %v", m)
	}

	fresh, resp, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fresh.CloseNow() })
	newID := cookieID(t, resp.Header.Get("Set-Cookie"), action.DefaultSessionTTL, false)
	if newID == id {
		t.Fatal("a WebSocket without a cookie got another session's id")
	}
	if m := wsCall(t, fresh, `{"messageType":"action","action":"session:get","params":{"key":"user"},"messageId":1}`); m["response"] != nil {
		t.Fatalf("a new session has user %v", m)
	}
	wsCall(t, fresh, `{"messageType":"action","action":"session:set","params":{"key":"user","value":"cy"},"messageId":2}`)
	if _, v, _ := sessionDo(t, srv, "GET", "/api/session/user", "", newID); v != "cy" {
		t.Fatalf("HTTP with the upgrade's cookie sees user %v", v)
	}
}

// TestWildcardOriginWithoutCookies: "*" admits any origin without
// credentials, so a session cookie a browser sends along from an origin
// admitted only by "*" (same site, another port) signs nothing in, over
// HTTP and WebSocket; from the same origin, or a listed one, it does.
func TestWildcardOriginWithoutCookies(t *testing.T) {
	t.Parallel()
	srv, _ := sessionServer(t, false, action.Sessions{}, "*", "https://listed.example")
	_, _, set := sessionDo(t, srv, "POST", "/api/session", `{"key":"user","value":"ann"}`, "")
	id := cookieID(t, set, action.DefaultSessionTTL, false)
	get := func(origin string) any {
		req, err := http.NewRequest("GET", srv.URL+"/api/session/user", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Cookie", "mcpkit_session="+id)
		req.Header.Set("Origin", origin)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET from %s: %d (%v)", origin, resp.StatusCode, err)
		}
		return v
	}
	for origin, want := range map[string]any{srv.URL: "ann", "https://listed.example": "ann", "http://localhost:3000": nil} {
		if got := get(origin); got != want {
			t.Errorf("the session seen from %s: %v, want %v", origin, got, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	for origin, want := range map[string]any{srv.URL: "ann", "http://localhost:3000": nil} {
		c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {"mcpkit_session=" + id}, "Origin": {origin}}})
		if err != nil {
			t.Fatal(err)
		}
		if m := wsCall(t, c, `{"messageType":"action","action":"session:get","params":{"key":"user"},"messageId":1}`); m["response"] != want {
			t.Errorf("the WebSocket's session from %s: %v, want %v", origin, m["response"], want)
		}
		_ = c.CloseNow()
	}
}
