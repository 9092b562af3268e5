package kv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/pgtest"
)

// openPair opens two DBs on one fresh store: a optimistic, b ordinary.
func openPair(t *testing.T, url string) (*pgDB, *pgDB) {
	var dbs [2]*pgDB
	for i, opts := range []Options{{NoSync: true, ViewsMayRerun: true}, {NoSync: true}} {
		db, err := OpenPostgres(context.Background(), url, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db.(*pgDB)
	}
	return dbs[0], dbs[1]
}

func mustUpdate(t *testing.T, db DB, fn func(Tx) error) {
	t.Helper()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// viewRuns runs fn in a View of db and returns how many times fn ran and
// how many round trips the View took.
func viewRuns(t *testing.T, db *pgDB, fn func(Tx) error) (runs int, trips int64) {
	t.Helper()
	before := db.trips.Load()
	if err := db.View(func(tx Tx) error { runs++; return fn(tx) }); err != nil {
		t.Fatal(err)
	}
	return runs, db.trips.Load() - before
}

// TestPostgresOptimisticViews: with ViewsMayRerun, a View that asks the
// epoch, a bucket and one key takes one round trip; whatever it was told
// from the process's last state and found stale makes it run again, as an
// ordinary View, and end with what that one sees: an epoch or a bucket
// another DB changed, a sequence, a write committed between two reads.
func TestPostgresOptimisticViews(t *testing.T) {
	a, b := openPair(t, pgtest.Shared(t).StoreURL())
	mustUpdate(t, b, func(tx Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte("docs"))
		for i := range 100 {
			err = bk.Put(pgKey(i), []byte("v"))
		}
		return err
	})
	get := func(i int, got *string) func(Tx) error {
		return func(tx Tx) error {
			*got = fmt.Sprint(tx.Epoch(), " ", string(tx.Bucket([]byte("docs")).Get(pgKey(i))))
			return nil
		}
	}
	var got string
	viewRuns(t, a, get(1, &got)) // a learns the state
	if runs, trips := viewRuns(t, a, get(2, &got)); runs != 1 || trips != 1 || got != "0 v" {
		t.Errorf("get: %d runs, %d round trips, %q; want 1, 1, \"0 v\"", runs, trips, got)
	}

	mustUpdate(t, b, func(tx Tx) error { return tx.BumpEpoch() })
	if runs, _ := viewRuns(t, a, get(3, &got)); runs != 2 || got != "1 v" {
		t.Errorf("after another DB's BumpEpoch: %d runs, %q; want 2, \"1 v\"", runs, got)
	}
	if runs, trips := viewRuns(t, a, get(4, &got)); runs != 1 || trips != 1 {
		t.Errorf("then: %d runs, %d round trips", runs, trips)
	}

	mustUpdate(t, b, func(tx Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("new")); return err })
	var exists bool
	runs, _ := viewRuns(t, a, func(tx Tx) error { exists = tx.Bucket([]byte("new")) != nil; return nil })
	if runs != 2 || !exists {
		t.Errorf("a bucket another DB created: %d runs, exists %t; want 2, true", runs, exists)
	}

	// Sequences: another bucket's change costs no re-run; asking one
	// that changed since does.
	mustUpdate(t, b, func(tx Tx) error { _, err := tx.Bucket([]byte("new")).NextSequence(); return err })
	if runs, _ := viewRuns(t, a, get(5, &got)); runs != 1 {
		t.Errorf("a sequence fn never asked moved: %d runs", runs)
	}
	mustUpdate(t, b, func(tx Tx) error { _, err := tx.Bucket([]byte("docs")).NextSequence(); return err })
	var seq uint64
	runs, _ = viewRuns(t, a, func(tx Tx) error {
		bk := tx.Bucket([]byte("docs"))
		bk.Get(pgKey(6))
		seq = bk.Sequence()
		return nil
	})
	if runs != 2 || seq != 1 {
		t.Errorf("a sequence asked after it moved: %d runs, sequence %d; want 2, 1", runs, seq)
	}

	// A write between the first read (alone) and the second.
	var first, second string
	runs, _ = viewRuns(t, a, func(tx Tx) error {
		bk := tx.Bucket([]byte("docs"))
		first = string(bk.Get(pgKey(7)))
		if first == "v" {
			mustUpdate(t, b, func(tx Tx) error {
				bk := tx.Bucket([]byte("docs"))
				if err := bk.Put(pgKey(7), []byte("w")); err != nil {
					return err
				}
				return bk.Put(pgKey(8), []byte("w"))
			})
		}
		second = string(bk.Get(pgKey(8)))
		return nil
	})
	if runs != 2 || first != "w" || second != "w" {
		t.Errorf("a write between two reads: %d runs, read %q then %q; want 2, w, w", runs, first, second)
	}
	if a.reruns.Load() != 4 {
		t.Errorf("%d re-runs counted, want 4", a.reruns.Load())
	}
}

// TestPostgresOptimisticRestart: an optimistic View whose first read meets
// a connection that died idle (the server restarted) runs again and
// succeeds; with the server down it fails with ErrUnavailable.
func TestPostgresOptimisticRestart(t *testing.T) {
	s := pgtest.Start(t, pgtest.Options{})
	a, _ := openPair(t, s.StoreURL())
	mustUpdate(t, a, func(tx Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte("docs"))
		if err == nil {
			err = bk.Put(pgKey(1), []byte("v"))
		}
		return err
	})
	read := func(tx Tx) error {
		if v := tx.Bucket([]byte("docs")).Get(pgKey(1)); string(v) != "v" {
			return fmt.Errorf("read %q", v)
		}
		return nil
	}
	if err := a.View(read); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := a.View(read); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	s.Stop()
	start := time.Now()
	if err := a.View(read); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("server down: %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

// TestPostgresOptimisticSpeculation: an optimistic View answered from the
// read cache before its first read assumes the last revision the process
// saw. Where the revisions assumed mostly held, it speculates: a View of
// cached keys and one key more takes one round trip (the key, with the
// meta row). Under writes of another DB between most Views, it reads the
// meta row first (two round trips) rather than run twice: with a write
// before every other View, one View ran twice, not one per write. Once
// the revisions hold again, it speculates again.
func TestPostgresOptimisticSpeculation(t *testing.T) {
	a, b := openPair(t, pgtest.Shared(t).StoreURL())
	mustUpdate(t, b, func(tx Tx) error { return putRound(tx, 0) })
	key := 0
	view := func(round int) (runs int, trips int64) {
		t.Helper()
		key++
		want := fmt.Sprintf("r%04d", round)
		return viewRuns(t, a, func(tx Tx) error {
			got, err := readBucket(tx, "c1")
			if err == nil && got != want {
				err = fmt.Errorf("c1: after the write of %s, read %s", want, got)
			}
			if v := string(tx.Bucket([]byte("c2")).Get(pgKey(key % cacheKeys))); err == nil && v != want {
				err = fmt.Errorf("c2: after the write of %s, read %s", want, v)
			}
			return err
		})
	}
	view(0) // fills the cache of c1
	if runs, trips := view(0); runs != 1 || trips != 1 {
		t.Errorf("speculating: %d runs, %d round trips, want 1, 1", runs, trips)
	}
	reruns := 0
	for round := 1; round <= 10; round++ {
		mustUpdate(t, b, func(tx Tx) error { return putRound(tx, round) })
		for range 2 {
			runs, _ := view(round)
			reruns += runs - 1
		}
	}
	if reruns != 1 {
		t.Errorf("with a write before every other View, %d Views ran twice, want 1", reruns)
	}
	if _, trips := view(10); trips != 2 {
		t.Errorf("after revisions assumed failed: %d round trips, want 2 (the meta row first)", trips)
	}
	held := 0
	for ; held <= speculationBound+rerunCost; held++ {
		if runs, trips := view(10); runs == 1 && trips == 1 {
			break
		}
	}
	if held > speculationBound+rerunCost {
		t.Errorf("after %d Views whose revision held, Views still read the meta row first", held)
	}
}
