package action_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/action"
)

func subscribe(t *testing.T, ps action.PubSub, channel string) action.Subscription {
	t.Helper()
	s, err := ps.Subscribe(context.Background(), channel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestLocalPubSubFanOut(t *testing.T) {
	t.Parallel()
	ps := action.NewLocalPubSub()
	ctx := context.Background()
	a, b, other := subscribe(t, ps, "room"), subscribe(t, ps, "room"), subscribe(t, ps, "other")
	if err := ps.Publish(ctx, "room", action.Message{Channel: "ignored", Message: map[string]int{"n": 1}, Sender: "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := ps.Publish(ctx, "other", action.Message{Message: "second"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []action.Subscription{a, b} {
		m := <-s.C()
		raw, ok := m.Message.(json.RawMessage)
		if m.Channel != "room" || m.Sender != "s1" || !ok || string(raw) != `{"n":1}` {
			t.Fatalf("got %+v", m)
		}
		if len(s.C()) != 0 {
			t.Fatalf("a room subscriber got %d more messages", len(s.C()))
		}
	}
	if m := <-other.C(); m.Channel != "other" || string(m.Message.(json.RawMessage)) != `"second"` || len(other.C()) != 0 {
		t.Fatalf("other got %+v and %d more", m, len(other.C()))
	}
	if n := ps.Subscribers("room"); n != 2 {
		t.Fatalf("room has %d subscribers, want 2", n)
	}
	_ = a.Close()
	_ = a.Close() // idempotent
	if _, open := <-a.C(); open {
		t.Fatal("a closed subscription's channel is open")
	}
	if n := ps.Subscribers("room"); n != 1 {
		t.Fatalf("room has %d subscribers after a close, want 1", n)
	}
}

// A subscriber that does not read loses what its buffer cannot hold, is
// told how many, and never blocks the publisher.
func TestLocalPubSubDropsForSlowSubscriber(t *testing.T) {
	t.Parallel()
	ps := action.NewLocalPubSub()
	slow, fast := subscribe(t, ps, "c"), subscribe(t, ps, "c")
	const extra = 44
	for i := range action.DefaultSubscriptionBuffer + extra {
		if err := ps.Publish(context.Background(), "c", action.Message{Message: i}); err != nil {
			t.Fatal(err)
		}
		if i < action.DefaultSubscriptionBuffer {
			<-fast.C()
		}
	}
	if n := slow.Dropped(); n != extra {
		t.Fatalf("dropped %d, want %d", n, extra)
	}
	if n := slow.Dropped(); n != 0 {
		t.Fatalf("Dropped did not reset: %d", n)
	}
	if n := fast.Dropped(); n != 0 {
		t.Fatalf("the fast subscriber dropped %d", n)
	}
	for i := range action.DefaultSubscriptionBuffer {
		m := <-slow.C()
		if got := string(m.Message.(json.RawMessage)); got != strings.TrimSpace(string(mustJSON(t, i))) {
			t.Fatalf("message %d is %s: the oldest must be kept", i, got)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLocalPubSubErrors(t *testing.T) {
	t.Parallel()
	ps := action.NewLocalPubSub()
	ctx := context.Background()
	for _, ch := range []string{"", strings.Repeat("x", action.MaxChannelBytes+1)} {
		_, err := ps.Subscribe(ctx, ch)
		if e, ok := errors.AsType[*action.Error](err); !ok || e.Kind != action.KindInvalidParam || e.Field != "channel" {
			t.Fatalf("subscribe %d bytes: %v", len(ch), err)
		}
		if err := ps.Publish(ctx, ch, action.Message{}); !errors.As(err, new(*action.Error)) {
			t.Fatalf("publish %d bytes: %v", len(ch), err)
		}
	}
	s := subscribe(t, ps, "c")
	if err := ps.Publish(ctx, "c", action.Message{Message: func() {}}); err == nil || !strings.Contains(err.Error(), "encode") {
		t.Fatalf("unencodable payload: %v", err)
	}
	if len(s.C()) != 0 {
		t.Fatal("an unencodable message was delivered")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := ps.Publish(cctx, "c", action.Message{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("publish with a cancelled context: %v", err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	if _, open := <-s.C(); open {
		t.Fatal("Close left a subscription open")
	}
	_ = s.Close() // after the PubSub's Close: no panic
	if err := ps.Publish(ctx, "c", action.Message{}); !errors.Is(err, action.ErrPubSubClosed) {
		t.Fatalf("publish after Close: %v", err)
	}
	if _, err := ps.Subscribe(ctx, "c"); !errors.Is(err, action.ErrPubSubClosed) {
		t.Fatalf("subscribe after Close: %v", err)
	}
}
