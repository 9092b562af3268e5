package kv_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// activeMeta returns the offset of the active meta page's body in a store
// file (the meta of the higher transaction id).
func activeMeta(data []byte) int {
	le := binary.NativeEndian
	if le.Uint64(data[damagePage+16+48:]) > le.Uint64(data[16+48:]) {
		return int(damagePage) + 16
	}
	return 16
}

// pageElems returns the keys and, for a branch, the child pages (for a
// leaf, the values) of the page at off of a store file.
func pageElems(data []byte, off int64) (keys [][]byte, children []int64, values [][]byte) {
	le := binary.NativeEndian
	p := data[off:]
	branch, count := le.Uint16(p[8:]) == 1, int(le.Uint16(p[10:]))
	for i := range count {
		e := p[16+16*i:]
		if branch {
			pos, ks := int(le.Uint32(e)), int(le.Uint32(e[4:]))
			keys = append(keys, e[pos:pos+ks])
			children = append(children, int64(le.Uint64(e[8:])))
			continue
		}
		pos, ks, vs := int(le.Uint32(e[4:])), int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
		keys = append(keys, e[pos:pos+ks])
		values = append(values, e[pos+ks:pos+ks+vs])
	}
	return keys, children, values
}

// bucketRootPage returns the root page of bucket name of a template file
// (whose root bucket is one leaf page).
func bucketRootPage(t *testing.T, data []byte, name string) int64 {
	t.Helper()
	keys, _, values := pageElems(data, rootPage(data)*damagePage)
	for i, k := range keys {
		if string(k) == name {
			return int64(binary.NativeEndian.Uint64(values[i]))
		}
	}
	t.Fatalf("no bucket %q in the root page", name)
	return 0
}

// manyTree returns the root page of the template's bucket "many" (a
// branch) and its children's pages and first keys.
func manyTree(t *testing.T, data []byte) (root int64, children []int64, firstKeys [][]byte) {
	t.Helper()
	root = bucketRootPage(t, data, "many")
	if data[root*damagePage+8] != 1 {
		t.Fatalf("bucket many's root page %d is not a branch", root)
	}
	firstKeys, children, _ = pageElems(data, root*damagePage)
	if len(children) < 6 {
		t.Fatalf("bucket many has %d leaves", len(children))
	}
	return root, children, firstKeys
}

// getIn returns the value of key in bucket of db, or the View's error.
func getIn(db kv.DB, bucket string, key []byte) (string, error) {
	var v string
	err := db.View(func(tx kv.Tx) error {
		v = string(tx.Bucket([]byte(bucket)).Get(key))
		return nil
	})
	return v, err
}

// scan reads bucket of db with a cursor.
func scan(db kv.DB, bucket string) error {
	return db.View(func(tx kv.Tx) error {
		c := tx.Bucket([]byte(bucket)).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
		}
		return nil
	})
}

// writeFile writes data to a new file in a temporary directory.
func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenChecksLazily: Open reads only what bbolt needs to open a file
// (its meta pages, freelist and root bucket's pages), so that its cost
// does not grow with the file. Damage deeper in the file is found when a
// read reaches it, before bbolt follows it (a Get on the damaged path, a
// cursor or count over the damaged bucket: ErrDamaged; the rest of the
// file reads as before), and by the check of the whole file that starts
// at Open and that every write and backup waits for: each fails with
// ErrDamaged and the file is left as it was.
func TestOpenChecksLazily(t *testing.T) {
	data := storeTemplate(t)
	_, leaves, firstKeys := manyTree(t, data)
	bad := bytes.Clone(data)
	copy(bad[leaves[4]*damagePage:(leaves[4]+1)*damagePage], bytes.Repeat([]byte{0xA5}, int(damagePage)))
	for _, ro := range []bool{false, true} {
		path := writeFile(t, bad)
		db, err := kv.Open(path, kv.Options{ReadOnly: ro, NoSync: true})
		if err != nil {
			t.Fatalf("open (read-only %v) of a file damaged in one leaf: %v", ro, err)
		}
		if v, err := getIn(db, "inline0", []byte("k")); err != nil || v != "v" {
			t.Errorf("get from an intact bucket: %q, %v", v, err)
		}
		if v, err := getIn(db, "many", firstKeys[1]); err != nil || v == "" {
			t.Errorf("get from an intact leaf of the damaged bucket: %q, %v", v, err)
		}
		_, err = getIn(db, "many", firstKeys[4])
		wantErr(t, err, kv.ErrDamaged)
		wantErr(t, scan(db, "many"), kv.ErrDamaged)
		if err := scan(db, "big"); err != nil {
			t.Errorf("scan of an intact bucket: %v", err)
		}
		if !ro {
			err = db.Update(func(tx kv.Tx) error {
				return tx.Bucket([]byte("inline1")).Put([]byte("k2"), []byte("v2"))
			})
			wantErr(t, err, kv.ErrDamaged)
		}
		wantErr(t, db.Check(), kv.ErrDamaged)
		_, err = db.Backup(io.Discard)
		wantErr(t, err, kv.ErrDamaged)
		closeDB(t, db)
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, bad) {
			t.Errorf("the damaged file changed (read-only %v): %v", ro, err)
		}
	}
}

// TestOpenLazyCycle: a branch page that points back up its own tree,
// which would make bbolt's cursor descend forever (a fatal stack
// overflow, or a loop), fails the read that reaches it with ErrDamaged.
func TestOpenLazyCycle(t *testing.T) {
	data := storeTemplate(t)
	root, _, firstKeys := manyTree(t, data)
	bad := bytes.Clone(data)
	// The fourth child of many's root branch becomes the branch itself.
	binary.NativeEndian.PutUint64(bad[root*damagePage+16+16*3+8:], uint64(root))
	db, err := kv.Open(writeFile(t, bad), kv.Options{NoSync: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer closeDB(t, db)
	_, err = getIn(db, "many", firstKeys[3])
	wantErr(t, err, kv.ErrDamaged)
	if v, err := getIn(db, "many", firstKeys[5]); err != nil || v == "" {
		t.Errorf("get beside the cycle: %q, %v", v, err)
	}
	wantErr(t, scan(db, "many"), kv.ErrDamaged)
	wantErr(t, db.View(func(tx kv.Tx) error {
		tx.Bucket([]byte("many")).KeyN()
		return nil
	}), kv.ErrDamaged)
}

// freelistIDs returns the offsets in data of the page ids the active meta
// page's freelist lists.
func freelistIDs(t *testing.T, data []byte) []int {
	t.Helper()
	le := binary.NativeEndian
	fl := le.Uint64(data[activeMeta(data)+32:])
	if fl == ^uint64(0) {
		t.Fatal("the file has no persisted freelist")
	}
	p := int(fl) * int(damagePage)
	count, first := int(le.Uint16(data[p+10:])), p+16
	if count == 0xFFFF {
		count, first = int(le.Uint64(data[p+16:])), p+24
	}
	offs := make([]int, count)
	for i := range offs {
		offs[i] = first + 8*i
	}
	if count == 0 {
		t.Fatal("the freelist is empty")
	}
	return offs
}

// TestFreelistChecked: the freelist is persisted (an open reads it instead
// of following every page), so a damaged one must not be trusted. One
// that lists a page twice or a page past the high-water mark fails Open;
// one that lists a page of the tree, which a write would allocate and
// overwrite, fails every write with ErrDamaged and leaves the file as it
// was, while reads go on.
func TestFreelistChecked(t *testing.T) {
	data := storeTemplate(t)
	_, leaves, firstKeys := manyTree(t, data)
	ids := freelistIDs(t, data)
	le := binary.NativeEndian
	for _, tc := range []struct {
		name   string
		page   func() uint64
		atOpen bool
	}{
		{"a page listed twice", func() uint64 { return le.Uint64(data[ids[len(ids)-1]:]) }, true},
		{"a page past the high-water mark", func() uint64 { return le.Uint64(data[activeMeta(data)+40:]) }, true},
		{"a meta page", func() uint64 { return 1 }, true},
		{"a leaf in use", func() uint64 { return uint64(leaves[1]) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(ids) < 2 && tc.atOpen {
				t.Skip("a freelist of one page")
			}
			bad := bytes.Clone(data)
			le.PutUint64(bad[ids[0]:], tc.page())
			path := writeFile(t, bad)
			db, err := kv.Open(path, kv.Options{NoSync: true})
			if tc.atOpen {
				wantErr(t, err, kv.ErrDamaged)
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if v, err := getIn(db, "many", firstKeys[1]); err != nil || v == "" {
				t.Errorf("get: %q, %v", v, err)
			}
			err = db.Update(func(tx kv.Tx) error {
				b := tx.Bucket([]byte("many"))
				for i := range 2000 {
					if err := b.Put([]byte(key(5000+i)), bytes.Repeat([]byte{'x'}, 100)); err != nil {
						return err
					}
				}
				return nil
			})
			wantErr(t, err, kv.ErrDamaged)
			if !errors.Is(db.Check(), kv.ErrDamaged) {
				t.Error("Check found nothing")
			}
			closeDB(t, db)
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, bad) {
				t.Errorf("the file changed: %v", err)
			}
		})
	}
}
