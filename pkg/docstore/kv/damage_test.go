package kv_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// damagePage is the page size of the files the damage tests build (the OS
// page size, which bbolt uses).
var damagePage = int64(os.Getpagesize())

// storeTemplate builds a real store file: a bucket of many small keys (a
// tree of branch and leaf pages), one of values larger than a page
// (overflow pages), small buckets that bbolt keeps inline, and pages freed
// by deletes. It returns the file's bytes.
func storeTemplate(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "template.db")
	db, err := kv.Open(path, kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, db, "many", 1000)
	update(t, db, func(tx kv.Tx) error {
		big := mustBucket(t, tx, "big")
		for i := range 3 {
			mustPut(t, big, key(i), strings.Repeat(string(rune('a'+i)), 3*int(damagePage)))
		}
		for i := range 3 {
			mustPut(t, mustBucket(t, tx, fmt.Sprintf("inline%d", i)), "k", "v")
		}
		deleteKeys(t, tx.Bucket([]byte("many")), 300, 500)
		return nil
	})
	closeDB(t, db)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readSum keeps readAll's reads of values from being optimised away.
var readSum byte

// readAll reads every key and value of db, touching each value's bytes.
func readAll(db kv.DB) error {
	var sum byte
	err := db.View(func(tx kv.Tx) error {
		return tx.ForEachBucket(func(name []byte, b kv.Bucket) error {
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				for _, x := range v {
					sum ^= x
				}
			}
			return nil
		})
	})
	readSum ^= sum
	return err
}

// writeAll puts a key into every bucket of db and deletes one, in one
// transaction (nothing when readOnly): on a damaged file, the write fails
// with ErrDamaged or commits, and never crashes.
func writeAll(db kv.DB, readOnly bool) error {
	if readOnly {
		return nil
	}
	return db.Update(func(tx kv.Tx) error {
		return tx.ForEachBucket(func(name []byte, b kv.Bucket) error {
			if err := b.Put([]byte(key(100)), []byte("written")); err != nil {
				return err
			}
			return b.Delete([]byte(key(200)))
		})
	})
}

// openDamaged writes data to a file and opens it (read-only or not): it
// must either fail with ErrDamaged (or ErrInvalidFile, for a file bbolt
// does not recognise), naming the file, or open, and then a read of
// everything, Check and a write each either succeed or fail with
// ErrDamaged (damage deeper than what Open reads is found when reached);
// never crash. It returns Open's error.
func openDamaged(t *testing.T, dir string, data []byte, readOnly bool) error {
	t.Helper()
	path := filepath.Join(dir, "damaged.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := kv.Open(path, kv.Options{ReadOnly: readOnly, NoSync: true})
	if err != nil {
		if !errors.Is(err, kv.ErrDamaged) && !errors.Is(err, kv.ErrInvalidFile) {
			t.Fatalf("open: %v, want ErrDamaged or ErrInvalidFile", err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("open: %q does not name the file", err)
		}
		return err
	}
	defer closeDB(t, db)
	for _, step := range []struct {
		name string
		run  func() error
	}{{"read", func() error { return readAll(db) }}, {"check", db.Check},
		{"write", func() error { return writeAll(db, readOnly) }}, {"read after the write", func() error { return readAll(db) }}} {
		if err := step.run(); err != nil && !errors.Is(err, kv.ErrDamaged) {
			t.Fatalf("%s after open: %v, want nil or ErrDamaged", step.name, err)
		}
	}
	return nil
}

// TestOpenTruncated: a file cut anywhere before its last page in use
// fails to open with a DamageError that says so (read-only or not), and
// never faults; cut after it, it opens and reads whole.
func TestOpenTruncated(t *testing.T) {
	data, dir := storeTemplate(t), t.TempDir()
	for _, cut := range truncations(int64(len(data))) {
		for _, ro := range []bool{false, true} {
			err := openDamaged(t, dir, data[:cut], ro)
			switch {
			case cut == 0 && ro:
				wantErr(t, err, kv.ErrInvalidFile)
			case cut == 0:
				if err != nil {
					t.Errorf("open of an empty file (read-write): %v, want a new store", err)
				}
			case cut < 2*damagePage:
				if err == nil {
					t.Errorf("cut at %d: opened", cut)
				}
			case err == nil:
				// A cut in the sparse growth past the pages in use.
			case errors.Is(err, kv.ErrDamaged) && !strings.Contains(err.Error(), "truncated"):
				t.Errorf("cut at %d: %v does not say the file was truncated", cut, err)
			}
		}
	}
}

// truncations are the lengths to cut a file of size bytes to: every page
// boundary, a few bytes either side, and mid-page.
func truncations(size int64) []int64 {
	var cuts []int64
	for off := int64(0); off < size; off += damagePage {
		cuts = append(cuts, off)
		if off > 0 {
			cuts = append(cuts, off-1, off+damagePage/2)
		}
	}
	return cuts
}

// TestOpenCorrupted: 512 bytes of garbage written anywhere in a file (a
// page header, elements, keys, values, a meta page) never crash Open, a
// read of every value or Check: each fails with ErrDamaged or the file
// opens and reads. Garbage on a page header is always found.
func TestOpenCorrupted(t *testing.T) {
	data, dir := storeTemplate(t), t.TempDir()
	rng := rand.New(rand.NewPCG(25, 1))
	garbage := make([]byte, 512)
	found := 0
	root := rootPage(data)
	for off := int64(0); off < int64(len(data)); off += damagePage / 2 {
		for i := range garbage {
			garbage[i] = byte(rng.Uint32())
		}
		bad := bytes.Clone(data)
		copy(bad[off:], garbage)
		for _, ro := range []bool{false, true} {
			err := openDamaged(t, dir, bad, ro)
			if err != nil {
				found++
			}
			if off == root*damagePage && err == nil {
				t.Errorf("garbage on the root page %d: opened (read-only %v)", root, ro)
			}
		}
	}
	if found == 0 {
		t.Fatal("no garbage was found")
	}
}

// rootPage returns the root bucket's page in the active meta page of a
// store file (the meta of the higher transaction id).
func rootPage(data []byte) int64 {
	le := binary.NativeEndian
	m0, m1 := data[16:], data[damagePage+16:]
	m := m0
	if le.Uint64(m1[48:]) > le.Uint64(m0[48:]) {
		m = m1
	}
	return int64(le.Uint64(m[16:]))
}

// pageInUse reports whether the page at off of a template file is a page
// of its tree: its header names it and marks it a branch or leaf.
func pageInUse(data []byte, off int64) bool {
	id := int64(data[off]) | int64(data[off+1])<<8 | int64(data[off+2])<<16
	flags := data[off+8]
	return id == off/damagePage && (flags == 1 || flags == 2)
}

// TestDamageWhileOpen: damage done to the file underneath an open DB (cut
// short, a page overwritten) fails the transactions that meet it with
// ErrDamaged, a write included, and rolled back; the DB stays open and a
// transaction that does not meet it still works.
func TestDamageWhileOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	db, err := kv.Open(path, kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB(t, db)
	update(t, db, func(tx kv.Tx) error {
		mustPut(t, mustBucket(t, tx, "a"), "k", "v")
		return nil
	})
	fill(t, db, "many", 3000)
	intact := func() {
		t.Helper()
		view(t, db, func(tx kv.Tx) error {
			if got := string(tx.Bucket([]byte("a")).Get([]byte("k"))); got != "v" {
				t.Errorf("intact bucket: %q", got)
			}
			return nil
		})
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}

	// A page of "many" overwritten: bbolt's assertion, as an error.
	last := lastPageOf(t, db)
	saved := make([]byte, damagePage)
	if _, err := f.ReadAt(saved, last*damagePage); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, int(damagePage)), last*damagePage); err != nil {
		t.Fatal(err)
	}
	wantErr(t, readAll(db), kv.ErrDamaged)
	err = db.Update(func(tx kv.Tx) error {
		b := tx.Bucket([]byte("many"))
		for i := range 3000 {
			if err := b.Delete([]byte(key(i))); err != nil {
				return err
			}
		}
		return nil
	})
	wantErr(t, err, kv.ErrDamaged)
	wantErr(t, db.Check(), kv.ErrDamaged)
	intact()
	if _, err := f.WriteAt(saved, last*damagePage); err != nil {
		t.Fatal(err)
	}
	if err := readAll(db); err != nil {
		t.Fatalf("read after the page was restored: %v", err)
	}

	// The file cut short: reads past the end fault, as an error.
	if err := f.Truncate(3 * damagePage); err != nil {
		t.Fatal(err)
	}
	err = readAll(db)
	wantErr(t, err, kv.ErrDamaged)
	if !strings.Contains(err.Error(), path) {
		t.Errorf("%q does not name the file", err)
	}
	wantErr(t, db.Check(), kv.ErrDamaged)
	if err := f.Truncate(st.Size()); err != nil {
		t.Fatal(err)
	}
}

// lastPageOf returns the page of the last key of bucket "many", read from
// the file: the page whose first 16 bytes name it and hold that key.
func lastPageOf(t *testing.T, db kv.DB) int64 {
	t.Helper()
	data, err := os.ReadFile(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	for p := int64(len(data))/damagePage - 1; p >= 2; p-- {
		page := data[p*damagePage : (p+1)*damagePage]
		if pageInUse(data, p*damagePage) && page[8] == 2 && bytes.Contains(page, []byte(key(2999))) {
			return p
		}
	}
	t.Fatal("no leaf holds the last key")
	return 0
}

// TestReadOnlyChangesNothing: a read-only Open of an empty file fails with
// ErrInvalidFile and of a missing one with ErrNotExist, and neither
// creates nor changes a file.
func TestReadOnlyChangesNothing(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := kv.Open(empty, kv.Options{ReadOnly: true})
	wantErr(t, err, kv.ErrInvalidFile)
	if !strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), empty) {
		t.Errorf("%q does not say the file %s is empty", err, empty)
	}
	if st, err := os.Stat(empty); err != nil || st.Size() != 0 {
		t.Errorf("the empty file after a read-only open: %v, %v", st, err)
	}
	missing := filepath.Join(dir, "missing.db")
	_, err = kv.Open(missing, kv.Options{ReadOnly: true})
	wantErr(t, err, os.ErrNotExist)
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only open created %s: %v", missing, err)
	}
}

// TestNewStoreIsSmall: a new store with a little data takes tens of
// kilobytes, not bbolt's 16 MiB growth step; a growing store's file stays
// within twice its pages in use.
func TestNewStoreIsSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := kv.Open(path, kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB(t, db)
	update(t, db, func(tx kv.Tx) error {
		mustPut(t, mustBucket(t, tx, "b"), "k", "v")
		return nil
	})
	if st, err := os.Stat(path); err != nil || st.Size() > 64<<10 {
		t.Fatalf("a new store: %v bytes, %v; want at most 64 KiB", st.Size(), err)
	}
	for i := range 20 {
		fill(t, db, fmt.Sprintf("b%d", i), 1000)
	}
	used, err := db.Backup(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() > 2*used+64<<10 {
		t.Fatalf("a store of %d bytes in use takes %d bytes, %v", used, st.Size(), err)
	}
}

// FuzzOpenDamaged: a store file cut at any length, or with any bytes
// written at any offset, never crashes Open, a read of everything or
// Check (see openDamaged). The seeds cut and overwrite the template at a
// few offsets; the deterministic tests above sweep them.
func FuzzOpenDamaged(f *testing.F) {
	f.Add(uint32(65536), []byte(nil))
	f.Add(uint32(8192), bytes.Repeat([]byte{0xFF}, 512))
	f.Add(uint32(4096*3+16), []byte{0xFF, 0xFF, 0xFF, 0xFF})
	f.Add(uint32(4096*5+40), []byte{0, 0, 0, 0, 0, 0, 0x10})
	f.Add(uint32(0), []byte("not a store"))
	var data []byte
	f.Fuzz(func(t *testing.T, off uint32, patch []byte) {
		if data == nil {
			data = storeTemplate(t)
		}
		bad := bytes.Clone(data)
		if len(patch) == 0 {
			bad = bad[:int(off)%(len(bad)+1)]
		} else {
			at := int(off) % len(bad)
			copy(bad[at:], patch)
		}
		dir := t.TempDir()
		for _, ro := range []bool{false, true} {
			openDamaged(t, dir, bad, ro)
		}
	})
}
