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
