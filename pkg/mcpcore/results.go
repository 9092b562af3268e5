package mcpcore

import (
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/mcpkit/mcpkit/internal/fastpath"
)

// resultStore retains serialized tool results that are too large to return
// inline, so that an agent can read them back in byte ranges.
//
// It holds at most a byte budget in total; an entry lives for a fixed expiry
// from its creation (reads do not extend it) and is freed at expiry or on
// release, whichever comes first. A Put that does not fit fails with a
// [*LimitError]: nothing is evicted early and nothing is truncated.
type resultStore struct {
	budget int64
	expiry time.Duration
	now    func() time.Time

	mu      sync.Mutex
	used    int64
	entries map[string]*retained
	closed  bool
}

type retained struct {
	owner   string
	parts   [][]byte               // the result is their concatenation (see fastpath.EncodedJSONParts)
	mem     *fastpath.ResultMemory // where parts may lie, kept with them; nil: the heap
	size    int64
	expires time.Time
	timer   *time.Timer
}

// resultHandle identifies a retained result.
type resultHandle struct {
	ID         string
	TotalBytes int64
	ExpiresAt  time.Time
}

// resultChunk is one byte range of a retained result.
type resultChunk struct {
	Data       []byte
	Offset     int64
	TotalBytes int64
	NextOffset *int64 // nil at the end
}

// ResultStats summarizes a store for mcpkit://info.
type ResultStats struct {
	Retained    int   `json:"retained"`
	Bytes       int64 `json:"bytes"`
	BudgetBytes int64 `json:"budget_bytes"`
}

// newResultStore returns a store with the given budget and expiry. now may be
// nil (time.Now); tests pass a fake clock.
func newResultStore(budget int64, expiry time.Duration, now func() time.Time) *resultStore {
	if now == nil {
		now = time.Now
	}
	return &resultStore{budget: budget, expiry: expiry, now: now, entries: make(map[string]*retained)}
}

// Put retains data for owner (the reading tool's name) and returns its
// handle (see PutParts).
func (s *resultStore) Put(owner string, data []byte) (resultHandle, error) {
	return s.PutParts(owner, nil, [][]byte{data})
}

// PutParts retains the concatenation of parts, as they are (no copy), for
// owner and returns its handle; mem, when not nil, is the memory the parts
// lie in, kept as long as they are. After Close it retains nothing and
// returns an error matching [ErrClosed].
func (s *resultStore) PutParts(owner string, mem *fastpath.ResultMemory, parts [][]byte) (resultHandle, error) {
	var size int64
	for _, p := range parts {
		size += int64(len(p))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return resultHandle{}, fmt.Errorf("%w: a result of %d bytes that finished after shutdown began was not retained", ErrClosed, size)
	}
	s.sweepLocked()
	if s.used+size > s.budget {
		return resultHandle{}, &LimitError{Limit: "retained_result_bytes", Max: s.budget, Actual: s.used + size,
			Detail: fmt.Sprintf("result of %d bytes cannot be retained (%d bytes already retained); the operation itself completed: inspect state rather than re-running a write, or release results you have read", size, s.used)}
	}
	id := "r_" + rand.Text()
	e := &retained{owner: owner, parts: parts, mem: mem, size: size, expires: s.now().Add(s.expiry)}
	e.timer = time.AfterFunc(s.expiry, func() { s.drop(id, e) })
	s.entries[id] = e
	s.used += size
	return resultHandle{ID: id, TotalBytes: size, ExpiresAt: e.expires}, nil
}

// Read returns up to length bytes from offset. An offset equal to the total
// size returns an empty final chunk.
func (s *resultStore) Read(owner, id string, offset, length int64) (resultChunk, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(owner, id)
	if err != nil {
		return resultChunk{}, err
	}
	total := e.size
	if offset < 0 || offset > total {
		return resultChunk{}, &ParamError{Path: "/offset", Reason: fmt.Sprintf("%d is outside [0, %d]", offset, total)}
	}
	if length <= 0 {
		return resultChunk{}, &ParamError{Path: "/length", Reason: fmt.Sprintf("%d must be positive", length)}
	}
	end := min(offset+length, total)
	c := resultChunk{Data: e.slice(offset, end), Offset: offset, TotalBytes: total}
	if end < total {
		c.NextOffset = &end
	}
	return c, nil
}

// Release frees a result before its expiry.
func (s *resultStore) Release(owner, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(owner, id)
	if err != nil {
		return err
	}
	s.removeLocked(id, e)
	return nil
}

// Stats reports what the store holds now.
func (s *resultStore) Stats() ResultStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	return ResultStats{Retained: len(s.entries), Bytes: s.used, BudgetBytes: s.budget}
}

// Close releases every result, stops their timers and makes later Puts
// fail.
func (s *resultStore) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for id, e := range s.entries {
		s.removeLocked(id, e)
	}
}

func (s *resultStore) lookupLocked(owner, id string) (*retained, error) {
	e, ok := s.entries[id]
	if ok && !s.now().Before(e.expires) {
		s.removeLocked(id, e)
		ok = false
	}
	if !ok || e.owner != owner {
		return nil, fmt.Errorf("%w: %q is unknown, expired or released", ErrResultNotFound, id)
	}
	return e, nil
}

// sweepLocked drops entries whose expiry has passed on the store's clock; the
// timers do the same on the wall clock.
func (s *resultStore) sweepLocked() {
	now := s.now()
	for id, e := range s.entries {
		if !now.Before(e.expires) {
			s.removeLocked(id, e)
		}
	}
}

func (s *resultStore) drop(id string, e *retained) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries[id] == e {
		s.removeLocked(id, e)
	}
}

func (s *resultStore) removeLocked(id string, e *retained) {
	e.timer.Stop()
	delete(s.entries, id)
	s.used -= e.size
}

// slice returns bytes [from, to) of the result: a view of one part when
// they lie in one on the heap, else a copy (a view of a fastpath.ResultMemory would
// not keep it: the entry's release may free it while the bytes are read).
func (e *retained) slice(from, to int64) []byte {
	var out []byte
	var at int64 // offset of the part p
	for _, p := range e.parts {
		end := at + int64(len(p))
		if from < end && to > at {
			lo, hi := max(from, at)-at, min(to, end)-at
			if out == nil && from >= at && to <= end && e.mem == nil {
				return p[lo:hi]
			}
			if out == nil {
				out = make([]byte, 0, to-from)
			}
			out = append(out, p[lo:hi]...)
		}
		if at = end; at >= to {
			break
		}
	}
	if out == nil {
		return []byte{}
	}
	return out
}
