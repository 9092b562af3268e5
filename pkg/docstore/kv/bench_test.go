package kv_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// The benchmarks load 100,000 keys of 11 bytes with values of 100 bytes, in
// random order, 1,000 per Update, then read them back; ns/key is the figure
// to compare between backends.
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

// benchKeyOrder is the keys in the random order they are put and got.
func benchKeyOrder() [][]byte {
	keys := make([][]byte, benchKeys)
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
			for _, k := range keys[start : start+benchBatch] {
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

func perKey(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchKeys, "ns/key")
}

// BenchmarkPut: 100,000 keys into an empty store, 1,000 per Update.
func BenchmarkPut(b *testing.B) {
	keys := benchKeyOrder()
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				db := be.open(b)
				b.StartTimer()
				benchLoad(b, db, keys)
				b.StopTimer()
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			perKey(b)
		})
	}
}

// benchRead loads the keys into each backend but the syncing one and times
// read, run in one View per iteration.
func benchRead(b *testing.B, read func(keys [][]byte, bk kv.Bucket) error) {
	keys := benchKeyOrder()
	for _, be := range benchBackends[1:] {
		b.Run(be.name, func(b *testing.B) {
			db := be.open(b)
			b.Cleanup(func() { closeDB(b, db) })
			benchLoad(b, db, keys)
			b.ResetTimer()
			for range b.N {
				if err := db.View(func(tx kv.Tx) error { return read(keys, tx.Bucket([]byte("docs"))) }); err != nil {
					b.Fatal(err)
				}
			}
			perKey(b)
		})
	}
}

// BenchmarkGet: every key, in random order.
func BenchmarkGet(b *testing.B) {
	benchRead(b, func(keys [][]byte, bk kv.Bucket) error {
		for _, k := range keys {
			if bk.Get(k) == nil {
				return fmt.Errorf("key %s missing", k)
			}
		}
		return nil
	})
}

// BenchmarkCursorScan: every key in order with a cursor.
func BenchmarkCursorScan(b *testing.B) {
	benchRead(b, func(_ [][]byte, bk kv.Bucket) error {
		n := 0
		c := bk.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
		if n != benchKeys {
			return fmt.Errorf("scanned %d keys", n)
		}
		return nil
	})
}
