package test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// browser is a web client of a running binary with a cookie jar.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar}}
}

// do calls the API and returns the status, the body and the response's
// Set-Cookie headers.
func (b *browser) do(method, route, body string) (int, string, []string) {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), method, b.base+"/api"+route, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, string(data), resp.Header.Values("Set-Cookie")
}

// TestActionsUsersAndSessions: against `mcpkit actions start`, a browser
// signs up (and gets an HttpOnly, SameSite=Lax session cookie), posts over
// a WebSocket opened with that cookie as the signed-in user, signs out,
// fails to sign in with a wrong password and signs in with the right one;
// over MCP the same actions are tools, sign-in answers the user and a
// wrong password is an unauthorized error. No password reaches the log.
func TestActionsUsersAndSessions(t *testing.T) {
	t.Parallel()
	const password = "e2e secret password"
	// OAuth opted out: the MCP part is about the same actions as tools.
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"oauth": false}}}}`)
	hp := startListening(t, binary(t), "actions", "--log-format", "json", "--log-level", "debug", "start", "--http", "127.0.0.1:0", "--config", cfg)
	b := newBrowser(t, hp.base)
	code, body, cookies := b.do("PUT", "/user", `{"name":"Ann","email":"ann@example.com","password":"`+password+`"}`)
	if code != 200 || !strings.Contains(body, `"name":"Ann"`) || len(cookies) != 1 ||
		!strings.HasPrefix(cookies[0], "mcpkit_session=") || !strings.Contains(cookies[0], "; HttpOnly; SameSite=Lax") {
		t.Fatalf("sign-up: %d %s, cookies %q", code, body, cookies)
	}
	if code, body, _ := b.do("PUT", "/user", `{"name":"Ann","email":"ann@example.com","password":"`+password+`"}`); code != http.StatusConflict {
		t.Fatalf("a second sign-up with the same email: %d %s", code, body)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	u, _ := url.Parse(hp.base)
	header := http.Header{}
	for _, ck := range b.c.Jar.Cookies(u) {
		header.Add("Cookie", ck.Name+"="+ck.Value)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hp.base, "http")+"/ws", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"messageType":"action","action":"message:post","params":{"channel":"c","text":"from the socket"},"messageId":1}`)); err != nil {
		t.Fatal(err)
	}
	_, data, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var posted struct {
		Response struct {
			Author string
			UserID int64 `json:"user_id"`
		}
	}
	if err := json.Unmarshal(data, &posted); err != nil || posted.Response.Author != "Ann" || posted.Response.UserID == 0 {
		t.Fatalf("a post over the signed-in socket: %s (%v)", data, err)
	}
	ws.Close(websocket.StatusNormalClosure, "")

	if code, body, cookies := b.do("DELETE", "/session", ""); code != 200 || len(cookies) != 1 || !strings.Contains(cookies[0], "Max-Age=0") {
		t.Fatalf("sign-out: %d %s, cookies %q", code, body, cookies)
	}
	if code, body, _ := b.do("POST", "/messages", `{"channel":"c","text":"anonymous"}`); code != 400 || !strings.Contains(body, `"missing_param"`) {
		t.Fatalf("a post without author, signed out: %d %s", code, body)
	}
	if code, body, _ := b.do("PUT", "/session", `{"email":"ann@example.com","password":"not the password"}`); code != 401 || !strings.Contains(body, `"unauthorized"`) {
		t.Fatalf("sign-in with a wrong password: %d %s", code, body)
	}
	if code, body, _ := b.do("PUT", "/session", `{"email":"ann@example.com","password":"`+password+`"}`); code != 200 {
		t.Fatalf("sign-in: %d %s", code, body)
	}
	if code, body, _ := b.do("POST", "/messages", `{"channel":"c","text":"back"}`); code != 200 || !strings.Contains(body, `"author":"Ann"`) {
		t.Fatalf("a post signed in: %d %s", code, body)
	}

	cs := hp.connect(t, legacyEra, nil)
	res := callTool(t, cs, "session-create", map[string]any{"email": "ann@example.com", "password": password})
	if res.IsError || !strings.Contains(resultText(res), `"name":"Ann"`) {
		t.Fatalf("session-create over MCP: %s", resultText(res))
	}
	res = callTool(t, cs, "session-create", map[string]any{"email": "ann@example.com", "password": "not the password"})
	if sc, _ := json.Marshal(res.StructuredContent); !res.IsError || !strings.Contains(string(sc), `"kind":"unauthorized"`) {
		t.Fatalf("session-create over MCP with a wrong password: %s", resultText(res))
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema string
	for _, tool := range tools.Tools {
		if tool.Name == "user-create" {
			raw, _ := json.Marshal(tool.InputSchema)
			schema = string(raw)
		}
	}
	if !strings.Contains(schema, `"format":"password"`) {
		t.Errorf("user-create's password is not advertised as a password: %s", schema)
	}
	if strings.Contains(hp.stderr.String(), password) || strings.Contains(hp.stderr.String(), "not the password") {
		t.Error("a password is in the log")
	}
}
