package redisstate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/redisstate"
)

// closer is a PubSub with a Close (both implementations have one).
type closer interface {
	action.PubSub
	Close() error
}

// pubsubs are the implementations under test: each makes two PubSubs of
// one shared bus (two processes for Redis; one value twice in process).
var pubsubs = impls(func() closer { return action.NewLocalPubSub() },
	func(t *testing.T, c redis.UniversalClient, prefix string) closer {
		ps := redisstate.NewPubSub(c, prefix)
		t.Cleanup(func() { _ = ps.Close() })
		return ps
	})

func subscribe(t *testing.T, ps action.PubSub, channel string) action.Subscription {
	t.Helper()
	s, err := ps.Subscribe(ctx(t), channel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// next is s's next message, failing t after 5 s.
func next(t *testing.T, s action.Subscription) action.Message {
	t.Helper()
	select {
	case m, ok := <-s.C():
		if !ok {
			t.Fatal("subscription closed")
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message in 5 s")
	}
	return action.Message{}
}

func payload(m action.Message) string {
	raw, _ := m.Message.(json.RawMessage)
	return string(raw)
}

// nothingMore checks that s gets no other message before a sentinel
// published on channel after the expected ones.
func nothingMore(t *testing.T, ps action.PubSub, s action.Subscription, channel string) {
	t.Helper()
	if err := ps.Publish(ctx(t), channel, action.Message{Message: "sentinel"}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, s); payload(m) != `"sentinel"` {
		t.Fatalf("unexpected message %+v", m)
	}
}

func TestPubSubFanOut(t *testing.T) {
	conform(t, pubsubs, func(t *testing.T, pa, pb closer) {
		a, b, other := subscribe(t, pa, "room"), subscribe(t, pb, "room"), subscribe(t, pb, "other")
		if err := pb.Publish(ctx(t), "room", action.Message{Channel: "ignored", Message: map[string]int{"n": 1}, Sender: "s1"}); err != nil {
			t.Fatal(err)
		}
		if err := pa.Publish(ctx(t), "other", action.Message{Message: "second", Sender: "a:b\x00"}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []action.Subscription{a, b} {
			m := next(t, s)
			if _, ok := m.Message.(json.RawMessage); m.Channel != "room" || m.Sender != "s1" || !ok || payload(m) != `{"n":1}` {
				t.Fatalf("got %+v", m)
			}
		}
		if err := pa.Publish(ctx(t), "room", action.Message{Message: "sentinel"}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []action.Subscription{a, b} {
			if m := next(t, s); payload(m) != `"sentinel"` {
				t.Fatalf("unexpected message %+v", m)
			}
		}
		if m := next(t, other); m.Channel != "other" || m.Sender != "a:b\x00" || payload(m) != `"second"` {
			t.Fatalf("other got %+v", m)
		}
		nothingMore(t, pb, other, "other")
		// many messages arrive in publish order
		for i := range 100 {
			if err := pa.Publish(ctx(t), "room", action.Message{Message: i}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 100 {
			for _, s := range []action.Subscription{a, b} {
				if m := next(t, s); payload(m) != fmt.Sprint(i) {
					t.Fatalf("message %d is %s", i, payload(m))
				}
			}
		}
		_ = a.Close()
		_ = a.Close() // idempotent
		if _, open := <-a.C(); open {
			t.Fatal("a closed subscription's channel is open")
		}
		nothingMore(t, pa, b, "room") // b still gets the channel's messages
	})
}

// A subscriber that does not read loses what its buffer cannot hold, is
// told how many, keeps the oldest, and never blocks the publisher.
func TestPubSubDropsForSlowSubscriber(t *testing.T) {
	conform(t, pubsubs, func(t *testing.T, pa, pb closer) {
		slow, fast := subscribe(t, pa, "c"), subscribe(t, pb, "c")
		const extra = 44
		n := action.DefaultSubscriptionBuffer + extra
		for i := range n {
			if err := pb.Publish(ctx(t), "c", action.Message{Message: i}); err != nil {
				t.Fatal(err)
			}
			if m := next(t, fast); payload(m) != fmt.Sprint(i) {
				t.Fatalf("fast: message %d is %s", i, payload(m))
			}
		}
		if d := fast.Dropped(); d != 0 {
			t.Fatalf("the fast subscriber dropped %d", d)
		}
		// the slow one's deliveries may lag the fast one's (Redis: its
		// own connection)
		var dropped uint64
		for deadline := time.Now().Add(5 * time.Second); dropped < extra && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			dropped += slow.Dropped()
		}
		if dropped != extra {
			t.Fatalf("dropped %d, want %d", dropped, extra)
		}
		if d := slow.Dropped(); d != 0 {
			t.Fatalf("Dropped did not reset: %d", d)
		}
		for i := range action.DefaultSubscriptionBuffer {
			if m := next(t, slow); payload(m) != fmt.Sprint(i) {
				t.Fatalf("message %d is %s: the oldest must be kept", i, payload(m))
			}
		}
		nothingMore(t, pa, slow, "c")
	})
}

func TestPubSubErrors(t *testing.T) {
	conform(t, pubsubs, func(t *testing.T, ps, _ closer) {
		for _, ch := range []string{"", strings.Repeat("x", action.MaxChannelBytes+1)} {
			_, err := ps.Subscribe(ctx(t), ch)
			if e, ok := errors.AsType[*action.Error](err); !ok || e.Kind != action.KindInvalidParam || e.Field != "channel" {
				t.Fatalf("subscribe %d bytes: %v", len(ch), err)
			}
			if err := ps.Publish(ctx(t), ch, action.Message{}); !errors.As(err, new(*action.Error)) {
				t.Fatalf("publish %d bytes: %v", len(ch), err)
			}
		}
		s := subscribe(t, ps, "c")
		if err := ps.Publish(ctx(t), "c", action.Message{Message: func() {}}); err == nil || !strings.Contains(err.Error(), "encode") {
			t.Fatalf("unencodable payload: %v", err)
		}
		nothingMore(t, ps, s, "c") // the unencodable message was not delivered
		cctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := ps.Publish(cctx, "c", action.Message{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("publish with a cancelled context: %v", err)
		}
		if _, err := ps.Subscribe(cctx, "c"); !errors.Is(err, context.Canceled) {
			t.Fatalf("subscribe with a cancelled context: %v", err)
		}
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
		if _, open := <-s.C(); open {
			t.Fatal("Close left a subscription open")
		}
		_ = s.Close() // after the PubSub's Close: no panic
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ps.Publish(ctx(t), "c", action.Message{}); !errors.Is(err, action.ErrPubSubClosed) {
			t.Fatalf("publish after Close: %v", err)
		}
		if _, err := ps.Subscribe(ctx(t), "c"); !errors.Is(err, action.ErrPubSubClosed) {
			t.Fatalf("subscribe after Close: %v", err)
		}
	})
}

// Two prefixes on one Redis are two buses; a message on a PubSub's Redis
// channel that no PubSub published is ignored.
func TestRedisPubSubPrefixes(t *testing.T) {
	t.Parallel()
	c1, c2 := twoClients(t)
	a, b := redisstate.NewPubSub(c1, "a:"), redisstate.NewPubSub(c2, "b:")
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	sa, sb := subscribe(t, a, "c"), subscribe(t, b, "c")
	if err := a.Publish(ctx(t), "c", action.Message{Message: 1}); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"not framed", "9:short", "1:xnot json"} {
		if err := c2.Publish(ctx(t), "b:c", raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if m := next(t, sa); payload(m) != "1" {
		t.Fatalf("a got %+v", m)
	}
	nothingMore(t, a, sa, "c")
	nothingMore(t, b, sb, "c")
	if err := c2.Publish(ctx(t), "b:c", `0:{"raw":true}`).Err(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, sb); payload(m) != `{"raw":true}` || m.Sender != "" || m.Channel != "c" {
		t.Fatalf("b got %+v", m)
	}
}

// A subscription keeps working after its connection is cut (go-redis
// reconnects and subscribes again).
func TestRedisPubSubReconnects(t *testing.T) {
	t.Parallel()
	c1, c2 := twoClients(t)
	a := redisstate.NewPubSub(c1, "")
	t.Cleanup(func() { _ = a.Close() })
	s := subscribe(t, a, "c")
	if err := c2.ClientKillByFilter(ctx(t), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n, err := c2.PubSubNumSub(ctx(t), "c").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n["c"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not subscribed again after 5 s")
		}
	}
	if err := a.Publish(ctx(t), "c", action.Message{Message: "back"}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, s); payload(m) != `"back"` {
		t.Fatalf("got %+v", m)
	}
}
