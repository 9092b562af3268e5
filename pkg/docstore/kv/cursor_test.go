package kv_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// walk returns the keys from k onwards, moving with step.
func walk(k []byte, step func() ([]byte, []byte)) []string {
	var out []string
	for ; k != nil; k, _ = step() {
		out = append(out, string(k))
	}
	return out
}

func keys(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, key(i))
	}
	return out
}

func wantKey(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if string(got) != want || (want == "" && got != nil) {
		t.Errorf("%s: %q, want %q", what, got, want)
	}
}

func TestCursorEmpty(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		update(t, db, func(tx kv.Tx) error {
			c := mustBucket(t, tx, "b").Cursor()
			// A new cursor is on no key.
			for name, move := range map[string]func() ([]byte, []byte){"Next": c.Next, "Prev": c.Prev} {
				if k, v := move(); k != nil || v != nil {
					t.Errorf("new cursor %s: %q", name, k)
				}
			}
			wantErr(t, c.Delete(), kv.ErrNoCursorKey)
			for name, move := range map[string]func() ([]byte, []byte){
				"First": c.First, "Last": c.Last, "Next": c.Next, "Prev": c.Prev,
				"Seek": func() ([]byte, []byte) { return c.Seek([]byte("a")) },
			} {
				if k, v := move(); k != nil || v != nil {
					t.Errorf("empty bucket %s: %q", name, k)
				}
			}
			wantErr(t, c.Delete(), kv.ErrNoCursorKey)
			return nil
		})
	})
}

func TestCursorWalk(t *testing.T) {
	const n = 1000 // several bbolt pages
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "b", n)
		view(t, db, func(tx kv.Tx) error {
			c := tx.Bucket([]byte("b")).Cursor()
			k, v := c.First()
			if got := walk(k, c.Next); !slices.Equal(got, keys(0, n)) {
				t.Errorf("forward walk: %d keys", len(got))
			}
			if string(v) != strings.Repeat("0", 100) {
				t.Errorf("first value %q", v)
			}
			k, _ = c.Last()
			got := walk(k, c.Prev)
			slices.Reverse(got)
			if !slices.Equal(got, keys(0, n)) {
				t.Errorf("backward walk: %d keys", len(got))
			}

			k, _ = c.Seek([]byte(key(500)))
			wantKey(t, "Seek exact", k, key(500))
			k, _ = c.Seek([]byte(key(500) + "\x00"))
			wantKey(t, "Seek between", k, key(501))
			k, _ = c.Seek(nil)
			wantKey(t, "Seek nil", k, key(0))
			k, _ = c.Seek([]byte("a"))
			wantKey(t, "Seek before the first", k, key(0))

			// Past the end: Seek finds nothing, Next stays there, Prev gives the last key.
			k, _ = c.Seek([]byte("z"))
			wantKey(t, "Seek past the end", k, "")
			k, _ = c.Next()
			wantKey(t, "Next after Seek past the end", k, "")
			k, _ = c.Prev()
			wantKey(t, "Prev after Seek past the end", k, key(n-1))

			// Next at the end stays on the last key: Prev gives the one before.
			c.Last()
			k, _ = c.Next()
			wantKey(t, "Next at the end", k, "")
			k, _ = c.Next()
			wantKey(t, "Next again at the end", k, "")
			k, _ = c.Prev()
			wantKey(t, "Prev after Next at the end", k, key(n-2))

			// Prev at the start moves to the first key: Next gives the second.
			c.First()
			k, _ = c.Prev()
			wantKey(t, "Prev at the start", k, "")
			k, _ = c.Next()
			wantKey(t, "Next after Prev at the start", k, key(1))
			return nil
		})
	})
}

func TestCursorDelete(t *testing.T) {
	const n = 1000
	cases := []struct {
		name string
		// run deletes through a cursor in tx and returns the keys it expects left.
		run func(t *testing.T, tx kv.Tx) []string
	}{
		{"forward, all", func(t *testing.T, tx kv.Tx) []string {
			c := tx.Bucket([]byte("b")).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if err := c.Delete(); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		}},
		{"forward, all, after writes in the same transaction (bbolt #357)", func(t *testing.T, tx kv.Tx) []string {
			b := tx.Bucket([]byte("b"))
			for i := 0; i < n; i += 7 {
				mustPut(t, b, key(i), "rewritten")
			}
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if err := c.Delete(); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		}},
		{"backward, all", func(t *testing.T, tx kv.Tx) []string {
			c := tx.Bucket([]byte("b")).Cursor()
			for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
				if err := c.Delete(); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		}},
		{"forward, every third", func(t *testing.T, tx kv.Tx) []string {
			var left []string
			c := tx.Bucket([]byte("b")).Cursor()
			i := 0
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if i%3 == 0 {
					if err := c.Delete(); err != nil {
						t.Fatal(err)
					}
				} else {
					left = append(left, string(k))
				}
				i++
			}
			return left
		}},
		{"twice, and at the end", func(t *testing.T, tx kv.Tx) []string {
			c := tx.Bucket([]byte("b")).Cursor()
			c.Seek([]byte(key(10)))
			if err := c.Delete(); err != nil {
				t.Fatal(err)
			}
			wantErr(t, c.Delete(), kv.ErrNoCursorKey)
			k, _ := c.Prev()
			wantKey(t, "Prev after Delete", k, key(9))
			k, _ = c.Next()
			wantKey(t, "Next after Prev", k, key(11))
			c.Last()
			c.Next() // nil: the cursor rests on the last key but returned none
			wantErr(t, c.Delete(), kv.ErrNoCursorKey)
			c.Seek([]byte("z"))
			wantErr(t, c.Delete(), kv.ErrNoCursorKey)
			return slices.Delete(keys(0, n), 10, 11)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, db kv.DB) {
				fill(t, db, "b", n)
				var want []string
				update(t, db, func(tx kv.Tx) error {
					want = tc.run(t, tx)
					c := tx.Bucket([]byte("b")).Cursor()
					k, _ := c.First()
					if got := walk(k, c.Next); !slices.Equal(got, want) {
						t.Errorf("in the transaction: %d keys left, want %d", len(got), len(want))
					}
					return nil
				})
				view(t, db, func(tx kv.Tx) error {
					b := tx.Bucket([]byte("b"))
					c := b.Cursor()
					k, _ := c.First()
					if got := walk(k, c.Next); !slices.Equal(got, want) || b.KeyN() != len(want) {
						t.Errorf("after commit: %d keys left (KeyN %d), want %d", len(got), b.KeyN(), len(want))
					}
					return nil
				})
			})
		})
	}
}

// TestCursorAcrossWrites: a cursor keeps its key while its bucket changes.
func TestCursorAcrossWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "b", 20)
		update(t, db, func(tx kv.Tx) error {
			b := tx.Bucket([]byte("b"))
			// Keys put after the cursor's key are visited.
			var got []string
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				got = append(got, string(k))
				if !strings.HasSuffix(string(k), "x") && len(got) < 6 {
					mustPut(t, b, string(k)+"x", "")
				}
			}
			want := []string{key(0), key(0) + "x", key(1), key(1) + "x", key(2), key(2) + "x"}
			if !slices.Equal(got[:6], want) || len(got) != 23 {
				t.Errorf("walk while putting: %q", got)
			}
			// Deleting the next key through the bucket skips it, never more.
			got = got[:0]
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				got = append(got, string(k))
				if nk, _ := b.Cursor().Seek(append([]byte(string(k)), 0)); nk != nil {
					if err := b.Delete(nk); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(got) != 12 || b.KeyN() != 12 {
				t.Errorf("walk while deleting the next key: %q, KeyN %d", got, b.KeyN())
			}
			// Deleting the cursor's key through the bucket: Next and Prev move from where it was.
			k, _ := c.Seek([]byte(got[5]))
			if err := b.Delete(k); err != nil {
				t.Fatal(err)
			}
			k, _ = c.Next()
			wantKey(t, "Next after the bucket deleted the cursor's key", k, got[6])
			c.Seek([]byte(got[7]))
			if err := b.Delete([]byte(got[7])); err != nil {
				t.Fatal(err)
			}
			k, _ = c.Prev()
			wantKey(t, "Prev after the bucket deleted the cursor's key", k, got[6])
			return nil
		})
	})
}

// TestCursorPrevOverEmptiedLeaf: bbolt's Prev stops at a leaf emptied earlier
// in the same transaction (it rebalances at commit); kv's must not.
func TestCursorPrevOverEmptiedLeaf(t *testing.T) {
	const n = 1000
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "b", n)
		update(t, db, func(tx kv.Tx) error {
			b := tx.Bucket([]byte("b"))
			deleteKeys(t, b, 300, 700)
			c := b.Cursor()
			c.Seek([]byte(key(700)))
			k, _ := c.Prev()
			wantKey(t, "Prev over the deleted range", k, key(299))
			k, _ = c.Last()
			got := walk(k, c.Prev)
			slices.Reverse(got)
			if want := append(keys(0, 300), keys(700, n)...); !slices.Equal(got, want) {
				t.Errorf("backward walk: %d keys, want %d", len(got), len(want))
			}
			return nil
		})
	})
}

// TestCursorLastOfEmptiedBucket: bbolt's Last loops (forever, or until it
// returns a deleted key) on a bucket of several leaves all emptied in the
// same transaction; kv's returns nil at once.
func TestCursorLastOfEmptiedBucket(t *testing.T) {
	const n = 1000
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "b", n)
		update(t, db, func(tx kv.Tx) error {
			b := tx.Bucket([]byte("b"))
			deleteKeys(t, b, 1, n)
			c := b.Cursor()
			k, _ := c.Last()
			wantKey(t, "Last with one key left", k, key(0))
			if err := b.Delete([]byte(key(0))); err != nil {
				t.Fatal(err)
			}
			k, _ = c.Last()
			wantKey(t, "Last of the emptied bucket", k, "")
			k, _ = c.Prev()
			wantKey(t, "Prev in the emptied bucket", k, "")
			return nil
		})
	})
}
