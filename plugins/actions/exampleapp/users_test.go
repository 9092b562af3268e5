package exampleapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/crypto/bcrypt"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/plugins/actions/exampleapp"
)

// logBuffer is a log sink safe for an HTTP server's concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// webClient serves the example app on path over HTTP with sessions, and
// returns a function calling it as one browser (a cookie jar), and the
// debug log.
func webClient(t *testing.T, path string) (call func(method, route, body string) (int, map[string]any), logs *logBuffer) {
	t.Helper()
	ex, err := exampleapp.Open(path, nil, exampleapp.Options{BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	logs = &logBuffer{}
	ex.App().SetLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	srv := httptest.NewServer(ex.App().HTTPHandler(action.HTTPOptions{Sessions: &action.Sessions{Store: action.NewLocalSessionStore()}}))
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	return func(method, route, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+"/api"+route, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("%s %s: %v", method, route, err)
		}
		return resp.StatusCode, m
	}, logs
}

// wantErr checks an error answer's status, kind and field.
func wantErr(t *testing.T, code int, m map[string]any, status int, kind action.Kind, field string) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if code != status || e == nil || e["kind"] != string(kind) || field != "" && e["field"] != field {
		t.Fatalf("got %d %v: want %d %s (field %q)", code, m, status, kind, field)
	}
}

// Sign up, sign out, sign in (wrong password, unknown user, right
// password), and post signed in and out: the user's name and id go with
// a signed-in post; a duplicate sign-up is a conflict; the password never
// reaches a log.
func TestSignUpSignInSignOut(t *testing.T) {
	t.Parallel()
	const password = "correct horse battery"
	call, logs := webClient(t, "")
	code, m := call("PUT", "/user", `{"name":"Ann","email":"Ann@Example.com","password":"`+password+`"}`)
	user, _ := m["user"].(map[string]any)
	if code != 200 || user["name"] != "Ann" || user["email"] != "ann@example.com" || user["id"] == nil || user["password_hash"] != nil {
		t.Fatalf("sign-up: %d %v", code, m)
	}
	code, m = call("POST", "/messages", `{"channel":"c","text":"hi"}`)
	if code != 200 || m["author"] != "Ann" || m["user_id"] != user["id"] {
		t.Fatalf("post signed in after sign-up: %d %v", code, m)
	}
	code, m = call("POST", "/messages", `{"channel":"c","text":"hi","author":"Bob"}`)
	wantErr(t, code, m, 400, action.KindInvalidParam, "author")

	code, m = call("PUT", "/user", `{"name":"Ann 2","email":"ann@example.COM","password":"another password"}`)
	wantErr(t, code, m, 409, action.KindConflict, "email")

	if code, m = call("DELETE", "/session", ""); code != 200 || m["signed_out"] != true {
		t.Fatalf("sign-out: %d %v", code, m)
	}
	code, m = call("POST", "/messages", `{"channel":"c","text":"hi"}`)
	wantErr(t, code, m, 400, action.KindMissingParam, "author")
	if code, m = call("POST", "/messages", `{"channel":"c","text":"hi","author":"Guest"}`); code != 200 || m["author"] != "Guest" || m["user_id"] != nil {
		t.Fatalf("post signed out: %d %v", code, m)
	}

	code, m = call("PUT", "/session", `{"email":"ann@example.com","password":"wrong password"}`)
	wantErr(t, code, m, 401, action.KindUnauthorized, "")
	wrong := m["error"].(map[string]any)["message"]
	code, m = call("PUT", "/session", `{"email":"nobody@example.com","password":"`+password+`"}`)
	wantErr(t, code, m, 401, action.KindUnauthorized, "")
	if m["error"].(map[string]any)["message"] != wrong {
		t.Errorf("an unknown user and a wrong password are told apart: %v vs %v", m, wrong)
	}
	code, m = call("PUT", "/session", `{"email":"short@example.com","password":"short"}`)
	wantErr(t, code, m, 400, action.KindInvalidParam, "password")
	code, m = call("PUT", "/session", `{"email":"ann@example.com","password":"`+strings.Repeat("é", 40)+`"}`)
	wantErr(t, code, m, 400, action.KindInvalidParam, "password") // 40 characters, 80 bytes: bcrypt would cut it

	code, m = call("PUT", "/session", `{"email":"ANN@example.com","password":"`+password+`"}`)
	if u, _ := m["user"].(map[string]any); code != 200 || u["id"] != user["id"] {
		t.Fatalf("sign-in: %d %v", code, m)
	}
	if code, m = call("POST", "/messages", `{"channel":"c","text":"back","author":"Ann"}`); code != 200 || m["user_id"] != user["id"] {
		t.Fatalf("post signed in: %d %v", code, m)
	}
	if strings.Contains(logs.String(), password) || strings.Contains(logs.String(), "wrong password") {
		t.Error("a password is in the log")
	}
	if !strings.Contains(logs.String(), `"password":"[redacted]"`) {
		t.Error("the debug log does not show the password redacted")
	}
}

// Users persist in the app's store file: after a reopen, the user signs in.
func TestUsersPersist(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "app.db")
	ex, err := exampleapp.Open(path, nil, exampleapp.Options{BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.App().Run(context.Background(), &action.Conn{Type: "cli"}, "user:create", json.RawMessage(`{"name":"Cy","email":"cy@example.com","password":"password one"}`)); err != nil {
		t.Fatal(err)
	}
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	call, _ := webClient(t, path)
	if code, m := call("PUT", "/session", `{"email":"cy@example.com","password":"password one"}`); code != 200 {
		t.Fatalf("sign-in after a reopen: %d %v", code, m)
	}
}

// The password inputs are secret (format password, write-only) and the
// actions carry the signup and login markers.
func TestUserActionsSchema(t *testing.T) {
	t.Parallel()
	ex, err := exampleapp.Open("", nil, exampleapp.Options{BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	for name, marker := range map[string]func(action.MCP) bool{
		"user:create":    func(m action.MCP) bool { return m.SignupAction },
		"session:create": func(m action.MCP) bool { return m.LoginAction },
	} {
		act, ok := ex.App().Lookup(name)
		if !ok {
			t.Fatalf("no action %s", name)
		}
		p := act.InputSchema().Properties["password"]
		if p == nil || p.Format != "password" || !p.WriteOnly || !marker(act.MCP) {
			t.Errorf("%s: password schema %+v, markers %+v", name, p, act.MCP)
		}
	}
	if _, err := exampleapp.Open("", nil, exampleapp.Options{BcryptCost: 99}); err == nil {
		t.Error("a bcrypt cost of 99 was accepted")
	}
}

// An inbox is received only by its identity: a signed-in user over a
// WebSocket opened with the session's cookie subscribes to its own inbox
// and is refused another's; a caller by principal gets its own.
func TestInboxes(t *testing.T) {
	t.Parallel()
	ex, err := exampleapp.Open("", action.NewLocalPubSub(), exampleapp.Options{BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	sessions := &action.Sessions{Store: action.NewLocalSessionStore()}
	mux := http.NewServeMux()
	mux.Handle("/api/", ex.App().HTTPHandler(action.HTTPOptions{Sessions: sessions}))
	mux.Handle("/ws", ex.App().WebSocketHandler(action.WebSocketOptions{Sessions: sessions, PubSub: action.NewLocalPubSub()}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.DefaultClient.Do(mustRequest(t, "PUT", srv.URL+"/api/user", `{"name":"Dee","email":"dee@example.com","password":"password four"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var signedUp struct{ User struct{ ID int64 } }
	cookie := resp.Header.Get("Set-Cookie") // the socket signs in again: its session is this one
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {strings.SplitN(cookie, ";", 2)[0]}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	roundTrip := func(msg string) map[string]any {
		t.Helper()
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	me := roundTrip(`{"messageType":"action","action":"session:create","params":{"email":"dee@example.com","password":"password four"}}`)
	b, _ := json.Marshal(me["response"])
	if err := json.Unmarshal(b, &signedUp); err != nil || signedUp.User.ID == 0 {
		t.Fatalf("sign-in over the socket: %v", me)
	}
	own := fmt.Sprintf("inbox:user:%d", signedUp.User.ID)
	if m := roundTrip(`{"messageType":"subscribe","channel":"` + own + `"}`); m["status"] != "ok" {
		t.Fatalf("subscribing to the own inbox: %v", m)
	}
	if m := roundTrip(`{"messageType":"subscribe","channel":"inbox:user:999"}`); m["error"] == nil || m["error"].(map[string]any)["kind"] != "forbidden" {
		t.Fatalf("subscribing to another's inbox: %v", m)
	}
	byPrincipal := func(p, channel string) error {
		return ex.App().AuthorizeChannel(ctx, &action.Conn{Type: "mcp", Principal: p}, channel)
	}
	if byPrincipal("p1", "inbox:p1") != nil || byPrincipal("p2", "inbox:p1") == nil || byPrincipal("", "inbox:") == nil || byPrincipal("", "open") != nil {
		t.Error("inboxes by principal")
	}
}

func mustRequest(t *testing.T, method, u, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// A caller whose principal is Options.PrincipalPrefix and a user id is
// that user; without the option, the same principal is nobody (a token
// verifier that is not the OAuth server's cannot make callers users).
func TestPrincipalUser(t *testing.T) {
	for _, prefix := range []string{"user:", ""} {
		ex, err := exampleapp.Open("", nil, exampleapp.Options{BcryptCost: bcrypt.MinCost, PrincipalPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		defer ex.Close()
		app := ex.App()
		out, err := app.Run(t.Context(), &action.Conn{Type: "web"}, "user:create", json.RawMessage(`{"name":"Ann","email":"ann@example.com","password":"correct horse"}`))
		if err != nil {
			t.Fatal(err)
		}
		id := out.(exampleapp.SignedIn).User.ID
		for principal, want := range map[string]string{fmt.Sprintf("user:%d", id): "Ann", "user:999": "", "user:x": ""} {
			res, err := app.Run(t.Context(), &action.Conn{Type: "mcp", Principal: principal}, "message:post", json.RawMessage(`{"channel":"c","text":"hi"}`))
			if prefix == "" {
				want = ""
			}
			switch {
			case want == "" && (err == nil || !strings.Contains(err.Error(), "required when not signed in")):
				t.Errorf("prefix %q, principal %q: posted %+v (%v), want the author required", prefix, principal, res, err)
			case want != "" && (err != nil || res.(exampleapp.Message).Author != want):
				t.Errorf("prefix %q, principal %q: %+v %v, want author %s", prefix, principal, res, err, want)
			}
		}
	}
}

// An inbox is read only by its identity too: anyone may post to it, but
// message:list, the resource and the prompt of another's inbox are
// forbidden, of one's own allowed, and other channels stay open.
func TestInboxesRead(t *testing.T) {
	t.Parallel()
	ex, err := exampleapp.Open("", nil, exampleapp.Options{BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	app := ex.App()
	as := func(p string) *action.Conn { return &action.Conn{Type: "mcp", Principal: p} }
	for _, channel := range []string{"inbox:carol", "open"} {
		if _, err := app.Run(t.Context(), as("mallory"), "message:post", json.RawMessage(`{"channel":"`+channel+`","text":"hi","author":"m"}`)); err != nil {
			t.Fatalf("post to %s: %v", channel, err)
		}
	}
	reads := map[string]string{
		"message:list":      `{"channel":"%s"}`,
		"message:resource":  `{"channel":"%s"}`,
		"summarize:channel": `{"channel":"%s"}`,
	}
	for name, params := range reads {
		for _, tc := range []struct {
			who, channel string
			forbidden    bool
		}{{"mallory", "inbox:carol", true}, {"", "inbox:carol", true}, {"carol", "inbox:carol", false}, {"mallory", "open", false}} {
			_, err := app.Run(t.Context(), as(tc.who), name, json.RawMessage(fmt.Sprintf(params, tc.channel)))
			var ae *action.Error
			if forbidden := errors.As(err, &ae) && ae.Kind == action.KindForbidden; forbidden != tc.forbidden || !tc.forbidden && err != nil {
				t.Errorf("%s of %s as %q: %v, want forbidden %v", name, tc.channel, tc.who, err, tc.forbidden)
			}
		}
	}
}
