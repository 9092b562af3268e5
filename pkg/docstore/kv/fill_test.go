package kv_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// TestAppendsFillPages: on a bbolt file, a transaction that only appends to
// a bucket (every key put after every key it holds) leaves its pages full,
// while keys put among the existing ones keep bbolt's half-page splits,
// which suit random inserts (packing those would leave a trail of nearly
// empty pages).
func TestAppendsFillPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fill.db")
	db, err := kv.Open(path, kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	const n, perTx = 20_000, 500
	value := make([]byte, 100)
	k := func(i int) []byte { return fmt.Appendf(nil, "k%08d", i) }
	shuffled := rand.New(rand.NewPCG(3, 4)).Perm(n)
	for lo := 0; lo < n; lo += perTx {
		update(t, db, func(tx kv.Tx) error {
			asc, rnd, mix := mustBucket(t, tx, "asc"), mustBucket(t, tx, "rnd"), mustBucket(t, tx, "mix")
			for i := lo; i < lo+perTx; i++ {
				if err := asc.Put(k(i), value); err != nil {
					return err
				}
				if err := rnd.Put(k(shuffled[i]), value); err != nil {
					return err
				}
				// mix gets the same keys as asc, but each transaction
				// after the first puts its largest key first, so that
				// the others land among the keys it holds.
				j := i
				if i == lo && lo > 0 {
					j = i + perTx - 1
				} else if i == lo+perTx-1 && lo > 0 {
					j = lo
				}
				if err := mix.Put(k(j), value); err != nil {
					return err
				}
			}
			return nil
		})
	}
	closeDB(t, db)

	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	fill := map[string]float64{}
	if err := bdb.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"asc", "rnd", "mix"} {
			s := tx.Bucket([]byte(name)).Stats()
			if s.KeyN != n {
				return fmt.Errorf("bucket %s holds %d keys, want %d", name, s.KeyN, n)
			}
			fill[name] = float64(s.LeafInuse) / float64(s.LeafAlloc)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("leaf fill: %v", fill)
	if fill["asc"] < 0.9 {
		t.Errorf("appended pages are %.2f full, want at least 0.9", fill["asc"])
	}
	for _, name := range []string{"rnd", "mix"} {
		if fill[name] < 0.45 || fill[name] > 0.8 {
			t.Errorf("pages of keys put among others (%s) are %.2f full, want bbolt's half-page splits (0.45 to 0.8)", name, fill[name])
		}
	}
}
