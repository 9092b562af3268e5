package docstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// handLinker replaces s's linker with one the test steps by hand.
func handLinker(s *Store) *linker {
	s.linker.stop()
	l := newLinker(s)
	s.linker = l
	return l
}

// queuedOf returns the number of coll's vectors waiting to be linked, as
// Collections reports it.
func queuedOf(t *testing.T, s *Store, coll string) int {
	t.Helper()
	infos, err := s.Collections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Name == coll {
			return info.VectorsQueued
		}
	}
	t.Fatalf("no collection %q", coll)
	return 0
}

// TestLinkerQueue: vectors a write queues are found by approximate
// searches at once, exactly (measured beside the graph's walk), before and
// after the linker links them, a vector written again while its old node
// is in the graph included; Verify accepts a store with a queue, and a
// batch unqueues what it linked.
func TestLinkerQueue(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		l := handLinker(s)
		rng := rand.New(rand.NewPCG(3, 4))
		vecs := randVecs(rng, 300, 8)
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
			t.Fatal(err)
		}
		stored := map[int]bool{}
		put := func(ids []int) {
			t.Helper()
			var docs []Doc
			for _, i := range ids {
				stored[i] = true
				docs = append(docs, Doc{ID: Int(int64(i)), Value: vecDoc(vecs[i], i%10)})
			}
			if _, err := s.PutMany(ctx, "c", docs); err != nil {
				t.Fatal(err)
			}
		}
		deleted := map[int]bool{}
		checkSearches := func(what string, exact bool) {
			t.Helper()
			found := 0
			for i := range 20 {
				q := vecs[rng.IntN(len(vecs))]
				want := bruteForce(q, vecs, 10, MetricCosine, func(i int) bool { return stored[i] && !deleted[i] })
				got := hitIDs(vsearch(t, s, "c", SearchQuery{Vector: &VectorQuery{Vector: q, Approximate: true}, Limit: 10}))
				if exact && !slices.Equal(got, want) {
					t.Fatalf("%s: query %d: approximate %v, exact %v", what, i, got, want)
				}
				for _, id := range got {
					if slices.Contains(want, id) {
						found++
					}
				}
			}
			if recall := float64(found) / 200; recall < 0.95 {
				t.Fatalf("%s: recall@10 %.3f", what, recall)
			}
			if err := s.Verify(ctx); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		all := make([]int, 250)
		for i := range all {
			all[i] = i
		}
		put(all)
		if n := queuedOf(t, s, "c"); n != 250 {
			t.Fatalf("queued %d, want 250", n)
		}
		checkSearches("all queued", true) // no graph yet: every vector measured
		if more, err := l.linkBatch(ctx, "c"); more || err != nil {
			t.Fatalf("linkBatch: more %v, %v", more, err)
		}
		if n := queuedOf(t, s, "c"); n != 0 {
			t.Fatalf("queued %d after a batch, want 0", n)
		}
		checkSearches("linked", false)

		// New vectors for 20 linked documents (their nodes stay in the
		// graph until linked again), 10 deleted, 50 new.
		for i := range 20 {
			vecs[i] = randVecs(rng, 1, 8)[0]
		}
		put(all[:20])
		for i := 20; i < 30; i++ {
			if _, err := s.Delete(ctx, "c", Int(int64(i))); err != nil {
				t.Fatal(err)
			}
			deleted[i] = true
		}
		put([]int{250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269,
			270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289,
			290, 291, 292, 293, 294, 295, 296, 297, 298, 299})
		if n := queuedOf(t, s, "c"); n != 70 {
			t.Fatalf("queued %d, want 70", n)
		}
		for i := range 20 {
			got := hitIDs(vsearch(t, s, "c", SearchQuery{Vector: &VectorQuery{Vector: vecs[i], Approximate: true}, Limit: 3}))
			if len(got) == 0 || got[0] != int64(i) || slices.Contains(got[1:], int64(i)) {
				t.Fatalf("document %d's new vector, queued: hits %v", i, got)
			}
		}
		checkSearches("some queued", false)
		if more, err := l.linkBatch(ctx, "c"); more || err != nil {
			t.Fatalf("linkBatch: more %v, %v", more, err)
		}
		checkSearches("linked again", false)
	})
}

// TestLinkerStaleBatch: a batch computed on a graph that another batch
// changed before it was put (another process's linker, on PostgreSQL) is
// refused and nothing of it is written.
func TestLinkerStaleBatch(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		l := handLinker(s)
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
			t.Fatal(err)
		}
		var docs []Doc
		for i, vec := range randVecs(rand.New(rand.NewPCG(5, 6)), 100, 8) {
			docs = append(docs, Doc{ID: Int(int64(i)), Value: vecDoc(vec, 0)})
		}
		if _, err := s.PutMany(ctx, "c", docs); err != nil {
			t.Fatal(err)
		}
		first, err := l.compute(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		second, err := l.compute(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.apply("c", second); err != nil {
			t.Fatal(err)
		}
		if err := l.apply("c", first); !errors.Is(err, errLinkStale) {
			t.Fatalf("a batch of a graph since changed: %v, want errLinkStale", err)
		}
		if n := queuedOf(t, s, "c"); n != 0 {
			t.Fatalf("queued %d, want 0", n)
		}
	})
}

// TestLinkerSharedStore: two instances of one store on PostgreSQL, both
// linkers running, one of them writing: the vectors are linked once, the
// graph verifies, and either instance finds them.
func TestLinkerSharedStore(t *testing.T) {
	url := pgtest.Shared(t).StoreURL()
	a, b := openStoreAt(t, url), openStoreAt(t, url)
	if _, err := a.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 16}, nil); err != nil {
		t.Fatal(err)
	}
	vecs := randVecs(rand.New(rand.NewPCG(9, 9)), 3000, 16)
	for lo := 0; lo < len(vecs); lo += 500 {
		var docs []Doc
		for i := lo; i < lo+500; i++ {
			docs = append(docs, Doc{ID: Int(int64(i)), Value: vecDoc(vecs[i], 0)})
		}
		if _, err := a.PutMany(ctx, "c", docs); err != nil {
			t.Fatal(err)
		}
		b.linker.want("c") // as a write of b's own would
	}
	for _, s := range []*Store{a, b} {
		if err := s.WaitLinked(ctx, "c"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	found := 0
	for i := range 50 {
		q := vecs[i*7]
		want := bruteForce(q, vecs, 10, MetricCosine, nil)
		for _, id := range hitIDs(vsearch(t, b, "c", SearchQuery{Vector: &VectorQuery{Vector: q, Approximate: true}, Limit: 10})) {
			if slices.Contains(want, id) {
				found++
			}
		}
	}
	if recall := float64(found) / 500; recall < 0.95 {
		t.Fatalf("recall@10 %.3f", recall)
	}
}

// TestLinkerLease: on PostgreSQL a linker links a queue only while it
// holds its lease: another instance's linker leaves the queue alone until
// the lease is released (the queue linked) or has run out.
func TestLinkerLease(t *testing.T) {
	url := pgtest.Shared(t).StoreURL()
	a, b := openStoreAt(t, url), openStoreAt(t, url)
	la, lb := handLinker(a), handLinker(b)
	if !la.shared || !lb.shared {
		t.Fatal("linkers on PostgreSQL that do not know they share the store")
	}
	if _, err := a.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
		t.Fatal(err)
	}
	vecs := randVecs(rand.New(rand.NewPCG(6, 7)), 400, 8)
	put := func(lo, hi int) {
		t.Helper()
		var docs []Doc
		for i := lo; i < hi; i++ {
			docs = append(docs, Doc{ID: Int(int64(i)), Value: vecDoc(vecs[i], 0)})
		}
		if _, err := a.PutMany(ctx, "c", docs); err != nil {
			t.Fatal(err)
		}
	}
	linkBatch := func(l *linker, want error, queued int) {
		t.Helper()
		if _, err := l.linkBatch(ctx, "c"); !errors.Is(err, want) {
			t.Fatalf("linkBatch: %v, want %v", err, want)
		}
		if n := queuedOf(t, a, "c"); n != queued {
			t.Fatalf("queued %d, want %d", n, queued)
		}
	}
	put(0, 200)
	if queued, err := la.claim("c"); !queued || err != nil {
		t.Fatalf("claim: %v, %v", queued, err)
	}
	linkBatch(lb, errLinkHeld, 200)
	linkBatch(la, nil, 0) // and released
	put(200, 300)
	linkBatch(lb, nil, 0)
	put(300, 400)
	if queued, err := lb.claim("c"); !queued || err != nil {
		t.Fatalf("claim: %v, %v", queued, err)
	}
	linkBatch(la, errLinkHeld, 100)
	err := b.db.Update(func(tx kv.Tx) error { // b's process gone, its lease run out
		return tx.Bucket(vectorBucket("c", vecMeta)).Put(leaseKey, leaseValue(lb.token, time.Now().Add(-time.Second)))
	})
	if err != nil {
		t.Fatal(err)
	}
	linkBatch(la, nil, 0)
}

// TestLinkerReadOnly: a read-only open of a store with queued vectors
// searches them exactly and does not link them (WaitLinked says so); the
// next read-write open links them.
func TestLinkerReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	handLinker(s)
	vecs := randVecs(rand.New(rand.NewPCG(1, 3)), 100, 8)
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
		t.Fatal(err)
	}
	var docs []Doc
	for i, vec := range vecs {
		docs = append(docs, Doc{ID: Int(int64(i)), Value: vecDoc(vec, 0)})
	}
	if _, err := s.PutMany(ctx, "c", docs); err != nil {
		t.Fatal(err)
	}
	s.Close()

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	q := SearchQuery{Vector: &VectorQuery{Vector: vecs[7], Approximate: true}, Limit: 10}
	if got, want := hitIDs(vsearch(t, ro, "c", q)), bruteForce(vecs[7], vecs, 10, MetricCosine, nil); !slices.Equal(got, want) {
		t.Fatalf("read-only, queued: %v, exact %v", got, want)
	}
	if err := ro.WaitLinked(ctx, "c"); !errors.Is(err, kv.ErrReadOnly) {
		t.Fatalf("WaitLinked on a read-only store: %v, want kv.ErrReadOnly", err)
	}
	ro.Close()

	rw, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if err := rw.WaitLinked(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := queuedOf(t, rw, "c"); n != 0 {
		t.Fatalf("queued %d after a read-write open, want 0", n)
	}
	if err := rw.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLayout2Store: a store of layout 2 (every vector linked by its write,
// no queue) is read as it is, by a read-only open too, and a read-write
// open marks it layout 3 and queues new vectors.
func TestLayout2Store(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	vecs := randVecs(rand.New(rand.NewPCG(2, 3)), 200, 8)
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
		t.Fatal(err)
	}
	putVecs(t, s, "c", vecs[:150])
	err = s.db.Update(func(tx kv.Tx) error { // as layout 2 left it
		if err := tx.DeleteBucket(vectorBucket("c", vecQueue)); err != nil {
			return err
		}
		if err := tx.Bucket(vectorBucket("c", vecMeta)).Delete(linkGenKey); err != nil {
			return err
		}
		return tx.Bucket([]byte(metaBucket)).Put([]byte(layoutKey), []byte("2"))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	for _, readOnly := range []bool{true, false} {
		s, err := Open(path, Options{NoSync: true, ReadOnly: readOnly})
		if err != nil {
			t.Fatalf("read-only %v: %v", readOnly, err)
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatalf("read-only %v: %v", readOnly, err)
		}
		if got := hitIDs(vsearch(t, s, "c", SearchQuery{Vector: &VectorQuery{Vector: vecs[5], Approximate: true}, Limit: 1})); !slices.Equal(got, []int64{5}) {
			t.Fatalf("read-only %v: %v", readOnly, got)
		}
		if readOnly {
			s.Close()
			continue
		}
		var layout string
		if err := s.db.View(func(tx kv.Tx) error {
			layout = string(tx.Bucket([]byte(metaBucket)).Get([]byte(layoutKey)))
			return nil
		}); err != nil || layout != "3" {
			t.Fatalf("layout after a read-write open %q, %v; want 3", layout, err)
		}
		putVecs(t, s, "c", vecs)
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

// TestWaitLinkedClose: a WaitLinked under way returns when the store
// closes (its linker stopped midway), with ErrClosed.
func TestWaitLinkedClose(t *testing.T) {
	s, err := Open("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 64}, nil); err != nil {
		t.Fatal(err)
	}
	var docs []Doc
	for i, vec := range randVecs(rand.New(rand.NewPCG(4, 4)), 20_000, 64) {
		docs = append(docs, Doc{ID: Int(int64(i)), Value: vecDoc(vec, 0)})
	}
	if _, err := s.PutMany(ctx, "c", docs); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.WaitLinked(context.Background(), "c") }()
	time.Sleep(10 * time.Millisecond)
	s.Close()
	select {
	case err := <-waited:
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("WaitLinked: %v, want ErrClosed (or nil, had it finished first)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitLinked still waits after Close")
	}
}

// TestLinkErrorReported: a failed batch's error is what WaitLinked
// returns and what Collections reports, until a batch succeeds.
func TestLinkErrorReported(t *testing.T) {
	s := openStore(t, "memory")
	l := handLinker(s)
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "c", Int(1), vecDoc(randVecs(rand.New(rand.NewPCG(1, 1)), 1, 8)[0], 0)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("docstore: linking the vectors of \"c\": disk full")
	l.mu.Lock()
	l.failed["c"] = boom
	l.mu.Unlock()
	if err := s.WaitLinked(ctx, "c"); !errors.Is(err, boom) {
		t.Fatalf("WaitLinked: %v, want %v", err, boom)
	}
	infos, err := s.Collections(ctx)
	if err != nil || len(infos) != 1 || infos[0].LinkError != boom.Error() || infos[0].VectorsQueued != 1 {
		t.Fatalf("Collections: %+v, %v", infos, err)
	}
}
