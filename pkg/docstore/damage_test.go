package docstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// TestOpenReadOnly: a read-only store reads what the file holds, refuses
// every write, and leaves the file byte for byte as it was; an empty file
// is refused (not made a store) and a missing one is not created.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "c", Int(1), j(t, `{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "a", Fields: []string{"a"}}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ro.Get(ctx, "c", Int(1)); err != nil || d.Revision == 0 {
		t.Errorf("get from a read-only store: %+v, %v", d, err)
	}
	if err := ro.Verify(ctx); err != nil {
		t.Errorf("verify: %v", err)
	}
	if err := ro.CheckFile(); err != nil {
		t.Errorf("check: %v", err)
	}
	if _, err := ro.Put(ctx, "c", Int(2), j(t, `{"a":2}`)); !errors.Is(err, kv.ErrReadOnly) {
		t.Errorf("put into a read-only store: %v, want kv.ErrReadOnly", err)
	}
	var dump bytes.Buffer
	if n, err := ro.Dump(ctx, &dump, nil, nil); err != nil || n != 1 {
		t.Errorf("dump: %d documents, %v", n, err)
	}
	ro.Close()
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("a read-only open changed the file (%d bytes before, %d after, %v)", len(before), len(after), err)
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty, Options{ReadOnly: true}); !errors.Is(err, kv.ErrInvalidFile) {
		t.Errorf("read-only open of an empty file: %v, want kv.ErrInvalidFile", err)
	}
	if st, err := os.Stat(empty); err != nil || st.Size() != 0 {
		t.Errorf("the empty file after a read-only open: %v, %v", st, err)
	}
	missing := filepath.Join(dir, "missing.db")
	if _, err := Open(missing, Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only open of a missing file: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only open created the file: %v", err)
	}
}

// TestDamagedStoreFile: a store file cut short is refused by Open with
// ErrDamaged; cut short while open, an operation that meets it fails with
// ErrDamaged, CheckFile reports it, and the store stays open.
func TestDamagedStoreFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s := openStoreAt(t, path)
	for i := range 2000 {
		if _, err := s.Put(ctx, "c", Int(int64(i)), j(t, `{"text":"a document long enough to fill pages quickly"}`)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.db")
	if err := os.WriteFile(cut, data[:len(data)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		if _, err := Open(cut, Options{ReadOnly: ro}); !errors.Is(err, ErrDamaged) {
			t.Errorf("open of a file cut short (read-only %v): %v, want ErrDamaged", ro, err)
		}
	}

	if err := os.Truncate(path, int64(3*os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "c", Int(1999)); !errors.Is(err, ErrDamaged) {
		t.Errorf("get from a file cut short: %v, want ErrDamaged", err)
	}
	if err := s.CheckFile(); !errors.Is(err, ErrDamaged) {
		t.Errorf("check of a file cut short: %v, want ErrDamaged", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "c", Int(1999)); err != nil {
		t.Errorf("get once the file is whole again: %v", err)
	}
}

// TestGoReadingFault: a fault in a goroutine that reads a transaction's
// values for it (inParallel, the exact vector scan) fails the transaction
// with ErrDamaged, as on the transaction's own goroutine, instead of
// killing the process.
func TestGoReadingFault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := kv.Open(path, kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	big := bytes.Repeat([]byte{7}, 64*os.Getpagesize())
	err = db.Update(func(tx kv.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), big)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx kv.Tx) error {
		v := tx.Bucket([]byte("b")).Get([]byte("k"))
		if err := os.Truncate(path, int64(3*os.Getpagesize())); err != nil {
			t.Fatal(err)
		}
		var sums [2]byte
		goReading(2, func(w int) {
			for _, x := range v[w*len(v)/2 : (w+1)*len(v)/2] {
				sums[w] += x
			}
		})
		return nil
	})
	if !errors.Is(err, ErrDamaged) {
		t.Errorf("a fault on a reading goroutine: %v, want ErrDamaged", err)
	}
}

// TestOpenWritesNothing: opening a store of the current layout (read-write)
// and closing it leaves its file as it was: the catalog is read in a read
// transaction, so an open costs no commit.
func TestOpenWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateIndex(t.Context(), "c", IndexDef{Name: "n", Fields: []string{"n"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), "c", Int(1), j(t, `{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(t.Context(), "c", Int(1)); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("opening the store and closing it changed its file")
	}
}

// TestDamageFoundWhenReached: Open reads a store file's catalog, not its
// every page, so a page of a collection overwritten on disk is found by
// the first operation that reaches it: a Get of a document on it fails
// with ErrDamaged while the other documents read as before, and every
// write (which waits for the check of the whole file that Open starts)
// fails with ErrDamaged, leaving the file as it was; CheckFile finds it.
func TestDamageFoundWhenReached(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		doc := j(t, fmt.Sprintf(`{"text":"a document long enough to fill pages quickly","tag":"doc-%05d"}`, i))
		if _, err := s.Put(ctx, "c", Int(int64(i)), doc); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The leaf page that holds document 1500.
	page := int64(os.Getpagesize())
	leaf := int64(-1)
	for p := int64(2); p < int64(len(data))/page; p++ {
		b := data[p*page : (p+1)*page]
		if int64(binary.NativeEndian.Uint64(b)) == p && b[8] == 2 && bytes.Contains(b, []byte("doc-01500")) {
			leaf = p
		}
	}
	if leaf < 0 {
		t.Fatal("no leaf page holds document 1500")
	}
	copy(data[leaf*page:(leaf+1)*page], bytes.Repeat([]byte{0x5A}, int(page)))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("open of a store with one collection page damaged: %v", err)
	}
	defer s.Close()
	if _, err := s.Get(ctx, "c", Int(10)); err != nil {
		t.Errorf("get of a document on an intact page: %v", err)
	}
	if _, err := s.Get(ctx, "c", Int(1500)); !errors.Is(err, ErrDamaged) {
		t.Errorf("get of the document on the damaged page: %v, want ErrDamaged", err)
	}
	if _, err := s.Put(ctx, "c", Int(5000), j(t, `{"text":"new"}`)); !errors.Is(err, ErrDamaged) {
		t.Errorf("put into the damaged store: %v, want ErrDamaged", err)
	}
	if err := s.CheckFile(); !errors.Is(err, ErrDamaged) {
		t.Errorf("check: %v, want ErrDamaged", err)
	}
	s.Close()
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the damaged file changed: %v", err)
	}
}
