package redisstate_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action/redisstate"
)

// watcher runs WatchRevoked on s until the test ends, recording what it
// is told.
type watcher struct {
	mu      sync.Mutex
	dropped [][]string
	lives   []bool
	live    chan bool
}

func watchRevoked(t *testing.T, s *redisstate.OAuthStore) *watcher {
	w := &watcher{live: make(chan bool, 16)}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.WatchRevoked(c, func(keys []string) {
			w.mu.Lock()
			w.dropped = append(w.dropped, keys)
			w.mu.Unlock()
		}, func(live bool) { w.live <- live })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("WatchRevoked returned %v, want context.Canceled", err)
		}
	})
	return w
}

// await waits for the watcher to report live as want.
func (w *watcher) await(t *testing.T, want bool) {
	t.Helper()
	for {
		select {
		case got := <-w.live:
			if got == want {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the watcher never reported live=%v", want)
		}
	}
}

func (w *watcher) drops() [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.dropped)
}

// TestOAuthRevocations: an announcement through one client returns once
// every watcher (on either client) has dropped its keys; a subscriber that
// never acknowledges holds it for the wait given and no longer; a watcher
// whose connection is killed reports it, listens again and then gets
// announcements again.
func TestOAuthRevocations(t *testing.T) {
	t.Parallel()
	c1, c2 := twoClients(t)
	a, b := redisstate.NewOAuthStore(c1, "app:"), redisstate.NewOAuthStore(c2, "app:")
	wa, wb := watchRevoked(t, a), watchRevoked(t, b)
	wa.await(t, true)
	wb.await(t, true)

	keys := []string{"access:01", "access:02"}
	start := time.Now()
	if err := a.AnnounceRevoked(ctx(t), keys, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for name, w := range map[string]*watcher{"a": wa, "b": wb} {
		if got := w.drops(); len(got) != 1 || !slices.Equal(got[0], keys) {
			t.Errorf("when the announcement returned, watcher %s had dropped %v", name, got)
		}
	}
	if took > time.Second {
		t.Errorf("the acknowledged announcement took %v", took)
	}

	// A subscriber that never acknowledges: the announcer waits it out.
	silent := c2.Subscribe(ctx(t), "app:oauth:revoked")
	defer silent.Close()
	if _, err := silent.Receive(ctx(t)); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := b.AnnounceRevoked(ctx(t), []string{"access:03"}, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("with a silent subscriber the announcement took %v, want its wait (300ms)", took)
	}
	silent.Close()

	// A killed subscription is reported, then listens again.
	if err := c1.Do(ctx(t), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	wa.await(t, false)
	wa.await(t, true)
	wb.await(t, false)
	wb.await(t, true)
	if err := b.AnnounceRevoked(ctx(t), []string{"access:04"}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := wa.drops(); len(got) != 3 || !slices.Equal(got[2], []string{"access:04"}) {
		t.Errorf("after listening again, watcher a dropped %v", got)
	}
}
