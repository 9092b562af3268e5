package redisstate_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/redisstate"
)

// rateStores are the implementations under test: each makes two stores
// sharing counts (two processes for Redis; one value twice in process).
var rateStores = impls(func() action.RateStore { return action.NewMemoryRateStore() },
	func(_ *testing.T, c redis.UniversalClient, prefix string) action.RateStore {
		return redisstate.NewRateStore(c, prefix)
	})

func hit(t *testing.T, s action.RateStore, key string, index int64, window time.Duration, cur, prev int64) {
	t.Helper()
	c, p, err := s.Hit(ctx(t), key, index, window)
	if err != nil || c != cur || p != prev {
		t.Fatalf("Hit(%q, %d, %v) = %d, %d, %v; want %d, %d", key, index, window, c, p, err, cur, prev)
	}
}

// Counts per key and window, the previous window's count, none two
// windows back; a key counted with another window length is counted apart.
func TestRateStoreCounts(t *testing.T) {
	conform(t, rateStores, func(t *testing.T, a, b action.RateStore) {
		hit(t, a, "ip:1", 100, time.Minute, 1, 0)
		hit(t, b, "ip:1", 100, time.Minute, 2, 0)
		hit(t, b, "ip:2", 100, time.Minute, 1, 0)
		hit(t, a, "ip:1", 101, time.Minute, 1, 2)
		hit(t, b, "ip:1", 101, time.Minute, 2, 2)
		hit(t, a, "ip:1", 103, time.Minute, 1, 0)
		hit(t, a, "ip:2", 102, time.Minute, 1, 0)
		hit(t, a, "ip:1", 7, time.Second, 1, 0)
		hit(t, b, "ip:1", 8, time.Second, 1, 1)
	})
}

// Peek sees what Hit would, through either store, without counting.
func TestRateStorePeek(t *testing.T) {
	conform(t, rateStores, func(t *testing.T, a, b action.RateStore) {
		peek := func(s action.RateStore, index int64, cur, prev int64) {
			t.Helper()
			c, p, err := s.Peek(ctx(t), "k", index, time.Minute)
			if err != nil || c != cur || p != prev {
				t.Fatalf("Peek(k, %d) = %d, %d, %v; want %d, %d", index, c, p, err, cur, prev)
			}
		}
		peek(a, 10, 0, 0)
		hit(t, a, "k", 10, time.Minute, 1, 0)
		hit(t, b, "k", 10, time.Minute, 2, 0)
		peek(b, 10, 2, 0)
		peek(a, 10, 2, 0)
		peek(a, 11, 0, 2)
		peek(b, 12, 0, 0)
		hit(t, a, "k", 10, time.Minute, 3, 0) // the peeks counted nothing
	})
}

// Concurrent hits through two stores lose no count.
func TestRateStoreConcurrent(t *testing.T) {
	conform(t, rateStores, func(t *testing.T, a, b action.RateStore) {
		var wg sync.WaitGroup
		for g := range 20 {
			wg.Go(func() {
				s := a
				if g%2 == 1 {
					s = b
				}
				for range 25 {
					if _, _, err := s.Hit(ctx(t), "k", 5, time.Minute); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		hit(t, a, "k", 5, time.Minute, 501, 0)
		hit(t, b, "k", 6, time.Minute, 1, 501)
	})
}

// Two app instances behind a load balancer share one limit through Redis.
func TestRedisRateLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	c1, c2 := twoClients(t)
	now := func() time.Time { return time.Unix(6000, 0) }
	var hs []http.Handler
	for _, c := range []action.RateStore{redisstate.NewRateStore(c1, "app:"), redisstate.NewRateStore(c2, "app:")} {
		app := action.NewApp("rateapp", "an app for rate limit tests")
		app.MustAdd(action.Action{
			Name: "ping", Description: "pong",
			Web: &action.Web{Method: "GET", Route: "/ping"},
			Run: func(context.Context, *action.Conn, any) (any, error) { return "pong", nil },
		})
		hs = append(hs, app.HTTPHandler(action.HTTPOptions{RateLimit: &action.RateLimit{Unauthenticated: 3, Store: c, Now: now}}))
	}
	var codes []string
	for i := range 5 {
		r := httptest.NewRequest("GET", "/api/ping", nil)
		r.RemoteAddr = "192.0.2.1:1000"
		w := httptest.NewRecorder()
		hs[i%2].ServeHTTP(w, r)
		codes = append(codes, fmt.Sprint(w.Code))
	}
	if got := strings.Join(codes, " "); got != "200 200 200 429 429" {
		t.Fatalf("codes %s, want three allowed across both instances", got)
	}
}

// A window's key expires two windows after its last hit; a window under a
// millisecond is refused.
func TestRedisRateStoreExpiry(t *testing.T) {
	t.Parallel()
	c, _ := twoClients(t)
	s := redisstate.NewRateStore(c, "p:")
	hit(t, s, "k", 1, time.Minute, 1, 0)
	keys, err := c.Keys(ctx(t), "*").Result()
	if err != nil || len(keys) != 1 || keys[0] != "p:rate:{k}:60000:1" {
		t.Fatalf("keys %q, %v", keys, err)
	}
	if ttl, err := c.PTTL(ctx(t), keys[0]).Result(); err != nil || ttl <= time.Minute || ttl > 2*time.Minute {
		t.Fatalf("PTTL %v, %v; want within two windows", ttl, err)
	}
	if _, _, err := s.Hit(ctx(t), "k", 1, time.Microsecond); err == nil || !strings.Contains(err.Error(), "under a millisecond") {
		t.Fatalf("a 1 µs window: %v", err)
	}
}
