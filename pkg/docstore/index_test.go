package docstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// TestEntrySet: an index's entry set, in blocks, holds what a sorted set
// holds through random puts and deletes over many transactions (entries
// of many lengths, sharing prefixes, some longer than a block; more than
// maxPending in the first, a few far apart in an index of hundreds of
// blocks in some, which flush reaches by lookups rather than steps, and
// an entry put then deleted, or the reverse, before a flush), and its
// cursor walks it as a kv.Cursor walks keys: forwards, backwards, from a
// sought entry, and a scan of a range ends at its upper bound. No block but one of a single entry exceeds indexBlockBytes.
func TestEntrySet(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		rng := rand.New(rand.NewPCG(5, 6))
		entry := func() []byte {
			n := 1 + rng.IntN(24)
			if rng.IntN(200) == 0 {
				n = indexBlockBytes + rng.IntN(100) // alone in its block
			}
			e := make([]byte, n)
			for i := range e {
				e[i] = byte('a' + rng.IntN(3)) // shared prefixes
			}
			return e
		}
		model := map[string]bool{}
		var pool [][]byte
		for round := range 40 {
			err := s.db.Update(func(tx kv.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("i\x00set"))
				if err != nil {
					return err
				}
				set := entrySet{b: b}
				changes := 200
				switch {
				case round == 0:
					changes = 2 * maxPending // puts only: hundreds of blocks
				case round%2 == 1:
					changes = 5
				}
				for range changes {
					if round > 0 && len(pool) > 0 && rng.IntN(3) == 0 {
						e := pool[rng.IntN(len(pool))]
						delete(model, string(e))
						if err := set.del(e); err != nil {
							return err
						}
						continue
					}
					e := entry()
					pool = append(pool, e)
					model[string(e)] = true
					if err := set.put(e); err != nil {
						return err
					}
				}
				return set.flush()
			})
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		want := make([]string, 0, len(model))
		for e := range model {
			want = append(want, e)
		}
		slices.Sort(want)
		err := s.db.View(func(tx kv.Tx) error {
			b := tx.Bucket([]byte("i\x00set"))
			bc := b.Cursor()
			for k, v := bc.First(); k != nil; k, v = bc.Next() {
				ents, err := decodeEntries(nil, v)
				if err != nil {
					return err
				}
				if !bytes.Equal(k, ents[0]) || (len(v) > indexBlockBytes && len(ents) > 1) {
					return fmt.Errorf("block %q: %d bytes, %d entries, first %q", k, len(v), len(ents), ents[0])
				}
			}
			set := entrySet{b: b}
			var fwd, back []string
			c := set.cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				fwd = append(fwd, string(k))
			}
			for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
				back = append(back, string(k))
			}
			slices.Reverse(back)
			if !slices.Equal(fwd, want) || !slices.Equal(back, want) {
				return fmt.Errorf("walked %d entries forwards and %d backwards, want %d", len(fwd), len(back), len(want))
			}
			for range 500 {
				seek := entry()
				i, _ := slices.BinarySearch(want, string(seek))
				k, _ := c.Seek(seek)
				if i == len(want) {
					if k != nil {
						return fmt.Errorf("seek %q: %q, want nothing", seek, k)
					}
					continue
				}
				if string(k) != want[i] {
					return fmt.Errorf("seek %q: %q, want %q", seek, k, want[i])
				}
				if i > 0 {
					if k, _ := c.Prev(); string(k) != want[i-1] {
						return fmt.Errorf("prev after seek %q: %q, want %q", seek, k, want[i-1])
					}
				}
			}
			// A range ends where its upper bound falls: inside a block,
			// on a block's first entry, past the last entry.
			var firsts [][]byte
			for k, _ := bc.First(); k != nil; k, _ = bc.Next() {
				firsts = append(firsts, k)
			}
			for n := range 500 {
				lo, hi := entry(), entry()
				switch n % 4 {
				case 1:
					hi = firsts[rng.IntN(len(firsts))]
				case 2:
					hi = []byte(want[rng.IntN(len(want))])
				case 3:
					lo = nil
				}
				var got []string
				if err := scanEntries(set, keyRange{lo: lo, hi: hi}, nil, false, func(k []byte) bool {
					got = append(got, string(k))
					return true
				}); err != nil {
					return err
				}
				i, _ := slices.BinarySearch(want, string(lo))
				j, _ := slices.BinarySearch(want, string(hi))
				if !slices.Equal(got, want[i:max(i, j)]) {
					return fmt.Errorf("range [%q, %q): %d entries, want %d", lo, hi, len(got), max(0, j-i))
				}
			}
			return c.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < maxPending {
			t.Fatalf("only %d entries: the test exercises too few blocks", len(want))
		}
	})
}

// TestIndexBlocks: an index of 5,000 documents keeps its entries in a few
// hundred bbolt keys, so that a write touches a few pages of it.
func TestIndexBlocks(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "n", Fields: []string{"n"}}, nil); err != nil {
			t.Fatal(err)
		}
		var docs []Doc
		for i := range 5000 {
			docs = append(docs, Doc{ID: Int(int64(i)), Value: Map(Field{"n", Int(int64(i * 7919 % 5000))})})
		}
		if _, err := s.PutMany(ctx, "c", docs); err != nil {
			t.Fatal(err)
		}
		var keys int
		if err := s.db.View(func(tx kv.Tx) error { keys = tx.Bucket(indexBucket("c", "n")).KeyN(); return nil }); err != nil {
			t.Fatal(err)
		}
		if keys > 5000/20 {
			t.Errorf("the index keeps 5,000 entries under %d keys, want at most 250", keys)
		}
		if n, plan, err := s.Count(ctx, "c", flt(t, `{"n": {"$gte": 100, "$lt": 600}}`)); err != nil || n != 500 || plan.Index != "n" {
			t.Errorf("count of a range = %d, %+v, %v; want 500 from the index", n, plan, err)
		}
	})
}

// TestUpgradeLayout1: a store of layout 1 (an index entry per key, no
// layout key) opens with its indexes rebuilt as blocks, answers from them
// and records layout 2; a store of an unknown layout fails to open with
// ErrLayout.
func TestUpgradeLayout1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	def := IndexDef{Name: "g", Fields: []string{"g"}}
	if _, err := s.CreateIndex(ctx, "c", def, nil); err != nil {
		t.Fatal(err)
	}
	var docs []Doc
	for i := range 1000 {
		docs = append(docs, Doc{ID: Int(int64(i)), Value: Map(Field{"g", Int(int64(i % 10))})})
	}
	if _, err := s.PutMany(ctx, "c", docs); err != nil {
		t.Fatal(err)
	}
	// Rewrite the index as layout 1 wrote it, and drop the layout key.
	err = s.db.Update(func(tx kv.Tx) error {
		if err := tx.DeleteBucket(indexBucket("c", "g")); err != nil {
			return err
		}
		ib, err := tx.CreateBucketIfNotExists(indexBucket("c", "g"))
		if err != nil {
			return err
		}
		w := &writer{tx: tx, col: &collection{Name: "c", Indexes: []IndexDef{def}}}
		for _, d := range docs {
			if err := ib.Put(w.entries(AppendKey(nil, d.ID), d.Value)[0], nil); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte(metaBucket)).Delete([]byte(layoutKey))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := s.Page(ctx, "c", Query{Filter: flt(t, `{"g": 3}`), Limit: 1000})
	if err != nil || len(res.Docs) != 100 || res.Plan.Index != "g" {
		t.Fatalf("page after the upgrade: %d docs, %+v, %v; want 100 from the index", len(res.Docs), res.Plan, err)
	}
	var layout string
	err = s.db.Update(func(tx kv.Tx) error {
		m := tx.Bucket([]byte(metaBucket))
		layout = string(m.Get([]byte(layoutKey)))
		return m.Put([]byte(layoutKey), []byte("4"))
	})
	if err != nil || layout != "3" {
		t.Fatalf("layout after the upgrade %q, %v; want 3", layout, err)
	}
	s.Close()

	if s, err := Open(path, Options{NoSync: true}); !errors.Is(err, ErrLayout) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("open of layout 4: %v, want ErrLayout", err)
	}
}

// TestIndexEntryLimit: values longer than an index holds (MaxIndexEntry)
// are refused as invalid on every backend, naming the index, and nothing is
// written: by a write to an indexed collection, and by an index created
// over a document that holds them.
func TestIndexEntryLimit(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		long := strings.Repeat("x", MaxIndexEntry)
		if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "by_n", Fields: []string{"n"}}, nil); err != nil {
			t.Fatal(err)
		}
		_, err := s.Put(ctx, "c", Text("a"), Map(Field{"n", Text(long)}))
		if e := wantCode(t, err, CodeInvalid); !strings.Contains(e.Message, `index "by_n"`) {
			t.Fatalf("message: %s", e.Message)
		}
		if n, _, _ := s.Count(ctx, "c", nil); n != 0 {
			t.Fatalf("%d documents after the refused write", n)
		}
		if _, err := s.Put(ctx, "c", Text("a"), Map(Field{"n", Text(long[:MaxIndexEntry-64])})); err != nil {
			t.Fatalf("a value under the limit: %v", err)
		}
		if _, err := s.Put(ctx, "d", Text("b"), Map(Field{"n", Text(long)})); err != nil {
			t.Fatal(err)
		}
		_, err = s.CreateIndex(ctx, "d", IndexDef{Name: "by_n", Fields: []string{"n"}}, nil)
		wantCode(t, err, CodeInvalid)
		if cols, _ := s.Collections(ctx); len(cols) != 2 || len(cols[1].Indexes) != 0 {
			t.Fatalf("collections after the refused index: %+v", cols)
		}
	})
}
