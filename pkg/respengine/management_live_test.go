package respengine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestLiveLateOverview: when the overview arrives after open has stopped
// waiting for it (a second), open returns none and the first receive
// returns it first, once; when open returned it, no receive repeats it.
// A slow gateway is a fault the real one does not produce on demand, so a
// WebSocket server of the test's own sends the frames.
func TestLiveLateOverview(t *testing.T) {
	delay := make(chan time.Duration, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		time.Sleep(<-delay)
		for _, f := range []string{`{"type":"overview"}`, `{"type":"info_delta"}`} {
			if ws.Write(r.Context(), websocket.MessageText, []byte(f)) != nil {
				return
			}
		}
		ws.CloseRead(r.Context())
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	l := NewLive(t.Context(), NewManagement(ManagementOptions{}), LiveOptions{MaxHandles: 4, Idle: time.Minute})
	t.Cleanup(func() { l.Close(context.Background()) })
	target := &Target{Name: "gw", ManagementURL: srv.URL, ManagementToken: func() string { return "" }}
	sc := Scope{Principal: "p", Owner: "o"}
	frames := func(info LiveInfo) string {
		t.Helper()
		var got []string
		for {
			r, err := l.Receive(t.Context(), sc, info.Handle, LiveReceive{MaxFrames: 16, MaxBytes: 1 << 20, Wait: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r.TimedOut {
				return strings.Join(got, " ")
			}
			for _, f := range r.Frames {
				got = append(got, string(f.Value.(json.RawMessage)))
			}
		}
	}
	delay <- 1200 * time.Millisecond
	late, err := l.Open(t.Context(), sc, target, "")
	if err != nil || late.Overview != nil {
		t.Fatalf("late open: %v %+v", err, late)
	}
	if got := frames(late); got != `{"type":"overview"} {"type":"info_delta"}` {
		t.Fatalf("late: frames %s", got)
	}
	delay <- 0
	prompt, err := l.Open(t.Context(), sc, target, "")
	if err != nil || prompt.Overview == nil {
		t.Fatalf("prompt open: %v %+v", err, prompt)
	}
	if got := frames(prompt); got != `{"type":"info_delta"}` {
		t.Fatalf("prompt: frames %s", got)
	}
}
