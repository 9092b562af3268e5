package kv

import (
	"context"
	"fmt"
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
