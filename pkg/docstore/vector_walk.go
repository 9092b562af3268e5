package docstore

import (
	"math"
	"sync"
	"time"
)

// The linker, when it links many vectors at once (on every core),
// measures distances on a copy of the field's vectors in bfloat16 (the
// high half of each float32, rounded to nearest): the layer searches,
// and the picking and pruning of links, read half the bytes, and those
// bytes are what linking waits for. The node being linked is measured
// from its float32s. At 100,000 × 384 a layer search at ef_construction
// 40 took 120 µs against 285 µs on the float32s, the build ran about a
// quarter faster, and recall@10 stayed 0.999
// (docs/design/store-performance.md). Searches rank by the float32s.
//
// The copy lives in the linker between batches (walkCopies), so that a
// build of many batches converts each vector once. It holds the vectors
// of the snapshot its last batch was computed on, and names it by the
// field's random id and its link generation (meta "lg", which every
// batch the linker commits moves): while the file's link generation is
// the copy's, every vector written since that snapshot is still queued
// (a batch unqueues only the slots whose queued generation it linked),
// under a write generation past the snapshot's, so converting those
// queued slots brings the copy up to date (the others it holds already,
// which spares a large queue's being converted again at every batch). A batch
// that fails or loses to another process's linker (PostgreSQL) leaves
// the copy out, and one that does not match is rebuilt from the vectors,
// one conversion per slot. The file stays the whole truth. A copy costs
// 2 bytes a component in memory (77 MB for 100,000 × 384) until no batch
// has used it for linkSweep (the linker drops it then: a bulk load over,
// its copy goes; rebuilding one takes tens of milliseconds at that size),
// its collection is dropped or the store is closed; batches of fewer than
// hnswParallel vectors, which read the graph through their transaction,
// neither use nor keep one.

// walkCopy is a collection's vectors in bfloat16, as of the state id and
// lg name, written up to the write generation gen: walkChunk slots an
// array, so that the copy grows with the field without moving.
type walkCopy struct {
	id, lg, gen uint64
	dim         int
	chunks      [][]uint16
	used        time.Time // when a batch last put it back
}

// walkChunk is the slots of one of a walk copy's arrays.
const walkChunk = 1024

// at returns slot's bfloat16 components.
func (c *walkCopy) at(slot uint32) []uint16 {
	i := int(slot%walkChunk) * c.dim
	return c.chunks[slot/walkChunk][i : i+c.dim]
}

// resize makes room for n slots.
func (c *walkCopy) resize(n int) {
	want := (n + walkChunk - 1) / walkChunk
	c.chunks = c.chunks[:min(len(c.chunks), want)]
	for len(c.chunks) < want {
		c.chunks = append(c.chunks, make([]uint16, walkChunk*c.dim))
	}
}

// walkCopies holds a store's walk copies, by collection; a write takes
// its collection's out while it uses it.
type walkCopies struct {
	mu sync.Mutex
	m  map[string]*walkCopy
}

func (w *walkCopies) take(coll string) *walkCopy {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.m[coll]
	delete(w.m, coll)
	return c
}

func (w *walkCopies) put(coll string, c *walkCopy) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*walkCopy{}
	}
	c.used = time.Now()
	w.m[coll] = c
}

// dropUnused drops the copies last put back before since.
func (w *walkCopies) dropUnused(since time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for coll, c := range w.m {
		if c.used.Before(since) {
			delete(w.m, coll)
		}
	}
}

// forget drops coll's copy.
func (w *walkCopies) forget(coll string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, coll)
}

// reset drops every copy.
func (w *walkCopies) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m = nil
}

// takeWalk returns the walk copy of v's vectors as v's transaction holds
// them, taken from walks (or built) and brought up to date by converting
// the slots of queued written after the copy's write generation (a slot
// queued before it is as the copy holds it), on every core; v's caches
// are complete (loadAll). The caller puts it back, its lg set, once its
// batch commits.
func (v *vectors) takeWalk(walks *walkCopies, queued []queuedSlot) *walkCopy {
	c := walks.take(v.coll)
	if c == nil {
		c = &walkCopy{}
	}
	id, gen := v.version()
	defer func() { c.gen = gen }()
	n, dim := int(v.slots()), v.def.Dimension
	if c.id != id || c.lg != v.linkGen() || c.dim != dim {
		// Not the state of its last batch: every slot.
		if c.dim != dim {
			c.chunks = nil
		}
		c.id, c.dim = id, dim
		c.resize(n)
		inParallel(n, walkConvertRun, walkConvertRun, func(lo, hi int) {
			for s := lo; s < hi; s++ {
				toBF16(c.at(uint32(s)), v.vector(uint32(s)))
			}
		})
		return c
	}
	c.resize(n)
	var stale []uint32
	for _, q := range queued {
		if q.gen > c.gen {
			stale = append(stale, q.slot)
		}
	}
	inParallel(len(stale), walkConvertRun, walkConvertRun, func(lo, hi int) {
		for _, s := range stale[lo:hi] {
			toBF16(c.at(s), v.vector(s))
		}
	})
	return c
}

// walkConvertRun is how many slots a goroutine converts at a time.
const walkConvertRun = 256

// toBF16 sets dst to src in bfloat16, rounded to nearest (ties to even);
// a finite component too large for bfloat16 gets its largest finite
// value. A nil src (a slot never written) sets zeros.
func toBF16(dst []uint16, src []float32) {
	if src == nil {
		clear(dst)
		return
	}
	for i, x := range src[:len(dst)] {
		b := math.Float32bits(x)
		h := uint16((b + 0x7fff + (b>>16)&1) >> 16)
		if h&0x7f80 == 0x7f80 { // rounded up to infinity
			h = h&0x8000 | 0x7f7f
		}
		dst[i] = h
	}
}

// walkDistanceOf returns metric's distance (distanceOf) from a float32
// query to a bfloat16 vector.
func walkDistanceOf(metric string) func(a []float32, b []uint16) float32 {
	switch metric {
	case MetricDot:
		return func(a []float32, b []uint16) float32 { return -dotBF16(a, b) }
	case MetricL2:
		return sqL2BF16
	}
	return func(a []float32, b []uint16) float32 { return 1 - dotBF16(a, b) }
}

func bf16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func widenBF16Go(dst []float32, src []uint16) {
	for i := range dst {
		dst[i] = bf16(src[i])
	}
}

func dotBF16Go(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * bf16(b[i])
		s1 += a[i+1] * bf16(b[i+1])
		s2 += a[i+2] * bf16(b[i+2])
		s3 += a[i+3] * bf16(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += a[i] * bf16(b[i])
	}
	return s0 + s1 + s2 + s3
}

func sqL2BF16Go(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	var s float32
	for i, x := range a {
		d := x - bf16(b[i])
		s += d * d
	}
	return s
}
