package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/pgtest"
)

// cacheKeys is how many keys each bucket of the read cache's tests holds:
// more than a cursor's first pages, so that a walk reads several.
const cacheKeys = 400

// putRound writes round r's value into every key of buckets c1 and c2.
func putRound(tx Tx, r int) error {
	for _, name := range []string{"c1", "c2"} {
		b, err := tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			return err
		}
		for i := range cacheKeys {
			if err := b.Put(pgKey(i), fmt.Appendf(nil, "r%04d", r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// readBucket reads every key of bucket name in tx, by a walk and by Gets,
// and returns the one value they all hold, or an error saying what
// differs.
func readBucket(tx Tx, name string) (string, error) {
	b := tx.Bucket([]byte(name))
	if b == nil {
		return "", fmt.Errorf("no bucket %s", name)
	}
	seen := map[string]int{}
	n := 0
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		seen[string(v)]++
		n++
	}
	for i := 0; i < cacheKeys; i += 7 {
		seen[string(b.Get(pgKey(i)))]++
	}
	if n != cacheKeys || len(seen) != 1 {
		return "", fmt.Errorf("bucket %s: %d keys, values %v", name, n, seen)
	}
	for v := range seen {
		return v, nil
	}
	return "", nil
}

// TestPostgresReadCacheExact: two DBs on one store (two instances, in
// effect), each with its read cache, one with optimistic Views, the other
// ordinary. Both ways, a write on one is read by the other's next View
// though that View's reads were all in its cache (read-your-writes), the
// View after it is answered from the cache (one round trip: the meta row),
// and a write committed in the middle of a View answered from the cache
// never mixes states: the View reads the state before the write
// throughout, or runs again on the state after it.
func TestPostgresReadCacheExact(t *testing.T) {
	a, b := openPair(t, pgtest.Shared(t).StoreURL())
	mustUpdate(t, a, func(tx Tx) error { return putRound(tx, 0) })
	round := 0
	for _, pair := range []struct {
		name           string
		writer, reader *pgDB
	}{{"optimistic reader", b, a}, {"ordinary reader", a, b}, {"optimistic reader again", b, a}} {
		for range 3 {
			round++
			mustUpdate(t, pair.writer, func(tx Tx) error { return putRound(tx, round) })
			want := fmt.Sprintf("r%04d", round)
			for view := range 2 {
				runs, trips := viewRuns(t, pair.reader, func(tx Tx) error {
					for _, name := range []string{"c1", "c2"} {
						got, err := readBucket(tx, name)
						if err != nil {
							return err
						}
						if got != want {
							return fmt.Errorf("%s: after the write of %s, read %s", name, want, got)
						}
					}
					return nil
				})
				// The second View of a revision is answered from the cache
				// the first filled: one round trip (its meta row).
				if view == 1 && (runs != 1 || trips != 1) {
					t.Errorf("%s, round %d: a View of cached keys ran %d times in %d round trips, want once in 1", pair.name, round, runs, trips)
				}
			}
		}
		// A write in the middle of a View that read c1 from the cache and
		// reads c2 next (c2 not cached at that revision: its keys are read
		// from the server).
		round++
		mustUpdate(t, pair.writer, func(tx Tx) error { return putRound(tx, round) })
		if err := pair.reader.View(func(tx Tx) error { _, err := readBucket(tx, "c1"); return err }); err != nil {
			t.Fatal(err)
		}
		wrote := false
		var first, second string
		runs, _ := viewRuns(t, pair.reader, func(tx Tx) error {
			var err error
			if first, err = readBucket(tx, "c1"); err != nil {
				return err
			}
			if !wrote {
				wrote = true
				mustUpdate(t, pair.writer, func(tx Tx) error { return putRound(tx, round+1) })
			}
			second, err = readBucket(tx, "c2")
			return err
		})
		if first != second {
			t.Errorf("%s: a View read c1 %s and c2 %s across a write (%d runs)", pair.name, first, second, runs)
		}
		round++
	}
}

// TestPostgresReadCacheBudget: mcpkit_read_cache bounds the cache's bytes
// (buckets used least recently are dropped, a bucket alone starts over),
// what is read past the budget stays exact, and 0 turns the cache off.
func TestPostgresReadCacheBudget(t *testing.T) {
	url := pgtest.Shared(t).StoreURL()
	const budget = 6000 // about two of the three buckets' 400 rows of 8-byte keys and 5-byte values
	small, err := OpenPostgres(context.Background(), url+"&"+cacheParam+fmt.Sprintf("=%d", budget), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	d := small.(*pgDB)
	mustUpdate(t, d, func(tx Tx) error {
		if err := putRound(tx, 1); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists([]byte("c3"))
		for i := range cacheKeys {
			if err == nil {
				err = b.Put(pgKey(i), []byte("r0001"))
			}
		}
		return err
	})
	for range 3 {
		for _, name := range []string{"c1", "c2", "c3"} {
			if err := d.View(func(tx Tx) error {
				got, err := readBucket(tx, name)
				if err == nil && got != "r0001" {
					err = fmt.Errorf("%s: %s", name, got)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			c := d.rcache.Load()
			c.mu.Lock()
			size, n := c.size, len(c.buckets)
			c.mu.Unlock()
			if size > budget || size <= 0 {
				t.Fatalf("after reading %s, the cache holds %d bytes of %d buckets, budget %d", name, size, n, budget)
			}
		}
	}

	off, err := OpenPostgres(context.Background(), url+"&"+cacheParam+"=0", Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	for range 2 {
		if err := off.View(func(tx Tx) error { _, err := readBucket(tx, "c1"); return err }); err != nil {
			t.Fatal(err)
		}
	}
	if c := off.(*pgDB).rcache.Load(); c != nil {
		t.Errorf("%s=0: a cache of %d bytes", cacheParam, c.size)
	}

	for _, bad := range []string{"-1", "lots", "1e6"} {
		_, err := OpenPostgres(context.Background(), url+"&"+cacheParam+"="+bad, Options{})
		if err == nil || !strings.Contains(err.Error(), cacheParam) {
			t.Errorf("%s=%s: %v", cacheParam, bad, err)
		}
	}
}

// dumpStore returns everything tx sees: each bucket's key count, its keys
// and values walked forward and backward, and Gets of keys present and
// absent.
func dumpStore(tx Tx) string {
	var sb strings.Builder
	_ = tx.ForEachBucket(func(name []byte, b Bucket) error {
		fmt.Fprintf(&sb, "%s n=%d:", name, b.KeyN())
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			fmt.Fprintf(&sb, " %s=%s", k, v)
		}
		sb.WriteString(" |")
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			fmt.Fprintf(&sb, " %s", k)
		}
		sb.WriteString(" | get")
		for i := 0; i < writeKeys; i += 5 {
			fmt.Fprintf(&sb, " %s", b.Get(pgKey(i)))
		}
		sb.WriteString("\n")
		return nil
	})
	return sb.String()
}

// writeKeys is the key space of TestPostgresReadCacheWriteThrough.
const writeKeys = 300

// randomWrites puts and deletes keys of buckets w1..w3 at random, reading
// some first (through the cache), and now and then deletes w3 and makes
// it again.
func randomWrites(tx Tx, rng *rand.Rand, round int) error {
	if rng.IntN(4) == 0 {
		if tx.Bucket([]byte("w3")) != nil {
			if err := tx.DeleteBucket([]byte("w3")); err != nil {
				return err
			}
		}
	}
	for _, name := range []string{"w1", "w2", "w3"} {
		b, err := tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			return err
		}
		for range 1 + rng.IntN(60) {
			k := pgKey(rng.IntN(writeKeys))
			switch v := b.Get(k); {
			case v != nil && rng.IntN(2) == 0:
				err = b.Delete(k)
			case rng.IntN(5) == 0:
				err = b.Delete(k)
			default:
				err = b.Put(k, fmt.Appendf(nil, "r%d.%d", round, rng.IntN(10)))
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// TestPostgresReadCacheWriteThrough: a write reads through the process's
// cache and, committed, advances it to the revision it made with its
// writes applied. Two DBs on one store write in turns (random puts and
// deletes, a bucket deleted and made again), a write fails after reading
// and writing, a write commits on one DB in the middle of a View of the
// other and of its own; after each step both DBs read exactly what a DB
// without a cache reads. After a DB's own write, its next View is answered
// from the cache (one round trip).
func TestPostgresReadCacheWriteThrough(t *testing.T) {
	url := pgtest.Shared(t).StoreURL()
	a, b := openPair(t, url)
	truthDB, err := OpenPostgres(context.Background(), url+"&"+cacheParam+"=0", Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer truthDB.Close()
	truth := truthDB.(*pgDB)
	dump := func(db *pgDB) (string, int64) {
		var s string
		_, trips := viewRuns(t, db, func(tx Tx) error { s = dumpStore(tx); return nil })
		return s, trips
	}
	check := func(step string) {
		t.Helper()
		want, _ := dump(truth)
		for name, db := range map[string]*pgDB{"a": a, "b": b} {
			if got, _ := dump(db); got != want {
				t.Fatalf("%s: %s reads\n%s\nwant\n%s", step, name, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(27, 5))
	mustUpdate(t, a, func(tx Tx) error { return randomWrites(tx, rng, 0) })
	check("first write")
	errFailed := errors.New("failed on purpose")
	for round := 1; round <= 12; round++ {
		writer, other := a, b
		if round%2 == 0 {
			writer, other = b, a
		}
		// The writer's own write after a View that read everything: its
		// next View takes one round trip.
		mustUpdate(t, writer, func(tx Tx) error { return randomWrites(tx, rng, round) })
		if got, trips := dump(writer); trips != 1 {
			t.Errorf("round %d: the View after the DB's own write took %d round trips, want 1 (from the cache):\n%s", round, trips, got)
		}
		check(fmt.Sprintf("round %d, own write", round))
		// A write that fails after reading and writing leaves nothing.
		if err := writer.Update(func(tx Tx) error {
			if err := randomWrites(tx, rng, -round); err != nil {
				return err
			}
			return errFailed
		}); !errors.Is(err, errFailed) {
			t.Fatalf("round %d: a failed write returned %v", round, err)
		}
		check(fmt.Sprintf("round %d, failed write", round))
		// Two writes in a row, the other DB's between two of the writer's.
		mustUpdate(t, other, func(tx Tx) error { return randomWrites(tx, rng, round) })
		mustUpdate(t, writer, func(tx Tx) error { return randomWrites(tx, rng, round) })
		check(fmt.Sprintf("round %d, writes in turns", round))
		// A write committed in the middle of a View of each DB: the View
		// reads the state before it throughout (or runs again, optimistic,
		// on the state after it).
		for _, reader := range []*pgDB{writer, other} {
			wrote := false
			var before, after, during string
			runs, _ := viewRuns(t, reader, func(tx Tx) error {
				before = dumpStore(tx)
				if !wrote {
					wrote = true
					mustUpdate(t, writer, func(tx Tx) error { return randomWrites(tx, rng, round) })
				}
				during = dumpStore(tx)
				return nil
			})
			after, _ = dump(truth)
			if before != during {
				t.Fatalf("round %d: a View read two states across a write of its own DB (%d runs):\n%s\nthen\n%s", round, runs, before, during)
			}
			if runs == 2 && during != after {
				t.Fatalf("round %d: a View run again read\n%s\nwant\n%s", round, during, after)
			}
			check(fmt.Sprintf("round %d, write during a View", round))
		}
	}
}
