// Package ttlmap is an in-process map of byte values that expire, behind
// the framework's in-process stores (web sessions, OAuth records). It
// drops an expired value when it is looked up and, at most once a minute,
// every expired value when one is put; it starts no goroutine. It is safe
// for concurrent use and keeps and returns copies.
package ttlmap

import (
	"sync"
	"time"
)

// Map is an expiring map; the zero value is not usable: use New.
type Map struct {
	mu        sync.Mutex
	records   map[string]record
	lastSweep time.Time
}

type record struct {
	value   []byte
	expires time.Time
}

// New returns an empty Map.
func New() *Map { return &Map{records: map[string]record{}} }

// Put creates or replaces key's value, expiring ttl from now.
func (m *Map) Put(key string, value []byte, ttl time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if now.Sub(m.lastSweep) >= time.Minute {
		m.lastSweep = now
		for k, r := range m.records {
			if !now.Before(r.expires) {
				delete(m.records, k)
			}
		}
	}
	m.records[key] = record{value: append([]byte(nil), value...), expires: now.Add(ttl)}
}

// Get returns key's value and whether it is there; with extend > 0 the
// value then expires extend from now (a sliding expiry).
func (m *Map) Get(key string, extend time.Duration) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.liveLocked(key)
	if !ok {
		return nil, false
	}
	if extend > 0 {
		r.expires = time.Now().Add(extend)
		m.records[key] = r
	}
	return append([]byte(nil), r.value...), true
}

// Take returns key's value and deletes it, atomically.
func (m *Map) Take(key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.liveLocked(key)
	if !ok {
		return nil, false
	}
	delete(m.records, key)
	return r.value, true
}

// Delete removes keys; missing ones are ignored.
func (m *Map) Delete(keys ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.records, k)
	}
}

// Len returns how many values the map holds, expired ones not yet dropped
// included.
func (m *Map) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.records)
}

// liveLocked returns key's record unless it has expired (then dropped).
func (m *Map) liveLocked(key string) (record, bool) {
	r, ok := m.records[key]
	if !ok {
		return r, false
	}
	if !time.Now().Before(r.expires) {
		delete(m.records, key)
		return r, false
	}
	return r, true
}
