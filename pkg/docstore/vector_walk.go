package docstore

import (
	"math"
	"slices"
	"sync"
	"time"
)

// The linker, when it links many vectors at once (on every core),
// measures distances on a copy of the field's vectors in bytes: each
// component as one of 256 steps between its dimension's least and
// greatest value among the vectors the copy was trained on. The layer
// searches, and the picking and pruning of links, read a quarter of the
// float32s' bytes, and those bytes are what linking waits for. A range
// per dimension rather than per vector keeps the small components of a
// vector whose other components are large, and a range rather than a
// magnitude keeps the variation of a dimension that is large in every
// vector (embedding models have such outlier dimensions).
//
// With x = lo + step·u for the step codes u, a dot product with a
// float32 query q is Σ q·lo + Σ (q·step)·u: walkCopy.query computes the
// node being linked's q·step and Σ q·lo once from its float32s, and a
// distance is then one dot product of float32s with bytes; each slot
// keeps its own Σ x·lo and squared norm for the distances measured from
// it (queryOf) and for l2. At 100,000 × 384 the build ran about 5%
// faster than on a copy in bfloat16 (twice these bytes), and recall@10
// stayed 0.999 (docs/design/store-performance.md). Searches rank by the
// float32s.
//
// The ranges are trained when the copy is built, on every vector it
// holds; a vector converted later with a component outside its
// dimension's range gets the range's end, and the copy is trained and
// built again once the field has twice the slots it was trained on, so
// that a bulk load converts each vector about twice.
//
// The copy lives in the linker between batches (walkCopies), so that a
// build of many batches does not convert every vector at every batch. It holds the vectors
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
// a byte a component and 8 bytes a slot in memory (39 MB for 100,000 ×
// 384) until no batch has used it for linkSweep (the linker drops it
// then: a bulk load over, its copy goes; rebuilding one takes tens of
// milliseconds at that size), its collection is dropped or the store is
// closed; batches of fewer than hnswParallel vectors, which read the graph
// through their transaction, neither use nor keep one.

// walkCopy is a collection's vectors in bytes, as of the state id and lg
// name, written up to the write generation gen: walkChunk slots an array,
// so that the copy grows with the field without moving.
type walkCopy struct {
	id, lg, gen uint64
	dim         int
	metric      string
	lo, step    []float32 // component i is lo[i] + step[i] times its code
	loStep      []float32 // lo[i]·step[i] (queryOf)
	step2       []float32 // step[i]² (queryOf)
	trained     int       // the slots the ranges were trained on
	codes       [][]uint8
	sums        [][]walkSums
	used        time.Time // when a batch last put it back
}

// walkSums is what the walk copy keeps of a slot's vector x, as it holds
// it, besides its codes.
type walkSums struct {
	norm float32 // Σ x²
	lo   float32 // Σ x·lo
}

// walkChunk is the slots of one of a walk copy's arrays.
const walkChunk = 1024

// at returns slot's codes.
func (c *walkCopy) at(slot uint32) []uint8 {
	i := int(slot%walkChunk) * c.dim
	return c.codes[slot/walkChunk][i : i+c.dim]
}

func (c *walkCopy) sumsOf(slot uint32) *walkSums { return &c.sums[slot/walkChunk][slot%walkChunk] }

// resize makes room for n slots.
func (c *walkCopy) resize(n int) {
	want := (n + walkChunk - 1) / walkChunk
	c.codes = c.codes[:min(len(c.codes), want)]
	c.sums = c.sums[:len(c.codes)]
	for len(c.codes) < want {
		c.codes = append(c.codes, make([]uint8, walkChunk*c.dim))
		c.sums = append(c.sums, make([]walkSums, walkChunk))
	}
}

// train sets the ranges from the n slots of v (a slot never written
// counts as zeros).
func (c *walkCopy) train(v *vectors, n int) {
	unset := func() (lo, hi []float32) {
		lo, hi = make([]float32, c.dim), make([]float32, c.dim)
		for i := range lo {
			lo[i], hi[i] = math.MaxFloat32, -math.MaxFloat32
		}
		return lo, hi
	}
	lo, hi := unset()
	var mu sync.Mutex
	inParallel(n, walkConvertRun, walkConvertRun, func(first, end int) {
		rlo, rhi := unset()
		for s := first; s < end; s++ {
			vec := v.vector(uint32(s))
			if vec == nil {
				vec = make([]float32, c.dim)
			}
			for i, x := range vec[:c.dim] {
				rlo[i], rhi[i] = min(rlo[i], x), max(rhi[i], x)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range lo {
			lo[i], hi[i] = min(lo[i], rlo[i]), max(hi[i], rhi[i])
		}
	})
	c.setRanges(lo, hi)
	c.trained = n
}

// setRanges sets the ranges of the components to lo[i]..hi[i].
func (c *walkCopy) setRanges(lo, hi []float32) {
	n := len(lo)
	c.lo, c.step, c.loStep, c.step2 = slices.Clone(lo), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range lo {
		c.step[i] = 1
		if hi[i] > lo[i] {
			c.step[i] = (hi[i] - lo[i]) / 255
		}
		c.loStep[i] = lo[i] * c.step[i]
		c.step2[i] = c.step[i] * c.step[i]
	}
}

// set converts src into slot: each component's steps above its
// dimension's least value, rounded to nearest and held within the range.
// A nil src (a slot never written) is zeros.
func (c *walkCopy) set(slot uint32, src []float32) {
	dst := c.at(slot)
	var sums walkSums
	for i := range dst {
		var x float32
		if src != nil {
			x = src[i]
		}
		u := uint8(max(0, min(255, math.Round(float64((x-c.lo[i])/c.step[i])))))
		dst[i] = u
		x = c.lo[i] + float32(u)*c.step[i]
		sums.norm += x * x
		sums.lo += x * c.lo[i]
	}
	*c.sumsOf(slot) = sums
}

// query returns q in the form distance measures from: q·step for each
// component, then Σ q·lo and Σ q²; dst is reused when large enough.
func (c *walkCopy) query(dst, q []float32) []float32 {
	dst = growFloats(dst, c.dim+2)
	var lo, norm float32
	for i, x := range q[:c.dim] {
		dst[i] = x * c.step[i]
		lo += x * c.lo[i]
		norm += x * x
	}
	dst[c.dim], dst[c.dim+1] = lo, norm
	return dst
}

// queryOf returns slot's vector, as the copy holds it, in the form of
// query.
func (c *walkCopy) queryOf(dst []float32, slot uint32) []float32 {
	dst = growFloats(dst, c.dim+2)
	stepCodes(dst[:c.dim], c.at(slot), c.step2, c.loStep) // (lo + step·u)·step
	sums := c.sumsOf(slot)
	dst[c.dim], dst[c.dim+1] = sums.lo, sums.norm
	return dst
}

func growFloats(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// distance returns the field's distance (distanceOf) from q, in the form
// query returns, to slot's vector.
func (c *walkCopy) distance(q []float32, slot uint32) float32 {
	d := q[c.dim] + dotU8(q[:c.dim], c.at(slot))
	switch c.metric {
	case MetricDot:
		return -d
	case MetricL2:
		return q[c.dim+1] + c.sumsOf(slot).norm - 2*d
	}
	return 1 - d
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
	if c.id != id || c.lg != v.linkGen() || c.dim != dim || c.metric != v.def.Metric || n >= 2*c.trained {
		// Not the state of its last batch, or grown past its training:
		// every slot, on ranges trained afresh.
		if c.dim != dim {
			c.codes, c.sums = nil, nil
		}
		c.id, c.dim, c.metric = id, dim, v.def.Metric
		c.resize(n)
		c.train(v, n)
		inParallel(n, walkConvertRun, walkConvertRun, func(lo, hi int) {
			for s := lo; s < hi; s++ {
				c.set(uint32(s), v.vector(uint32(s)))
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
			c.set(s, v.vector(s))
		}
	})
	return c
}

// walkConvertRun is how many slots a goroutine converts at a time.
const walkConvertRun = 256

func stepCodesGo(dst []float32, u []uint8, w, b []float32) {
	for i := range dst {
		dst[i] = float32(u[i])*w[i] + b[i]
	}
}

func dotU8Go(a []float32, b []uint8) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * float32(b[i])
		s1 += a[i+1] * float32(b[i+1])
		s2 += a[i+2] * float32(b[i+2])
		s3 += a[i+3] * float32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += a[i] * float32(b[i])
	}
	return s0 + s1 + s2 + s3
}
