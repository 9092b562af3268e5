package kv

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpkit/mcpkit/internal/pgtest"
)

// TestPostgresRoundTrips counts the round trips of the common
// transactions: a View that gets one key takes two (begin with the meta
// row, the read; its COMMIT is read at the connection's next use), an
// Update that inserts 1,000 growing keys, each after a Get that misses,
// three (begin with the lock, the first Get, the commit), and a cursor
// walk of 3,000 keys pages of growing size.
func TestPostgresRoundTrips(t *testing.T) {
	db, err := OpenPostgres(context.Background(), pgtest.Shared(t).StoreURL(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := db.(*pgDB)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%06d", i) }
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
					if b.Get(key(i)) != nil {
						return fmt.Errorf("key %d exists", i)
					}
					if err := b.Put(key(i), []byte("v")); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	trips("get", 2, func() error {
		return db.View(func(tx Tx) error {
			if v := tx.Bucket([]byte("b")).Get(key(7)); string(v) != "v" {
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
}
