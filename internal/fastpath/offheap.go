package fastpath

import (
	"runtime"
	"sync"
)

// ResultMemory is memory outside the Go heap for a large result that a tool
// writes in parts ([EncodedJSONParts]) and the host may retain for paging.
// Retained on the heap, such a result would let the garbage collector's
// headroom (GOGC: as much again as the live heap) double its cost while it
// is paged; outside it, the collector paces on the rest of the heap. The
// memory is returned to the system once the ResultMemory is unreachable
// (a cleanup, at a collection), so every slice of it must be used only
// while the ResultMemory is reachable: the host copies what it reads out
// of retained parts, and joins inline ones into heap memory.
type ResultMemory struct{ list *offHeapList }

// offHeapList is the mappings of one ResultMemory, apart from it so that
// its cleanup can free them without keeping it reachable.
type offHeapList struct {
	mu       sync.Mutex
	mappings [][]byte
}

// NewResultMemory returns an empty ResultMemory.
func NewResultMemory() *ResultMemory {
	m := &ResultMemory{list: new(offHeapList)}
	runtime.AddCleanup(m, (*offHeapList).free, m.list)
	return m
}

// Buffer returns an empty buffer with room for n bytes, outside the Go heap
// where the platform maps anonymous memory (else an ordinary buffer). Bytes
// appended past its capacity go, as append does, to a new heap buffer.
func (m *ResultMemory) Buffer(n int) []byte {
	b, err := mapAnon(max(n, 1))
	if err != nil {
		return make([]byte, 0, n)
	}
	m.list.mu.Lock()
	m.list.mappings = append(m.list.mappings, b)
	m.list.mu.Unlock()
	return b[:0]
}

func (l *offHeapList) free() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.mappings {
		unmapAnon(b)
	}
	l.mappings = nil
}
