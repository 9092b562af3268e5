package kv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCursorCheckMirrorsBolt: a cursorCheck stays on the element bbolt's
// cursor is on through any sequence of moves (first, last, seek, next,
// prev, past either end and back), over buckets of several levels, with
// sparse leaves (deletes) and overflow pages, so that it checks exactly
// the pages bbolt's cursor is about to read.
func TestCursorCheckMirrorsBolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx Tx) error {
		many, _ := tx.CreateBucketIfNotExists([]byte("many"))
		big, _ := tx.CreateBucketIfNotExists([]byte("big"))
		one, _ := tx.CreateBucketIfNotExists([]byte("one"))
		for i := range 20000 {
			if err := many.Put(fmt.Appendf(nil, "k%06d", i), bytes.Repeat([]byte{'v'}, 100)); err != nil {
				return err
			}
		}
		for i := range 40 {
			if err := big.Put(fmt.Appendf(nil, "b%03d", i), bytes.Repeat([]byte{'b'}, 3*os.Getpagesize())); err != nil {
				return err
			}
		}
		for i := range 300 { // a root leaf of its own page, past the inline size
			if err := one.Put(fmt.Appendf(nil, "o%03d", i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx Tx) error { // sparse leaves
		b := tx.Bucket([]byte("many"))
		for i := 0; i < 20000; i += 3 {
			if i%1000 < 900 {
				if err := b.Delete(fmt.Appendf(nil, "k%06d", i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bdb := db.(*boltDB).db
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer db.Close()
	rng := rand.New(rand.NewPCG(30, 2))
	err = bdb.View(func(tx *bolt.Tx) error {
		l := &lazyCheck{path: path, f: f, pageSize: uint64(bdb.Info().PageSize), hwm: uint64(tx.Size()) / uint64(bdb.Info().PageSize)}
		for _, name := range []string{"many", "big", "one"} {
			b := tx.Bucket([]byte(name))
			s, c := l.cursor(uint64(b.Root())), b.Cursor()
			if err := s.first(); err != nil || name == "many" && len(s.stack) < 3 {
				t.Fatalf("bucket many: %d levels, %v", len(s.stack), err)
			}
			for step := range 20000 {
				var k []byte
				var err error
				op := rng.IntN(10)
				switch op {
				case 0:
					err, k = s.first(), first(c)
				case 1:
					err, k = s.last(), last(c)
				case 2:
					seek := fmt.Appendf(nil, "%c%06d", name[0], rng.IntN(21000))
					if name != "many" {
						seek = fmt.Appendf(nil, "%c%03d", name[0], rng.IntN(320))
					}
					err = s.seek(seek)
					k, _ = c.Seek(seek)
				case 3, 4, 5:
					err = s.next()
					k, _ = c.Next()
				default:
					err = s.prev()
					k, _ = c.Prev()
				}
				if err != nil {
					t.Fatalf("%s, step %d: %v", name, step, err)
				}
				if k == nil {
					continue
				}
				top := s.stack[len(s.stack)-1]
				e, _ := elementAt(top.buf, top.index)
				if !top.leaf || !bytes.Equal(e.key, k) {
					t.Fatalf("%s, step %d (op %d): bbolt is on %q, the check on %q of page %d (leaf %v)", name, step, op, k, e.key, top.id, top.leaf)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func first(c *bolt.Cursor) []byte { k, _ := c.First(); return k }
func last(c *bolt.Cursor) []byte  { k, _ := c.Last(); return k }
