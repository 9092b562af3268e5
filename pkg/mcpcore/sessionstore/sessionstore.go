// Package sessionstore holds what several mcpkit instances share so that any
// of them can serve a legacy streamable-HTTP session another one opened: one
// [Record] per session (its id, the principal that opened it, the SDK's
// session state as JSON, and an expiry), behind the small [Store] interface.
// [NewMemory] is the in-process implementation (one instance, or several
// handlers in one process); [NewRedis] keeps the records in Redis, for
// instances behind a load balancer.
//
// The package knows neither HTTP nor the MCP SDK: the state is opaque JSON
// to it. It starts no goroutine: expired records are dropped when they are
// looked up and, in batches, when records are saved.
package sessionstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// Record is one legacy session as the instances share it.
type Record struct {
	// ID is the session id (the Mcp-Session-Id header); never empty.
	ID string
	// Principal is the authenticated user that opened the session (the
	// token's UserID), or "" when the endpoint needs no authentication. Only
	// requests of the same principal may use the session.
	Principal string
	// State is the SDK's mcp.ServerSessionState encoded as JSON.
	State json.RawMessage
	// Expires is when the record lapses unless a request extends it; the
	// zero time means never.
	Expires time.Time
}

// Store keeps session records. Implementations are safe for concurrent use.
// A record past its Expires is absent to every method.
type Store interface {
	// Load returns the live record of session id and whether there is one.
	// If extend is after the record's expiry (and the record expires), the
	// expiry moves to extend first, so that a session in use stays alive on
	// every instance; a zero extend changes nothing.
	Load(ctx context.Context, id string, extend time.Time) (Record, bool, error)
	// Save creates or replaces the record rec.ID. It fails with
	// [ErrInvalidRecord] for an empty ID.
	Save(ctx context.Context, rec Record) error
	// Delete removes the record of session id; deleting a missing record is
	// not an error.
	Delete(ctx context.Context, id string) error
}

// ErrInvalidRecord is returned by Save for a record without an ID.
var ErrInvalidRecord = errors.New("invalid session record: empty ID")

// sweepEvery is how often, at most, Save scans a Memory store for expired
// records.
const sweepEvery = time.Minute

// Memory is a [Store] in this process's memory. Records are copied in and
// out, so callers may keep using their slices. The zero value is not
// usable: call [NewMemory].
type Memory struct {
	now func() time.Time // time.Now; replaced by tests

	mu        sync.Mutex
	recs      map[string]Record
	lastSweep time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{now: time.Now, recs: make(map[string]Record)}
}

// Load implements [Store].
func (m *Memory) Load(_ context.Context, id string, extend time.Time) (Record, bool, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[id]
	if !ok {
		return Record{}, false, nil
	}
	if expired(rec, now) {
		delete(m.recs, id)
		return Record{}, false, nil
	}
	if !rec.Expires.IsZero() && extend.After(rec.Expires) {
		rec.Expires = extend
		m.recs[id] = rec
	}
	rec.State = bytes.Clone(rec.State)
	return rec, true, nil
}

// Save implements [Store].
func (m *Memory) Save(_ context.Context, rec Record) error {
	if rec.ID == "" {
		return ErrInvalidRecord
	}
	rec.State = bytes.Clone(rec.State)
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.lastSweep) >= sweepEvery {
		m.lastSweep = now
		for id, r := range m.recs {
			if expired(r, now) {
				delete(m.recs, id)
			}
		}
	}
	m.recs[rec.ID] = rec
	return nil
}

// Delete implements [Store].
func (m *Memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, id)
	return nil
}

// Len returns the number of records held, expired ones not yet dropped
// included; it is for tests and diagnostics.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

func expired(rec Record, now time.Time) bool {
	return !rec.Expires.IsZero() && !now.Before(rec.Expires)
}
