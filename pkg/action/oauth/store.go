package oauth

import (
	"context"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action/internal/ttlmap"
)

// Store keeps the server's records (clients, codes, tokens) by key, each
// with its own expiry. Implementations are safe for concurrent use; a
// record past its expiry is absent to every method. The server makes the
// keys and never passes a code or token in clear: their keys hold a
// SHA-256 digest. A shared store (Redis) lets every instance of an app
// verify every token.
type Store interface {
	// Put creates or replaces key's value, expiring ttl from now.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Get returns key's value and whether it is there.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Take returns key's value and deletes it, atomically: of concurrent
	// Takes of one key at most one finds it (single-use codes and
	// refresh tokens rely on this).
	Take(ctx context.Context, key string) ([]byte, bool, error)
	// Delete removes keys; missing ones are not an error.
	Delete(ctx context.Context, keys ...string) error
}

// Revocations is implemented by a [Store] shared between instances that
// also carries revocations to all of them (redisstate.OAuthStore), so
// that each drops a revoked token from its verification cache before the
// revocation is answered.
type Revocations interface {
	// AnnounceRevoked tells every instance watching (WatchRevoked) that
	// the records keys are gone, and returns once each of them has
	// called its drop with them, or after wait at the latest.
	AnnounceRevoked(ctx context.Context, keys []string, wait time.Duration) error
	// WatchRevoked calls drop with the keys of every announcement, from
	// any instance, until ctx ends; live(true) once it listens, and
	// live(false) whenever it may miss announcements (its connection
	// failed), before listening again. It returns when ctx ends, or with
	// the error that stops it listening for good.
	WatchRevoked(ctx context.Context, drop func(keys []string), live func(bool)) error
}

// MemoryStore is an in-process [Store]. It drops an expired record when it
// is looked up and, at most once a minute, all expired records when one is
// put; it starts no goroutine.
type MemoryStore struct {
	records *ttlmap.Map
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{records: ttlmap.New()} }

// Put implements [Store]; it keeps a copy of value.
func (m *MemoryStore) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	m.records.Put(key, value, ttl)
	return nil
}

// Get implements [Store]; the value is a copy.
func (m *MemoryStore) Get(_ context.Context, key string) ([]byte, bool, error) {
	value, ok := m.records.Get(key, 0)
	return value, ok, nil
}

// Take implements [Store].
func (m *MemoryStore) Take(_ context.Context, key string) ([]byte, bool, error) {
	value, ok := m.records.Take(key)
	return value, ok, nil
}

// Delete implements [Store].
func (m *MemoryStore) Delete(_ context.Context, keys ...string) error {
	m.records.Delete(keys...)
	return nil
}

// Len returns how many records the store holds, expired ones not yet
// dropped included.
func (m *MemoryStore) Len() int { return m.records.Len() }
