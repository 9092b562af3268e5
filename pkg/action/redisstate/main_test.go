package redisstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// twoClients starts a disposable redis-server for t and returns two
// independent clients of it: two processes behind a load balancer.
func twoClients(t *testing.T) (*redis.Client, *redis.Client) {
	t.Helper()
	s := redistest.Start(t, redistest.Options{})
	var cs [2]*redis.Client
	for i := range cs {
		cs[i] = redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 2 * time.Second})
		c := cs[i]
		t.Cleanup(func() { _ = c.Close() })
	}
	return cs[0], cs[1]
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// impl is one implementation of an interface under a conformance test:
// new makes two values sharing state (two processes' views of one Redis;
// one in-process value twice).
type impl[T any] struct {
	name string
	new  func(t *testing.T) (a, b T)
}

// impls are the in-process implementation (one value shared) and the
// Redis one (two values on two clients of one disposable server, under
// one prefix).
func impls[T any](local func() T, remote func(t *testing.T, c redis.UniversalClient, prefix string) T) []impl[T] {
	return []impl[T]{
		{"local", func(*testing.T) (T, T) {
			v := local()
			return v, v
		}},
		{"redis", func(t *testing.T) (T, T) {
			c1, c2 := twoClients(t)
			return remote(t, c1, "app:"), remote(t, c2, "app:")
		}},
	}
}

// conform runs test on every implementation, in parallel.
func conform[T any](t *testing.T, impls []impl[T], test func(t *testing.T, a, b T)) {
	t.Parallel()
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			t.Parallel()
			a, b := im.new(t)
			test(t, a, b)
		})
	}
}
