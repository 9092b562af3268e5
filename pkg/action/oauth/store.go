package oauth

import (
	"context"
	"sync"
	"time"
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

// MemoryStore is an in-process [Store]. It drops an expired record when it
// is looked up and, at most once a minute, all expired records when one is
// put; it starts no goroutine.
type MemoryStore struct {
	now func() time.Time

	mu        sync.Mutex
	records   map[string]memoryRecord
	lastSweep time.Time
}

type memoryRecord struct {
	value   []byte
	expires time.Time
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{now: time.Now, records: map[string]memoryRecord{}}
}

// Put implements [Store]; it keeps a copy of value.
func (m *MemoryStore) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if now.Sub(m.lastSweep) >= time.Minute {
		m.lastSweep = now
		for k, r := range m.records {
			if !now.Before(r.expires) {
				delete(m.records, k)
			}
		}
	}
	m.records[key] = memoryRecord{value: append([]byte(nil), value...), expires: now.Add(ttl)}
	return nil
}

// Get implements [Store]; the value is a copy.
func (m *MemoryStore) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.liveLocked(key)
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), r.value...), true, nil
}

// Take implements [Store].
func (m *MemoryStore) Take(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.liveLocked(key)
	if !ok {
		return nil, false, nil
	}
	delete(m.records, key)
	return r.value, true, nil
}

// Delete implements [Store].
func (m *MemoryStore) Delete(_ context.Context, keys ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.records, k)
	}
	return nil
}

// Len returns how many records the store holds, expired ones not yet
// dropped included.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.records)
}

func (m *MemoryStore) liveLocked(key string) (memoryRecord, bool) {
	r, ok := m.records[key]
	if !ok {
		return r, false
	}
	if !m.now().Before(r.expires) {
		delete(m.records, key)
		return r, false
	}
	return r, true
}
