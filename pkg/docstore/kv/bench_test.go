package kv_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// The benchmarks put keys of 11 bytes with values of 100 bytes in random
// order, 1,000 per Update, and read them back; every figure is per key
// (b.N keys), to compare between backends. Reads run over 100,000 keys.
const (
	benchKeys  = 100_000
	benchBatch = 1_000
)

var benchBackends = []struct {
	name string
	open func(b *testing.B) kv.DB
}{
	{"bolt-fsync", func(b *testing.B) kv.DB { return openBenchBolt(b, kv.Options{}) }},
	{"bolt-nosync", func(b *testing.B) kv.DB { return openBenchBolt(b, kv.Options{NoSync: true}) }},
	{"memory", func(*testing.B) kv.DB { return kv.OpenMemory() }},
}

func openBenchBolt(b *testing.B, opts kv.Options) kv.DB {
	db, err := kv.Open(filepath.Join(b.TempDir(), "bench.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// benchKeyOrder returns n keys in the random order they are put and got.
func benchKeyOrder(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "doc%08d", i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

func benchLoad(b *testing.B, db kv.DB, keys [][]byte) {
	value := make([]byte, 100)
	for start := 0; start < len(keys); start += benchBatch {
		err := db.Update(func(tx kv.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("docs"))
			if err != nil {
				return err
			}
			for _, k := range keys[start:min(start+benchBatch, len(keys))] {
				if err := bk.Put(k, value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut: b.N keys into an empty store, 1,000 per Update.
func BenchmarkPut(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			keys := benchKeyOrder(b.N)
			db := be.open(b)
			b.Cleanup(func() { closeDB(b, db) })
			b.ResetTimer()
			benchLoad(b, db, keys)
		})
	}
}

// benchRead loads 100,000 keys into each backend but the syncing one and
// times b.N reads in one View.
func benchRead(b *testing.B, read func(n int, keys [][]byte, bk kv.Bucket) error) {
	keys := benchKeyOrder(benchKeys)
	for _, be := range benchBackends[1:] {
		b.Run(be.name, func(b *testing.B) {
			db := be.open(b)
			b.Cleanup(func() { closeDB(b, db) })
			benchLoad(b, db, keys)
			b.ResetTimer()
			if err := db.View(func(tx kv.Tx) error { return read(b.N, keys, tx.Bucket([]byte("docs"))) }); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkGet: keys in random order.
func BenchmarkGet(b *testing.B) {
	benchRead(b, func(n int, keys [][]byte, bk kv.Bucket) error {
		for i := range n {
			if k := keys[i%len(keys)]; bk.Get(k) == nil {
				return fmt.Errorf("key %s missing", k)
			}
		}
		return nil
	})
}

// BenchmarkCursorScan: keys in order with a cursor, from the first again
// after the last.
func BenchmarkCursorScan(b *testing.B) {
	benchRead(b, func(n int, _ [][]byte, bk kv.Bucket) error {
		c := bk.Cursor()
		k, _ := c.First()
		for range n {
			if k == nil {
				return fmt.Errorf("the scan found no key")
			}
			if k, _ = c.Next(); k == nil {
				k, _ = c.First()
			}
		}
		return nil
	})
}
