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

func TestToBF16(t *testing.T) {
	maxf := math.MaxFloat32
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{0, 0},
		{math.Float32frombits(0x3f808000), 0x3f80}, // a tie: to even
		{math.Float32frombits(0x3f818000), 0x3f82}, // a tie: to even
		{math.Float32frombits(0x3f808001), 0x3f81}, // above the tie
		{float32(maxf), 0x7f7f},                    // would round to infinity
		{float32(-maxf), 0xff7f},
	} {
		got := []uint16{0xffff}
		toBF16(got, []float32{c.in})
		if got[0] != c.want {
			t.Errorf("toBF16(%v) = %#04x, want %#04x", c.in, got[0], c.want)
		}
	}
	got := []uint16{1, 2}
	toBF16(got, nil)
	if got[0] != 0 || got[1] != 0 {
		t.Errorf("toBF16(nil) = %v, want zeros", got)
	}
}

// TestBF16Kernels checks the bfloat16 kernels (vector_amd64.s) against
// the same arithmetic in Go, at every length around their 8- and
// 32-component steps.
func TestBF16Kernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 70; n++ {
		a := randVecs(rng, 1, n)[0]
		b := make([]uint16, n)
		toBF16(b, randVecs(rng, 1, n)[0])
		wide := make([]float32, n)
		widenBF16(wide, b)
		var dot, l2 float64
		for i := range n {
			if wide[i] != bf16(b[i]) {
				t.Fatalf("n %d: widenBF16 [%d] = %v, want %v", n, i, wide[i], bf16(b[i]))
			}
			dot += float64(a[i]) * float64(wide[i])
			d := float64(a[i]) - float64(wide[i])
			l2 += d * d
		}
		if got := dotBF16(a, b); math.Abs(float64(got)-dot) > 1e-4*float64(n) {
			t.Errorf("n %d: dotBF16 = %v, want %v", n, got, dot)
		}
		if got := sqL2BF16(a, b); math.Abs(float64(got)-l2) > 1e-4*float64(n) {
			t.Errorf("n %d: sqL2BF16 = %v, want %v", n, got, l2)
		}
	}
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
		want := make([]uint16, v.def.Dimension)
		for slot := range v.slots() {
			toBF16(want, v.vector(slot))
			if !slices.Equal(c.at(slot), want) {
				t.Fatalf("slot %d: copy %v, file %v", slot, c.at(slot), want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
