package docstore

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// TestWalkCopyConverts checks the walk copy's conversion: each
// component's steps above its dimension's least value, rounded to
// nearest and held within the range, zeros for a slot never written, and
// the sums it keeps of what it holds.
func TestWalkCopyConverts(t *testing.T) {
	c := &walkCopy{dim: 3}
	c.setRanges([]float32{0, -1, 10}, []float32{255, 1.55, 35.5}) // steps 1, 0.01, 0.1
	c.resize(3)
	for _, tc := range []struct {
		in   []float32
		want []uint8
	}{
		{[]float32{3.4, -0.994, 10.26}, []uint8{3, 1, 3}},
		{[]float32{-5, 2, 40}, []uint8{0, 255, 255}}, // outside the range: its end
		{nil, []uint8{0, 100, 0}},                    // zeros
	} {
		c.set(1, tc.in)
		if got := c.at(1); !slices.Equal(got, tc.want) {
			t.Errorf("set(%v) = %v, want %v", tc.in, got, tc.want)
		}
		var want walkSums
		for i, u := range tc.want {
			x := c.lo[i] + float32(u)*c.step[i]
			want.norm += x * x
			want.lo += x * c.lo[i]
		}
		if got := *c.sumsOf(1); math.Abs(float64(got.norm-want.norm)) > 1e-3 || math.Abs(float64(got.lo-want.lo)) > 1e-3 {
			t.Errorf("set(%v): sums %+v, want %+v", tc.in, got, want)
		}
	}
	if got := c.at(0); !slices.Equal(got, []uint8{0, 0, 0}) {
		t.Errorf("an untouched slot holds %v", got)
	}
}

// TestU8Kernels checks the byte kernels (vector_amd64.s) against the same
// arithmetic in Go, at every length around their 8- and 32-component
// steps.
func TestU8Kernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 70; n++ {
		vs := randVecs(rng, 3, n)
		a, w, b := vs[0], vs[1], vs[2]
		u := make([]uint8, n)
		for i := range u {
			u[i] = uint8(rng.IntN(256))
		}
		var want float64
		for i := range n {
			want += float64(a[i]) * float64(u[i])
		}
		if got := dotU8(a, u); math.Abs(float64(got)-want) > 1e-4*float64(n)*255 {
			t.Errorf("n %d: dotU8 = %v, want %v", n, got, want)
		}
		if got := dotU8Go(a, u); math.Abs(float64(got)-want) > 1e-4*float64(n)*255 {
			t.Errorf("n %d: dotU8Go = %v, want %v", n, got, want)
		}
		got := make([]float32, n)
		stepCodes(got, u, w, b)
		for i := range n {
			if want := float32(u[i])*w[i] + b[i]; got[i] != want {
				t.Fatalf("n %d: stepCodes [%d] = %v, want %v", n, i, got[i], want)
			}
		}
	}
}

// TestWalkCopyDistances checks that the walk copy's distances, from a
// float32 query (query) and from another slot (queryOf), are the exact
// distances (distanceOf) within a small share of how much a query's
// distances differ, for each metric, on vectors with an outlier dimension
// (large in every vector, and varying as much as the others): the
// copy's ranges keep every dimension's variation.
func TestWalkCopyDistances(t *testing.T) {
	const dim, n = 64, 200
	rng := rand.New(rand.NewPCG(3, 4))
	vecs := randVecs(rng, n, dim)
	for _, v := range vecs {
		v[7] += 40
	}
	for _, metric := range []string{MetricCosine, MetricDot, MetricL2} {
		vs := vecs
		if metric == MetricCosine {
			vs = make([][]float32, n)
			for i, v := range vecs {
				vs[i] = normalized(v)
			}
		}
		c := &walkCopy{dim: dim, metric: metric}
		c.resize(n)
		lo, hi := slices.Clone(vs[0]), slices.Clone(vs[0])
		for _, v := range vs {
			for i, x := range v {
				lo[i], hi[i] = min(lo[i], x), max(hi[i], x)
			}
		}
		c.setRanges(lo, hi)
		for s, v := range vs {
			c.set(uint32(s), v)
		}
		exact := distanceOf(metric)
		for i := range 50 {
			want := make([]float64, n)
			var mean, sd float64
			for j := range n {
				want[j] = float64(exact(vs[i], vs[j]))
				mean += want[j] / n
			}
			for j := range n {
				sd += (want[j] - mean) * (want[j] - mean) / n
			}
			sd = math.Sqrt(sd)
			q, qo := c.query(nil, vs[i]), c.queryOf(nil, uint32(i))
			for j := range n {
				for _, got := range []float32{c.distance(q, uint32(j)), c.distance(qo, uint32(j))} {
					if off := math.Abs(float64(got) - want[j]); off > 0.05*sd {
						t.Fatalf("%s: vector %d to %d: the copy's distance %v, exact %v: off by %.3g of the query's distances' spread", metric, i, j, got, want[j], off/sd)
					}
				}
			}
		}
	}
}

func normalized(v []float32) []float32 {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / math.Sqrt(sq))
	}
	return out
}

// TestWalkCopyFollowsFile checks that the walk copy a batch of the linker
// measures through holds the vectors of the state the batch is computed
// on: built whole for the first batch; brought up to date from the queue
// after a batch during which some of its own slots were written again
// (they stay queued), others were added and deleted, and a write rolled
// back; and rebuilt after a batch too small to use it moved the link
// generation. The linker is stepped by hand.
func TestWalkCopyFollowsFile(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the linker links on one core, without a walk copy, when GOMAXPROCS is 1")
	}
	backends(t, func(t *testing.T, s *Store) {
		s.linker.stop()
		l := newLinker(s)
		s.linker = l
		const dim = 24 // not a multiple of 32: the kernels' tails
		rng := rand.New(rand.NewPCG(7, 8))
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: dim}, nil); err != nil {
			t.Fatal(err)
		}
		put := func(lo, hi int) []Doc {
			docs := make([]Doc, 0, hi-lo)
			for i, vec := range randVecs(rng, hi-lo, dim) {
				docs = append(docs, Doc{ID: Int(int64(lo + i)), Value: vecDoc(vec, i%10)})
			}
			return docs
		}
		compute := func(copied bool) *linkWork {
			t.Helper()
			b, err := l.compute(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			if (b.walk != nil) != copied {
				t.Fatalf("batch of %d: walk copy %v, want %v", len(b.queued), b.walk != nil, copied)
			}
			if copied {
				checkWalkCopy(t, s, "c", b.walk)
			}
			return b
		}
		apply := func(b *linkWork) {
			t.Helper()
			if err := l.apply("c", b); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.PutMany(ctx, "c", put(0, 300)); err != nil {
			t.Fatal(err)
		}
		b := compute(true)

		// While the batch is computed: its first 50 vectors written again,
		// 20 added, 10 deleted, and a write that rolls back.
		if _, err := s.PutMany(ctx, "c", append(put(0, 50), put(300, 320)...)); err != nil {
			t.Fatal(err)
		}
		for i := 250; i < 260; i++ {
			if _, err := s.Delete(ctx, "c", Int(int64(i))); err != nil {
				t.Fatal(err)
			}
		}
		boom := errors.New("boom")
		err := s.update(ctx, "c", func(w *writer) error {
			for _, d := range put(100, 200) {
				if _, err := w.store(d.ID, d.Value); err != nil {
					return err
				}
			}
			if err := w.finish(); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("rolled-back write: %v", err)
		}
		apply(b)
		if n, err := s.queuedVectors(ctx, "c"); err != nil || n != 70 {
			t.Fatalf("queued after the batch: %d, %v; want the 70 written while it was computed", n, err)
		}
		apply(compute(true)) // the copy brought up to date from the queue

		// A batch too small for the copy moves the link generation: the
		// next large one rebuilds it.
		if _, err := s.PutMany(ctx, "c", put(400, 410)); err != nil {
			t.Fatal(err)
		}
		apply(compute(false))
		if _, err := s.PutMany(ctx, "c", put(500, 600)); err != nil {
			t.Fatal(err)
		}
		apply(compute(true))
		if err := s.dropCollection("c"); err != nil {
			t.Fatal(err)
		}
		if l.walks.m["c"] != nil {
			t.Fatal("dropping the collection kept its walk copy")
		}
	})
}

// walkCopyStore opens a store in memory whose linker keeps walk copies
// (it links on every core), or skips the test.
func walkCopyStore(t *testing.T) *Store {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the linker links on one core, without a walk copy, when GOMAXPROCS is 1")
	}
	s, err := Open("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestWalkCopyGoesOnClose(t *testing.T) {
	s := walkCopyStore(t)
	docs := make([]Doc, 100)
	for i, vec := range randVecs(rand.New(rand.NewPCG(1, 1)), 100, 8) {
		docs[i] = Doc{ID: Int(int64(i)), Value: vecDoc(vec, 0)}
	}
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutMany(ctx, "c", docs); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitLinked(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	l := s.linker
	l.walks.mu.Lock()
	kept := l.walks.m["c"] != nil
	l.walks.mu.Unlock()
	if !kept {
		t.Fatal("the linker kept no walk copy")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if l.walks.m != nil {
		t.Fatal("Close kept the walk copies")
	}
}

// TestWalkCopyDroppedWhenUnused: the linker drops a walk copy no batch
// has used for its sweep interval, and the next large batch builds one
// again and links as before.
func TestWalkCopyDroppedWhenUnused(t *testing.T) {
	s := walkCopyStore(t)
	defer s.Close()
	s.linker.stop()
	l := newLinker(s)
	l.sweep = 3 * time.Second // the checks right after a batch have that long
	s.runLinker(l)
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
		t.Fatal(err)
	}
	vecs := randVecs(rand.New(rand.NewPCG(1, 1)), 200, 8)
	write := func(lo, hi int) {
		t.Helper()
		docs := make([]Doc, 0, hi-lo)
		for i := lo; i < hi; i++ {
			docs = append(docs, Doc{ID: Int(int64(i)), Value: vecDoc(vecs[i], 0)})
		}
		if _, err := s.PutMany(ctx, "c", docs); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitLinked(ctx, "c"); err != nil {
			t.Fatal(err)
		}
	}
	kept := func() *walkCopy {
		l.walks.mu.Lock()
		defer l.walks.mu.Unlock()
		return l.walks.m["c"]
	}
	write(0, 100)
	if kept() == nil {
		t.Fatal("the linker kept no walk copy after a batch")
	}
	deadline := time.Now().Add(30 * time.Second)
	for kept() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the walk copy was kept 30 s after its last use (sweep %v)", l.sweep)
		}
		time.Sleep(50 * time.Millisecond)
	}
	write(100, 200) // a copy built again
	c := kept()
	if c == nil {
		t.Fatal("the next batch kept no walk copy")
	}
	checkWalkCopy(t, s, "c", c)
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// checkWalkCopy fails unless c holds every slot's vector as coll's file
// has it now.
func checkWalkCopy(t *testing.T, s *Store, coll string, c *walkCopy) {
	t.Helper()
	err := s.db.View(func(tx kv.Tx) error {
		v, err := openVectors(tx, s.cat[coll])
		if err != nil {
			return err
		}
		if 2*c.trained <= int(v.slots()) {
			t.Fatalf("the copy was trained on %d slots, and the field has %d", c.trained, v.slots())
		}
		want := &walkCopy{dim: c.dim, lo: c.lo, step: c.step}
		want.resize(1)
		for slot := range v.slots() {
			want.set(0, v.vector(slot))
			if !slices.Equal(c.at(slot), want.at(0)) || *c.sumsOf(slot) != *want.sumsOf(0) {
				t.Fatalf("slot %d: copy %v, file %v", slot, c.at(slot), want.at(0))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
