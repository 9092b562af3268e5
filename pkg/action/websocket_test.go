package action_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/mcpkit/mcpkit/pkg/action"
)

// wsServe starts the test app's WebSocket handler (with a "say" action
// that publishes its text on its channel) on a real server, over ps.
func wsServe(t *testing.T, ps *action.LocalPubSub, opts action.WebSocketOptions) string {
	t.Helper()
	return wsServeApp(t, ps, opts, func(*action.App) {})
}

// wsServeApp is wsServe with setup called on the app before it serves.
func wsServeApp(t *testing.T, ps *action.LocalPubSub, opts action.WebSocketOptions, setup func(*action.App)) string {
	t.Helper()
	app, _ := testApp(t)
	setup(app)
	type say struct {
		Channel string `json:"channel"`
		Text    string `json:"text"`
	}
	app.MustAdd(action.Action{
		Name: "say", Description: "publishes text on channel", Inputs: (*say)(nil),
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			s := in.(*say)
			return "sent", ps.Publish(ctx, s.Channel, action.Message{Message: s.Text, Sender: c.ID})
		},
	})
	opts.PubSub = ps
	srv := httptest.NewServer(app.WebSocketHandler(opts))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func wsDial(t *testing.T, u string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func wsSend(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// wsRecv reads one message, or returns the read error.
func wsRecv(t *testing.T, c *websocket.Conn) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("message %q is not a JSON object: %v", data, err)
	}
	return m, nil
}

func wsMust(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	m, err := wsRecv(t, c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// wsCall sends msg and returns the answer.
func wsCall(t *testing.T, c *websocket.Conn, msg string) map[string]any {
	t.Helper()
	wsSend(t, c, msg)
	return wsMust(t, c)
}

// wantWSErr checks an error answer's messageId, kind and field.
func wantWSErr(t *testing.T, m map[string]any, id any, kind action.Kind, field string) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if e == nil || m["messageId"] != id || e["kind"] != string(kind) || (e["field"] == nil) != (field == "") || field != "" && e["field"] != field {
		t.Fatalf("got %v: want messageId %v, kind %s, field %q", m, id, kind, field)
	}
}

func wantOK(t *testing.T, m map[string]any, id any) {
	t.Helper()
	if len(m) != 2 || m["messageId"] != id || m["status"] != "ok" {
		t.Fatalf("got %v: want messageId %v, status ok", m, id)
	}
}

func TestWebSocketActions(t *testing.T) {
	t.Parallel()
	c := wsDial(t, wsServe(t, action.NewLocalPubSub(), action.WebSocketOptions{}))
	m := wsCall(t, c, `{"messageType":"action","action":"status","messageId":"m1"}`)
	if m["messageId"] != "m1" || len(m) != 2 || m["response"].(map[string]any)["ok"] != true {
		t.Fatalf("status: %v", m)
	}
	m = wsCall(t, c, `{"messageType":"action","action":"user:view","params":{"id":"u7"},"messageId":{"n":[1, 2]}}`)
	conn := m["response"].(map[string]any)["conn"].(map[string]any)
	if id, _ := m["messageId"].(map[string]any); id == nil || len(m) != 2 || conn["type"] != "websocket" || len(conn["id"].(string)) != 32 {
		t.Fatalf("user:view: %v", m)
	}
	m2 := wsCall(t, c, `{"messageType":"action","action":"user:view","params":{"id":"u8"},"messageId":3}`)
	if m2["response"].(map[string]any)["conn"].(map[string]any)["id"] != conn["id"] {
		t.Fatalf("the conn id changed within a connection: %v then %v", m, m2)
	}
	wantWSErr(t, wsCall(t, c, `{"messageType":"action","action":"user:create","params":{"name":"x"},"messageId":4}`), 4.0, action.KindMissingParam, "password")
	wantWSErr(t, wsCall(t, c, `{"messageType":"action","action":"user:create","params":{"name":"x","password":"short"},"messageId":5}`), 5.0, action.KindInvalidParam, "password")
	wantWSErr(t, wsCall(t, c, `{"messageType":"action","action":"nope","messageId":6}`), 6.0, action.KindNotFound, "")
	m = wsCall(t, c, `{"messageType":"action","action":"boom","messageId":7}`)
	wantWSErr(t, m, 7.0, action.KindInternal, "")
	if msg := m["error"].(map[string]any)["message"]; msg != "internal error" {
		t.Fatalf("a panic shows %q", msg)
	}
	// Bad messages are answered and the connection stays up.
	wantWSErr(t, wsCall(t, c, `{nope`), nil, action.KindInvalidParam, "")
	wantWSErr(t, wsCall(t, c, `{"messageType":"shout","messageId":8}`), 8.0, action.KindInvalidParam, "messageType")
	wantWSErr(t, wsCall(t, c, `{"messageType":"action","action":"status","messageId":9,"extra":1}`), 9.0, action.KindInvalidParam, "")
	wantWSErr(t, wsCall(t, c, `{"messageType":"action","action":"status"} {}`), nil, action.KindInvalidParam, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageBinary, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	wantWSErr(t, wsMust(t, c), nil, action.KindInvalidParam, "")
	if m := wsCall(t, c, `{"messageType":"action","action":"status"}`); len(m) != 1 || m["response"] == nil {
		t.Fatalf("without a messageId: %v", m)
	}
}

func TestWebSocketBroadcast(t *testing.T) {
	t.Parallel()
	ps := action.NewLocalPubSub()
	u := wsServe(t, ps, action.WebSocketOptions{})
	a, b, third := wsDial(t, u), wsDial(t, u), wsDial(t, u)
	wantOK(t, wsCall(t, a, `{"messageType":"subscribe","channel":"room","messageId":1}`), 1.0)
	wantOK(t, wsCall(t, a, `{"messageType":"subscribe","channel":"room","messageId":2}`), 2.0) // twice is one subscription
	wantOK(t, wsCall(t, b, `{"messageType":"subscribe","channel":"room","messageId":"b"}`), "b")
	wantOK(t, wsCall(t, third, `{"messageType":"subscribe","channel":"other","messageId":3}`), 3.0)
	if n := ps.Subscribers("room"); n != 2 {
		t.Fatalf("room has %d subscribers, want 2", n)
	}
	// b says it; the answer and the broadcast may come in either order.
	wsSend(t, b, `{"messageType":"action","action":"say","params":{"channel":"room","text":"hello"},"messageId":10}`)
	var sender string
	for range 2 {
		m := wsMust(t, b)
		if m["messageType"] == "broadcast" {
			sender, _ = m["sender"].(string)
			continue
		}
		if m["response"] != "sent" || m["messageId"] != 10.0 {
			t.Fatalf("say: %v", m)
		}
	}
	if sender == "" {
		t.Fatal("b got no broadcast")
	}
	m := wsMust(t, a)
	if len(m) != 4 || m["messageType"] != "broadcast" || m["channel"] != "room" || m["message"] != "hello" || m["sender"] != sender {
		t.Fatalf("a got %v", m)
	}
	// third is not on room: the first message it gets is other's.
	if err := ps.Publish(context.Background(), "other", action.Message{Message: map[string]any{"x": 1}}); err != nil {
		t.Fatal(err)
	}
	if m := wsMust(t, third); m["channel"] != "other" || m["message"].(map[string]any)["x"] != 1.0 {
		t.Fatalf("third got %v", m)
	}
	// Unsubscribed, a gets nothing more from room: the next is other's.
	wantOK(t, wsCall(t, a, `{"messageType":"unsubscribe","channel":"room","messageId":4}`), 4.0)
	wantWSErr(t, wsCall(t, a, `{"messageType":"unsubscribe","channel":"room","messageId":5}`), 5.0, action.KindNotFound, "")
	wantOK(t, wsCall(t, a, `{"messageType":"subscribe","channel":"other","messageId":6}`), 6.0)
	for _, ch := range []string{"room", "other"} {
		if err := ps.Publish(context.Background(), ch, action.Message{Message: ch}); err != nil {
			t.Fatal(err)
		}
	}
	if m := wsMust(t, a); m["channel"] != "other" {
		t.Fatalf("a got %v after unsubscribing from room", m)
	}
	wantWSErr(t, wsCall(t, a, `{"messageType":"subscribe","channel":"","messageId":7}`), 7.0, action.KindInvalidParam, "channel")
}

// Closing the socket ends the connection's subscriptions (and, through
// TestMain's goleak check, its goroutines).
func TestWebSocketCloseEndsSubscriptions(t *testing.T) {
	t.Parallel()
	ps := action.NewLocalPubSub()
	u := wsServe(t, ps, action.WebSocketOptions{})
	c := wsDial(t, u)
	for i, ch := range []string{"a", "b", "c"} {
		wantOK(t, wsCall(t, c, `{"messageType":"subscribe","channel":"`+ch+`","messageId":1}`), 1.0)
		if n := ps.Subscribers(ch); n != 1 {
			t.Fatalf("channel %d: %d subscribers", i, n)
		}
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ps.Subscribers("a")+ps.Subscribers("b")+ps.Subscribers("c") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("subscriptions outlived their connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWebSocketAuthorizeChannel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	u := wsServeApp(t, action.NewLocalPubSub(), action.WebSocketOptions{}, func(app *action.App) {
		app.SetChannelAuthorizer(func(ctx context.Context, c *action.Conn, channel string) error {
			mu.Lock()
			seen = append(seen, c.Type+" "+channel)
			mu.Unlock()
			switch channel {
			case "vip":
				return action.Errorf(action.KindUnauthorized, "log in first")
			case "secret":
				return errors.New("the store says no")
			}
			return nil
		})
	})
	c := wsDial(t, u)
	m := wsCall(t, c, `{"messageType":"subscribe","channel":"vip","messageId":1}`)
	wantWSErr(t, m, 1.0, action.KindUnauthorized, "")
	if m["error"].(map[string]any)["message"] != "log in first" {
		t.Fatalf("the hook's *Error is not shown as is: %v", m)
	}
	m = wsCall(t, c, `{"messageType":"subscribe","channel":"secret","messageId":2}`)
	wantWSErr(t, m, 2.0, action.KindForbidden, "")
	if msg := m["error"].(map[string]any)["message"].(string); strings.Contains(msg, "store") {
		t.Fatalf("a plain hook error's cause is shown: %q", msg)
	}
	wantOK(t, wsCall(t, c, `{"messageType":"subscribe","channel":"public","messageId":3}`), 3.0)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "websocket vip,websocket secret,websocket public" {
		t.Fatalf("the hook saw %v", seen)
	}
}

func TestWebSocketOrigin(t *testing.T) {
	t.Parallel()
	u := wsServe(t, action.NewLocalPubSub(), action.WebSocketOptions{AllowedOrigins: []string{"https://app.example/"}})
	dial := func(origin string) (*http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
		if err == nil {
			_ = c.CloseNow()
		}
		return resp, err
	}
	resp, err := dial("https://evil.example")
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("evil origin: %v %v", resp, err)
	}
	for _, ok := range []string{"https://app.example", "http://" + strings.TrimPrefix(u, "ws://")} {
		if _, err := dial(ok); err != nil {
			t.Fatalf("origin %s: %v", ok, err)
		}
	}
}

func TestWebSocketMessageTooBig(t *testing.T) {
	t.Parallel()
	c := wsDial(t, wsServe(t, action.NewLocalPubSub(), action.WebSocketOptions{MaxMessageBytes: 100}))
	at := `{"messageType":"action","action":"status","messageId":"` + strings.Repeat("x", 100-57) + `"}`
	if len(at) != 100 {
		t.Fatalf("test message is %d bytes", len(at))
	}
	if m := wsCall(t, c, at); m["response"] == nil {
		t.Fatalf("a message at the limit: %v", m)
	}
	wsSend(t, c, strings.Replace(at, `"x`, `"xx`, 1))
	if _, err := wsRecv(t, c); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("over the limit: %v, want close status 1009", err)
	}
}

func TestWebSocketRateLimit(t *testing.T) {
	t.Parallel()
	c := wsDial(t, wsServe(t, action.NewLocalPubSub(), action.WebSocketOptions{MaxMessagesPerSecond: 3}))
	for i := range 6 { // a burst: 3 handled, 2 refused, the 3rd refusal closes
		wsSend(t, c, `{"messageType":"action","action":"status","messageId":`+string(rune('0'+i))+`}`)
	}
	for i := range 3 {
		if m := wsMust(t, c); m["messageId"] != float64(i) || m["response"] == nil {
			t.Fatalf("message %d: %v", i, m)
		}
	}
	for i := 3; i < 5; i++ {
		wantWSErr(t, wsMust(t, c), float64(i), action.KindRateLimited, "")
	}
	if _, err := wsRecv(t, c); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("after the burst: %v, want close status 1008", err)
	}
}

func TestWebSocketSubscriptionLimit(t *testing.T) {
	t.Parallel()
	c := wsDial(t, wsServe(t, action.NewLocalPubSub(), action.WebSocketOptions{MaxSubscriptions: 2}))
	wantOK(t, wsCall(t, c, `{"messageType":"subscribe","channel":"a","messageId":1}`), 1.0)
	wantOK(t, wsCall(t, c, `{"messageType":"subscribe","channel":"b","messageId":2}`), 2.0)
	wantOK(t, wsCall(t, c, `{"messageType":"subscribe","channel":"b","messageId":3}`), 3.0) // already: no new one
	wantWSErr(t, wsCall(t, c, `{"messageType":"subscribe","channel":"c","messageId":4}`), 4.0, action.KindConflict, "")
	wantOK(t, wsCall(t, c, `{"messageType":"unsubscribe","channel":"a","messageId":5}`), 5.0)
	wantOK(t, wsCall(t, c, `{"messageType":"subscribe","channel":"c","messageId":6}`), 6.0)
}

func TestWebSocketWithoutPubSub(t *testing.T) {
	t.Parallel()
	app, _ := testApp(t)
	srv := httptest.NewServer(app.WebSocketHandler(action.WebSocketOptions{}))
	t.Cleanup(srv.Close)
	c := wsDial(t, "ws"+strings.TrimPrefix(srv.URL, "http"))
	wantWSErr(t, wsCall(t, c, `{"messageType":"subscribe","channel":"a","messageId":1}`), 1.0, action.KindNotFound, "")
}

// BenchmarkWebSocketAction measures one action round trip on an open
// connection (the rate limit set out of the way).
func BenchmarkWebSocketAction(b *testing.B) {
	app, _ := testApp(b)
	app.SetLogger(slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(app.WebSocketHandler(action.WebSocketOptions{MaxMessagesPerSecond: 1 << 30}))
	b.Cleanup(srv.Close)
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseNow()
	msg := []byte(`{"messageType":"action","action":"status","messageId":1}`)
	for b.Loop() {
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A client that does not read loses broadcasts beyond its buffer (the
// publisher never waits) and is told how many with the next one.
func TestWebSocketSlowClientToldOfDrops(t *testing.T) {
	t.Parallel()
	ps := action.NewLocalPubSub()
	c := wsDial(t, wsServe(t, ps, action.WebSocketOptions{}))
	wantOK(t, wsCall(t, c, `{"messageType":"subscribe","channel":"feed","messageId":1}`), 1.0)
	const n = 3000
	payload := strings.Repeat("p", 16<<10) // 48 MiB in all: more than socket buffers hold
	publish := func(channel string) time.Duration {
		start := time.Now()
		for i := range n {
			if err := ps.Publish(context.Background(), channel, action.Message{Message: payload, Sender: string(rune('a' + i%26))}); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	// The peer: the same publishes to no subscriber (encoding 48 MiB takes
	// seconds under -race on a busy machine, so no fixed bound holds).
	alone := publish("nobody")
	if d := publish("feed"); d > 2*alone+time.Second {
		t.Fatalf("publishing to a stalled client took %v, to none %v", d, alone) // it must not wait for the client
	}
	// Read until the burst is drained (a pause with nothing pushed),
	// then publish one more, which carries the count of any trailing drops.
	msgs := make(chan map[string]any)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return // the connection is closed by the test's cleanup
			}
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			select {
			case msgs <- m:
			case <-done:
				return
			}
		}
	}()
	got, dropped := 0, 0.0
	count := func(m map[string]any) {
		if d, ok := m["dropped"].(float64); ok {
			dropped += d
		}
	}
	for drained := false; !drained; {
		select {
		case m := <-msgs:
			count(m)
			got++
		case <-time.After(500 * time.Millisecond):
			drained = true
		}
	}
	if err := ps.Publish(context.Background(), "feed", action.Message{Message: "last"}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-msgs:
		if m["message"] != "last" {
			t.Fatalf("after the drain: %v", m)
		}
		count(m)
	case <-time.After(5 * time.Second):
		t.Fatal("the message after the drain did not come")
	}
	if dropped == 0 || got+int(dropped) != n {
		t.Fatalf("got %d and were told of %v dropped: want %d in all, some dropped", got, dropped, n)
	}
}
