package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/internal/redistest"
)

// pgData is a "data_path" member naming a PostgreSQL store of the test's
// own on the shared server (which trusts loopback: no password): the
// example app's data beside Redis.
func pgData(t testing.TB) string {
	t.Helper()
	return `"data_path": "` + pgtest.Shared(t).StoreURL() + `"`
}

// withoutPassword is u (a URL pgtest gave) without its password.
func withoutPassword(t testing.TB, u string) *url.URL {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.User(p.User.Username())
	return p
}

// freeAddr is a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// signedUp is a user:create or message:post answer, as far as the test
// reads it.
type signedUp struct {
	User struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"user"`
	Author string `json:"author"`
	UserID int64  `json:"user_id"`
}

func decodeBody(t *testing.T, body string) signedUp {
	t.Helper()
	var v signedUp
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return v
}

// socket is a WebSocket client of the example app, signed in by b's
// cookies (b's jar holds them for 127.0.0.1, whatever the port).
type socket struct {
	t    *testing.T
	ctx  context.Context
	conn *websocket.Conn
}

func dialAs(t *testing.T, ctx context.Context, base string, b *browser) *socket {
	t.Helper()
	u, _ := url.Parse(base)
	header := http.Header{}
	for _, ck := range b.c.Jar.Cookies(u) {
		header.Add("Cookie", ck.Name+"="+ck.Value)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return &socket{t: t, ctx: ctx, conn: ws}
}

// read returns the next message on the socket.
func (s *socket) read() map[string]any {
	s.t.Helper()
	_, data, err := s.conn.Read(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		s.t.Fatalf("%s: %v", data, err)
	}
	return m
}

// subscribe asks for channel and returns the answer's error kind ("" when
// subscribed).
func (s *socket) subscribe(channel string) string {
	s.t.Helper()
	if err := s.conn.Write(s.ctx, websocket.MessageText, []byte(`{"messageType":"subscribe","channel":"`+channel+`"}`)); err != nil {
		s.t.Fatal(err)
	}
	m := s.read()
	if m["status"] == "ok" {
		return ""
	}
	e, _ := m["error"].(map[string]any)
	kind, _ := e["kind"].(string)
	if kind == "" {
		s.t.Fatalf("subscribe %s: %v", channel, m)
	}
	return kind
}

// TestActionsSharedIdentity is issue 27's sequence end to end: two
// `mcpkit actions start` instances (one public origin, the OAuth issuer)
// share one Redis and one PostgreSQL store, the password from PGPASSWORD.
// Carol signs up on A and Mallory on B: different user ids. Carol's
// cookie on B acts as Carol; an OAuth token issued on A acts as its user
// on B, over /api and /mcp; Mallory can neither subscribe to Carol's inbox
// nor list it on either instance, while Carol reads on B, and receives on
// B's socket, what was posted to it on A; messages posted on either are
// listed on both; one email signed up on both at once makes one user.
func TestActionsSharedIdentity(t *testing.T) {
	t.Parallel()
	const pgPassword = "e2e-shared-pg-pw"
	rs := redistest.Start(t, redistest.Options{})
	pg := pgtest.Start(t, pgtest.Options{Password: pgPassword})
	data := withoutPassword(t, pg.URL(pgtest.Database))
	data.RawQuery += "&mcpkit_store=actions"
	addrA, addrB := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"oauth": {"issuer": "http://`+addrA+`"},
		"redis": {"addr": "`+rs.Addr+`", "prefix": "e2e-identity:"}, "data_path": "`+data.String()+`",
		"rate_limit": {"unauthenticated": 1000, "authenticated": 1000}}}}}`)
	env := []string{"PGPASSWORD=" + pgPassword}
	start := func(addr string) *proc {
		return startBinaryEnv(t, env, binary(t), nil, nil, "actions", "--log-format", "json", "start", "--http", addr, "--config", cfg)
	}
	pa, pb := start(addrA), start(addrB) // at once, on the fresh store
	a, b := awaitListening(t, pa), awaitListening(t, pb)

	carol, mallory := newBrowser(t, a.base), newBrowser(t, b.base)
	code, body, _ := carol.do("PUT", "/user", `{"name":"Carol","email":"carol@example.com","password":"carol's password"}`)
	c := decodeBody(t, body).User.ID
	if code != 200 || c == 0 {
		t.Fatalf("Carol signs up on A: %d %s", code, body)
	}
	code, body, _ = mallory.do("PUT", "/user", `{"name":"Mallory","email":"mallory@example.com","password":"mallory's password"}`)
	m := decodeBody(t, body).User.ID
	if code != 200 || m == 0 || m == c {
		t.Fatalf("Mallory signs up on B: %d %s; Carol is user %d", code, body, c)
	}

	// Carol's cookie on B (her jar sends it to either port) acts as Carol,
	// Mallory's on A as Mallory.
	carolOnB, malloryOnA := &browser{t: t, base: b.base, c: carol.c}, &browser{t: t, base: a.base, c: mallory.c}
	for _, tc := range []struct {
		who  *browser
		name string
		id   int64
	}{{carolOnB, "Carol", c}, {carol, "Carol", c}, {mallory, "Mallory", m}, {malloryOnA, "Mallory", m}} {
		code, body, _ := tc.who.do("POST", "/messages", `{"channel":"general","text":"by `+tc.name+` on `+tc.who.base+`"}`)
		if got := decodeBody(t, body); code != 200 || got.Author != tc.name || got.UserID != tc.id {
			t.Errorf("%s posts on %s: %d %s; want author %s, user %d", tc.name, tc.who.base, code, body, tc.name, tc.id)
		}
	}

	// An OAuth token issued on A is its user on B, over /api and /mcp.
	_, _, _, tok := oauthToken(t, a, "ann@example.com")
	resp, body := request(t, http.DefaultClient, "POST", a.base+"/api/messages", `{"channel":"general","text":"Ann on A"}`, "Authorization", "Bearer "+tok.AccessToken)
	ann := decodeBody(t, body)
	if resp.StatusCode != 200 || ann.Author != "Ann" || ann.UserID == 0 || ann.UserID == c || ann.UserID == m {
		t.Fatalf("Ann's token on A: %d %s", resp.StatusCode, body)
	}
	resp, body = request(t, http.DefaultClient, "POST", b.base+"/api/messages", `{"channel":"general","text":"Ann on B"}`, "Authorization", "Bearer "+tok.AccessToken)
	if got := decodeBody(t, body); resp.StatusCode != 200 || got.Author != "Ann" || got.UserID != ann.UserID {
		t.Errorf("Ann's token from A on B's /api: %d %s; want user %d", resp.StatusCode, body, ann.UserID)
	}
	annOnB, logs := listenLogs(t, b, tok.AccessToken)
	if author, id := postAs(t, annOnB, "Ann over B's /mcp"); author != "Ann" || id != ann.UserID {
		t.Errorf("Ann's token from A on B's /mcp posts as %s (user %d), want Ann (user %d)", author, id, ann.UserID)
	}

	// Carol's inbox is Carol's on both instances.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	inbox := fmt.Sprintf("inbox:user:%d", c)
	carolSocket := dialAs(t, ctx, b.base, carol)
	if kind := carolSocket.subscribe(inbox); kind != "" {
		t.Fatalf("Carol subscribes to her inbox on B: %s", kind)
	}
	for _, base := range []string{a.base, b.base} {
		if kind := dialAs(t, ctx, base, mallory).subscribe(inbox); kind != "forbidden" {
			t.Errorf("Mallory subscribes to Carol's inbox on %s: %q, want forbidden", base, kind)
		}
		if code, body := (&browser{t: t, base: base, c: mallory.c}).list(inbox); code != http.StatusForbidden || !strings.Contains(body, `"forbidden"`) {
			t.Errorf("Mallory lists Carol's inbox on %s: %d %s, want 403", base, code, body)
		}
	}
	if code, body := httpDo(t, "POST", a.base+"/api/messages", `{"channel":"`+inbox+`","text":"for Carol only","author":"Bob"}`); code != 200 {
		t.Fatalf("a post to Carol's inbox on A: %d %s", code, body)
	}
	if got := carolSocket.read(); got["messageType"] != "broadcast" || got["channel"] != inbox || !strings.Contains(fmt.Sprint(got["message"]), "for Carol only") {
		t.Errorf("Carol's socket on B got %v, want the message posted to her inbox on A", got)
	}
	if code, body := carolOnB.list(inbox); code != 200 || !strings.Contains(body, "for Carol only") {
		t.Errorf("Carol lists her inbox on B: %d %s", code, body)
	}
	// Ann's MCP session on B gets its own inbox's message, never Carol's.
	if code, body := httpDo(t, "POST", a.base+"/api/messages", fmt.Sprintf(`{"channel":"inbox:user:%d","text":"for Ann","author":"Bob"}`, ann.UserID)); code != 200 {
		t.Fatalf("a post to Ann's inbox on A: %d %s", code, body)
	}
	for l := firstLog(t, "Ann on B", logs); l.text != "for Ann"; l = firstLog(t, "Ann on B", logs) {
		if l.channel == inbox {
			t.Fatalf("Ann's MCP session on B got Carol's inbox: %+v", l)
		}
	}

	// What was posted on either instance is listed on both.
	for _, who := range []*browser{carol, carolOnB} {
		code, body := who.list("general")
		for _, text := range []string{"by Carol on " + b.base, "by Mallory on " + a.base, "Ann on A", "Ann on B", "Ann over B's /mcp"} {
			if code != 200 || !strings.Contains(body, text) {
				t.Errorf("general listed on %s lacks %q: %d %s", who.base, text, code, body)
			}
		}
	}

	// One email signed up on both at once: one user, one conflict.
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for _, base := range []string{a.base, b.base} {
		wg.Go(func() {
			req, _ := http.NewRequest("PUT", base+"/api/user", strings.NewReader(`{"name":"Dup","email":"dup@example.com","password":"dup password"}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	got := map[int]int{}
	for code := range codes {
		got[code]++
	}
	if got[200] != 1 || got[http.StatusConflict] != 1 {
		t.Errorf("one email signed up on A and B at once: statuses %v, want one 200 and one 409", got)
	}
	for _, hp := range []*httpProc{a, b} {
		if strings.Contains(hp.stderr.String(), pgPassword) {
			t.Error("the PostgreSQL password is in a log")
		}
	}
}

// list is GET /api/messages?channel=channel.
func (b *browser) list(channel string) (int, string) {
	b.t.Helper()
	code, body, _ := b.do("GET", "/messages?"+url.Values{"channel": {channel}}.Encode(), "")
	return code, body
}

// TestActionsRefuseLocalDataBesideRedis: `mcpkit serve --plugins actions`
// and `mcpkit actions start` with "redis" but the app's data in memory or
// in a file exit 3 at once, without listening, with an error naming
// data_path and a postgres:// URL as the fix.
func TestActionsRefuseLocalDataBesideRedis(t *testing.T) {
	t.Parallel()
	redis := `"redis": {"addr": "127.0.0.1:1"}` // never reached: the configuration is refused first
	memory := writeConfig(t, `{"plugins": {"actions": {"config": {`+redis+`}}}}`)
	file := writeConfig(t, `{"plugins": {"actions": {"config": {`+redis+`, "data_path": "app.db"}}}}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--http", "127.0.0.1:0", "--plugins", "actions", "--config", memory}, "in this process's memory"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--plugins", "actions", "--config", file}, `in the file \"app.db\"`},
		{[]string{"actions", "start", "--http", "127.0.0.1:0", "--config", memory}, "in this process's memory"},
		{[]string{"actions", "--data", "/tmp/app.db", "start", "--config", memory}, `in the file \"/tmp/app.db\"`}, // quoted in the log's text
	} {
		cmd := exec.Command(binary(t), tc.args...)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "data_path") || !strings.Contains(string(out), tc.want) ||
			!strings.Contains(string(out), "postgres://") || strings.Contains(string(out), "listening") {
			t.Errorf("mcpkit %s: %v\n%s\nwant exit 3 naming data_path, %q and a postgres:// URL", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}
