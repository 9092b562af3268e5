package kv

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/pgtest"
)

// openPG opens a fresh store on the shared server, without a read cache:
// the tests that use it count the reads a transaction sends.
func openPG(t *testing.T) (DB, *pgDB) {
	db, err := OpenPostgres(context.Background(), pgtest.Shared(t).StoreURL()+"&"+cacheParam+"=0", Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, db.(*pgDB)
}

func pgKey(i int) []byte { return fmt.Appendf(nil, "k%06d", i) }

// TestPostgresRoundTrips counts the round trips of the common
// transactions: a View that gets one key takes two (begin with the meta
// row, the read; its COMMIT is read at the connection's next use), an
// Update that inserts 1,000 growing keys, each after a Get that misses,
// three (begin with the lock, the first Get, the commit), and a cursor
// walk of 3,000 keys pages of growing size.
func TestPostgresRoundTrips(t *testing.T) {
	db, d := openPG(t)
	trips := func(what string, want int64, fn func() error) {
		t.Helper()
		before := d.trips.Load()
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		if got := d.trips.Load() - before; got != want {
			t.Errorf("%s: %d round trips, want %d", what, got, want)
		}
	}
	trips("create", 2, func() error {
		return db.Update(func(tx Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("b")); return err })
	})
	for _, n := range []int{1000, 2000} {
		trips(fmt.Sprintf("ingest of 1,000 after %d", n-1000), 3, func() error {
			return db.Update(func(tx Tx) error {
				b := tx.Bucket([]byte("b"))
				for i := n - 1000; i < n; i++ {
					if b.Get(pgKey(i)) != nil {
						return fmt.Errorf("key %d exists", i)
					}
					if err := b.Put(pgKey(i), []byte("v")); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	trips("get", 2, func() error {
		return db.View(func(tx Tx) error {
			if v := tx.Bucket([]byte("b")).Get(pgKey(7)); string(v) != "v" {
				return fmt.Errorf("get: %q", v)
			}
			return nil
		})
	})
	// 32+64+...+1024 covers 2,016 keys in 6 pages; the last, short, ends the walk.
	trips("walk", 1+6, func() error {
		return db.View(func(tx Tx) error {
			c := tx.Bucket([]byte("b")).Cursor()
			n := 0
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				n++
			}
			if n != 2000 {
				return fmt.Errorf("walked %d keys", n)
			}
			return nil
		})
	})
	// Seeks to keys far apart fetch small pages, one each; keys
	// announced by Prefetch (present or not) are read in one round trip,
	// then Gets and Seeks of them take none.
	trips("seeks", 1+3, func() error {
		return db.View(func(tx Tx) error {
			b := tx.Bucket([]byte("b"))
			c := b.Cursor()
			for _, i := range []int{100, 900, 1700} {
				if k, _ := c.Seek(pgKey(i)); string(k) != string(pgKey(i)) {
					return fmt.Errorf("seek %d: %q", i, k)
				}
			}
			if n := b.(*pgBucket).known.rows.Len(); n != 3*seekPage {
				return fmt.Errorf("three seeks fetched %d keys, want %d", n, 3*seekPage)
			}
			return nil
		})
	})
	trips("prefetch", 1+1, func() error {
		return db.View(func(tx Tx) error {
			b := tx.Bucket([]byte("b"))
			keys := [][]byte{pgKey(1999), pgKey(5), pgKey(777), []byte("absent")}
			Prefetch(b, keys)
			for _, k := range keys[:3] {
				if string(b.Get(k)) != "v" {
					return fmt.Errorf("get %q after the prefetch", k)
				}
			}
			if b.Get(keys[3]) != nil {
				return fmt.Errorf("an absent key read")
			}
			c := b.Cursor()
			if k, _ := c.Seek(pgKey(777)); string(k) != string(pgKey(777)) {
				return fmt.Errorf("seek after the prefetch: %q", k)
			}
			return nil
		})
	})
}

// TestPostgresPrefetchRanges: the ranges announced by PrefetchRanges come
// in one round trip with the keys on either side of each, so that finding
// the block before each range (a Seek then a Prev) and walking each to its
// end take none; a range longer than a page is read whole all the same,
// its rest fetched as the walk goes.
func TestPostgresPrefetchRanges(t *testing.T) {
	db, d := openPG(t)
	err := db.Update(func(tx Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		for i := 0; i < 3000; i += 2 { // even keys only: a range's ends fall between keys
			if err := b.Put(pgKey(i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// walk returns the key before lo and the keys of [lo, hi), as the
	// document store's index scans read them.
	walk := func(b Bucket, lo, hi []byte) (before []byte, keys []string) {
		c := b.Cursor()
		k, _ := c.Seek(lo)
		if pk, _ := c.Prev(); pk != nil {
			before = pk
		}
		for k, _ = c.Seek(lo); k != nil && string(k) < string(hi); k, _ = c.Next() {
			keys = append(keys, string(k))
		}
		return before, keys
	}
	want := func(lo, hi int) (keys []string) {
		for i := lo + lo%2; i < min(hi, 3000); i += 2 {
			keys = append(keys, string(pgKey(i)))
		}
		return keys
	}
	ranges := [][2]int{{0, 9}, {101, 151}, {301, 351}, {2991, 4000}}
	kr := make([]Range, len(ranges))
	for i, r := range ranges {
		kr[i] = Range{Lo: pgKey(r[0]), Hi: pgKey(r[1])}
	}
	err = db.View(func(tx Tx) error {
		b := tx.Bucket([]byte("b"))
		b.Get(pgKey(0)) // begins the View: its round trip is not the prefetch's
		before := d.trips.Load()
		PrefetchRanges(b, kr)
		for i, r := range ranges {
			pk, keys := walk(b, kr[i].Lo, kr[i].Hi)
			if !slices.Equal(keys, want(r[0], r[1])) {
				return fmt.Errorf("range %v: %q", r, keys)
			}
			if wantBefore := r[0] - 1 - (r[0]-1)%2; r[0] > 0 && string(pk) != string(pgKey(wantBefore)) {
				return fmt.Errorf("range %v: the key before is %q", r, pk)
			}
		}
		if got := d.trips.Load() - before; got != 1 {
			return fmt.Errorf("%d ranges prefetched and walked in %d round trips, want 1", len(ranges), got)
		}
		// A range longer than a page: read whole, the rest fetched as it goes.
		long := Range{Lo: pgKey(400), Hi: pgKey(400 + 2*rangeRows + 500)}
		PrefetchRanges(b, []Range{long})
		if _, keys := walk(b, long.Lo, long.Hi); !slices.Equal(keys, want(400, 400+2*rangeRows+500)) {
			return fmt.Errorf("the long range: %d keys", len(keys))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := RoundTrips(db); !ok || n != d.trips.Load() {
		t.Errorf("RoundTrips: %d, %v", n, ok)
	}
}

// TestPostgresProbe: a transaction that puts many keys it never read asks
// for each bucket's last key first (one round trip), inserts the keys
// after it and upserts the others, which overwrite.
func TestPostgresProbe(t *testing.T) {
	db, d := openPG(t)
	put := func(from, to int, value string) error {
		return db.Update(func(tx Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			for i := from; i < to; i++ {
				if err := b.Put(pgKey(i), []byte(value)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := put(0, 100, "old"); err != nil {
		t.Fatal(err)
	}
	before := d.trips.Load()
	if err := put(50, 200, "new"); err != nil {
		t.Fatal(err)
	}
	if got := d.trips.Load() - before; got != 3 {
		t.Errorf("%d round trips, want 3 (begin, probe, commit)", got)
	}
	err := db.View(func(tx Tx) error {
		b := tx.Bucket([]byte("b"))
		if n := b.KeyN(); n != 200 {
			return fmt.Errorf("%d keys", n)
		}
		for i := range 200 {
			want := "new"
			if i < 50 {
				want = "old"
			}
			if got := b.Get(pgKey(i)); string(got) != want {
				return fmt.Errorf("key %d: %q", i, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPostgresLargeCommit: a transaction of more rows than one statement
// takes (maxChunkRows) commits them all, then deletes and overwrites them.
func TestPostgresLargeCommit(t *testing.T) {
	db, _ := openPG(t)
	const n = 2*maxChunkRows + 5000
	write := func(fn func(b Bucket, i int) error) {
		t.Helper()
		err := db.Update(func(tx Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			for i := 0; err == nil && i < n; i++ {
				err = fn(b, i)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(func(b Bucket, i int) error { return b.Put(pgKey(i), []byte("a")) })
	write(func(b Bucket, i int) error {
		if i%2 == 0 {
			return b.Delete(pgKey(i))
		}
		return b.Put(pgKey(i), []byte("b"))
	})
	err := db.View(func(tx Tx) error {
		b := tx.Bucket([]byte("b"))
		if got := b.KeyN(); got != n/2 {
			return fmt.Errorf("%d keys, want %d", got, n/2)
		}
		c := b.Cursor()
		i := 1
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if string(k) != string(pgKey(i)) || string(v) != "b" {
				return fmt.Errorf("key %q = %q, want %q = b", k, v, pgKey(i))
			}
			i += 2
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPostgresStatementsDocumented: docs/postgres.md lists every statement
// the backend sends, as it sends them.
func TestPostgresStatementsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/postgres.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if s, ok := strings.CutPrefix(line, "    "); ok {
			listed[s] = true
		}
	}
	st := reflect.ValueOf(newPGStatements(pgTables{meta: "mcpkit_NAME_meta", buckets: "mcpkit_NAME_buckets", kv: "mcpkit_NAME_kv"}))
	for i := range st.NumField() {
		f := st.Field(i)
		var sqls []string
		if f.Kind() == reflect.Slice {
			for j := range f.Len() {
				sqls = append(sqls, f.Index(j).String())
			}
		} else {
			sqls = append(sqls, f.String())
		}
		for _, sql := range sqls {
			if !listed[sql] {
				t.Errorf("%s is not listed in docs/postgres.md: %s", st.Type().Field(i).Name, sql)
			}
		}
	}
}

// TestPostgresPrefetchWithNext: keys, ranges and a count announced with
// PrefetchWithNext and KeyNWithNext, in two buckets, ride in the round
// trip of the transaction's next read (here its first, which begins it),
// and are then answered without another; what nothing reads after is
// never sent, and a bucket written before its KeyN counts its writes.
func TestPostgresPrefetchWithNext(t *testing.T) {
	db, d := openPG(t)
	err := db.Update(func(tx Tx) error {
		for _, name := range []string{"a", "b"} {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			for i := 0; i < 500; i += 2 {
				if err := b.Put(pgKey(i), []byte(name)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx Tx) error {
		a, b := tx.Bucket([]byte("a")), tx.Bucket([]byte("b"))
		before := d.trips.Load()
		PrefetchWithNext(a, [][]byte{pgKey(10), pgKey(11)}, []Range{{Lo: pgKey(100), Hi: pgKey(200)}})
		KeyNWithNext(a)
		if d.trips.Load() != before {
			return fmt.Errorf("an announcement made a round trip")
		}
		if string(b.Get(pgKey(4))) != "b" { // the next read, of another bucket
			return fmt.Errorf("b's key 4")
		}
		if string(a.Get(pgKey(10))) != "a" || a.Get(pgKey(11)) != nil {
			return fmt.Errorf("the announced keys of a")
		}
		c := a.Cursor()
		n := 0
		for k, _ := c.Seek(pgKey(100)); k != nil && string(k) < string(pgKey(200)); k, _ = c.Next() {
			n++
		}
		if n != 50 {
			return fmt.Errorf("the announced range of a: %d keys, want 50", n)
		}
		if n := a.KeyN(); n != 250 {
			return fmt.Errorf("a's KeyN %d, want 250", n)
		}
		if got := d.trips.Load() - before; got != 1 {
			return fmt.Errorf("the announced reads and the next read took %d round trips, want 1", got)
		}
		PrefetchWithNext(b, [][]byte{pgKey(300)}, nil) // nothing reads after: never sent
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx Tx) error {
		a := tx.Bucket([]byte("a"))
		KeyNWithNext(a)
		if err := a.Put(pgKey(1), []byte("a")); err != nil {
			return err
		}
		if n := a.KeyN(); n != 251 {
			return fmt.Errorf("KeyN after a put: %d, want 251", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
