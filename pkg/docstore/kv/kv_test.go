package kv_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgtest.M(m))
}

// backend opens a fresh, empty store for a test and closes it at the end.
type backend struct {
	name string
	open func(t testing.TB) kv.DB
}

func openBolt(t testing.TB) kv.DB {
	t.Helper()
	db, err := kv.Open(filepath.Join(t.TempDir(), "store.db"), kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeDB(t, db) })
	return db
}

func openMemory(t testing.TB) kv.DB {
	db := kv.OpenMemory()
	t.Cleanup(func() { closeDB(t, db) })
	return db
}

// openPostgres opens a fresh store on the test binary's shared PostgreSQL
// server (skipped when PostgreSQL is not installed, unless
// MCPKIT_REQUIRE_POSTGRES is set).
func openPostgres(t testing.TB) kv.DB {
	t.Helper()
	db, err := kv.OpenPostgres(context.Background(), pgtest.Shared(t).StoreURL(), kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeDB(t, db) })
	return db
}

func closeDB(t testing.TB, db kv.DB) {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

var backends = []backend{{"bolt", openBolt}, {"memory", openMemory}, {"postgres", openPostgres}}

// eachBackend runs test against every backend, in parallel.
func eachBackend(t *testing.T, test func(t *testing.T, db kv.DB)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b.open(t))
		})
	}
}

func update(t testing.TB, db kv.DB, fn func(tx kv.Tx) error) {
	t.Helper()
	if err := db.Update(fn); err != nil {
		t.Fatalf("update: %v", err)
	}
}

func view(t testing.TB, db kv.DB, fn func(tx kv.Tx) error) {
	t.Helper()
	if err := db.View(fn); err != nil {
		t.Fatalf("view: %v", err)
	}
}

// mustBucket creates (or returns) the bucket named name.
func mustBucket(t testing.TB, tx kv.Tx, name string) kv.Bucket {
	t.Helper()
	b, err := tx.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		t.Fatalf("create bucket %q: %v", name, err)
	}
	return b
}

func mustPut(t testing.TB, b kv.Bucket, k, v string) {
	t.Helper()
	if err := b.Put([]byte(k), []byte(v)); err != nil {
		t.Fatalf("put %q: %v", k, err)
	}
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// key is the i-th of an ordered sequence of keys.
func key(i int) string { return fmt.Sprintf("k%05d", i) }

// fill commits keys [0, n) into bucket name with values of 100 bytes, enough
// for a bbolt bucket of several pages.
func fill(t testing.TB, db kv.DB, name string, n int) {
	t.Helper()
	update(t, db, func(tx kv.Tx) error {
		b := mustBucket(t, tx, name)
		for i := range n {
			mustPut(t, b, key(i), fmt.Sprintf("%0100d", i))
		}
		return nil
	})
}

// deleteKeys deletes keys [from, to) from b.
func deleteKeys(t testing.TB, b kv.Bucket, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := b.Delete([]byte(key(i))); err != nil {
			t.Fatalf("delete %s: %v", key(i), err)
		}
	}
}

// bucketDump is a bucket's whole state.
type bucketDump struct {
	Seq   uint64
	KeyN  int
	Pairs [][2]string
}

// dump reads every bucket of tx, walking each with a cursor.
func dump(t testing.TB, tx kv.Tx) map[string]bucketDump {
	t.Helper()
	out := map[string]bucketDump{}
	var names []string
	err := tx.ForEachBucket(func(name []byte, b kv.Bucket) error {
		names = append(names, string(name))
		d := bucketDump{Seq: b.Sequence(), KeyN: b.KeyN()}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				t.Fatalf("bucket %q key %q: nil value", name, k)
			}
			d.Pairs = append(d.Pairs, [2]string{string(k), string(v)})
		}
		if len(d.Pairs) != d.KeyN {
			t.Fatalf("bucket %q: KeyN %d, cursor walks %d keys", name, d.KeyN, len(d.Pairs))
		}
		out[string(name)] = d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(names) {
		t.Fatalf("ForEachBucket order %q", names)
	}
	return out
}

func dumpDB(t testing.TB, db kv.DB) map[string]bucketDump {
	t.Helper()
	var d map[string]bucketDump
	view(t, db, func(tx kv.Tx) error { d = dump(t, tx); return nil })
	return d
}

func equalDumps(t testing.TB, got, want map[string]bucketDump) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d buckets, want %d", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Fatalf("bucket %q missing", name)
		}
		if g.Seq != w.Seq || g.KeyN != w.KeyN || !slices.Equal(g.Pairs, w.Pairs) {
			t.Fatalf("bucket %q: seq %d keys %d, want seq %d keys %d (or pairs differ)", name, g.Seq, g.KeyN, w.Seq, w.KeyN)
		}
	}
}

func TestBuckets(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		view(t, db, func(tx kv.Tx) error {
			if tx.Writable() {
				t.Error("View is writable")
			}
			if tx.Bucket([]byte("a")) != nil {
				t.Error("absent bucket is not nil")
			}
			_, err := tx.CreateBucketIfNotExists([]byte("a"))
			wantErr(t, err, kv.ErrTxNotWritable)
			wantErr(t, tx.DeleteBucket([]byte("a")), kv.ErrTxNotWritable)
			return nil
		})
		update(t, db, func(tx kv.Tx) error {
			if !tx.Writable() {
				t.Error("Update is not writable")
			}
			wantErr(t, tx.DeleteBucket(nil), kv.ErrBucketNotFound) // in an empty store
			for _, name := range []string{"b", "a", "c"} {
				mustBucket(t, tx, name)
			}
			mustPut(t, tx.Bucket([]byte("a")), "k", "v")
			// CreateBucketIfNotExists of an existing bucket returns it, data and all.
			if got := mustBucket(t, tx, "a").Get([]byte("k")); string(got) != "v" {
				t.Errorf("re-created bucket lost its key: %q", got)
			}
			_, err := tx.CreateBucketIfNotExists(nil)
			wantErr(t, err, kv.ErrBucketNameRequired)
			_, err = tx.CreateBucketIfNotExists(make([]byte, kv.KeyLimit(db)+1))
			wantErr(t, err, kv.ErrKeyTooLarge)
			mustBucket(t, tx, string(randomBytes(kv.KeyLimit(db))))
			wantErr(t, tx.DeleteBucket(randomBytes(kv.KeyLimit(db))), nil)
			wantErr(t, tx.DeleteBucket([]byte("zz")), kv.ErrBucketNotFound)
			wantErr(t, tx.DeleteBucket(nil), kv.ErrBucketNotFound)
			return nil
		})
		update(t, db, func(tx kv.Tx) error {
			old := tx.Bucket([]byte("a"))
			if err := tx.DeleteBucket([]byte("a")); err != nil {
				t.Fatal(err)
			}
			if tx.Bucket([]byte("a")) != nil {
				t.Error("deleted bucket still there")
			}
			// A handle on a deleted bucket reads as empty and refuses writes.
			if old.Get([]byte("k")) != nil || old.KeyN() != 0 {
				t.Error("deleted bucket's handle still reads its keys")
			}
			if k, _ := old.Cursor().First(); k != nil {
				t.Errorf("deleted bucket's cursor found %q", k)
			}
			wantErr(t, old.Put([]byte("x"), nil), kv.ErrBucketNotFound)
			wantErr(t, old.Delete([]byte("x")), kv.ErrBucketNotFound)
			_, err := old.NextSequence()
			wantErr(t, err, kv.ErrBucketNotFound)
			b := mustBucket(t, tx, "a")
			if b.KeyN() != 0 || b.Sequence() != 0 {
				t.Error("re-created bucket is not empty")
			}
			mustPut(t, b, "new", "1")
			return nil
		})
		view(t, db, func(tx kv.Tx) error {
			var names []string
			err := tx.ForEachBucket(func(name []byte, b kv.Bucket) error {
				names = append(names, string(name))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names, []string{"a", "b", "c"}) {
				t.Errorf("ForEachBucket: %q, want [a b c]", names)
			}
			if got := tx.Bucket([]byte("a")).Get([]byte("new")); string(got) != "1" {
				t.Errorf("re-created bucket: %q", got)
			}
			stop := errors.New("stop")
			n := 0
			wantErr(t, tx.ForEachBucket(func([]byte, kv.Bucket) error { n++; return stop }), stop)
			if n != 1 {
				t.Errorf("ForEachBucket went on after an error: %d calls", n)
			}
			return nil
		})
	})
}

func TestPutGetDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		k, v := []byte("key"), []byte("value")
		update(t, db, func(tx kv.Tx) error {
			b := mustBucket(t, tx, "b")
			if b.Get([]byte("absent")) != nil {
				t.Error("absent key is not nil")
			}
			if err := b.Put(k, v); err != nil {
				t.Fatal(err)
			}
			if got := b.Get(k); string(got) != "value" {
				t.Errorf("get %q", got)
			}
			mustPut(t, b, "over", "1")
			mustPut(t, b, "over", "2")
			if got := b.Get([]byte("over")); string(got) != "2" {
				t.Errorf("overwritten: %q", got)
			}
			// nil and empty values read back as non-nil empty, in the transaction and after it.
			for _, name := range []string{"nil", "empty"} {
				val := []byte(nil)
				if name == "empty" {
					val = []byte{}
				}
				if err := b.Put([]byte(name), val); err != nil {
					t.Fatal(err)
				}
				if got := b.Get([]byte(name)); got == nil || len(got) != 0 {
					t.Errorf("%s value in its transaction: %#v", name, got)
				}
			}
			mustPut(t, b, "gone", "x")
			if err := b.Delete([]byte("gone")); err != nil {
				t.Fatal(err)
			}
			if b.Get([]byte("gone")) != nil {
				t.Error("deleted key still there")
			}
			if err := b.Delete([]byte("never")); err != nil {
				t.Errorf("delete of an absent key: %v", err)
			}
			wantErr(t, b.Put(nil, v), kv.ErrKeyRequired)
			wantErr(t, b.Put([]byte{}, v), kv.ErrKeyRequired)
			wantErr(t, b.Put(make([]byte, kv.KeyLimit(db)+1), v), kv.ErrKeyTooLarge)
			wantErr(t, b.Put(randomBytes(kv.KeyLimit(db)), v), nil) // incompressible: PostgreSQL's index takes it whole
			wantErr(t, b.Put(k, oversizedValue(t)), kv.ErrValueTooLarge)
			return nil
		})
		// Buffers passed to Put may be reused once the transaction ended.
		k[0], v[0] = 'X', 'X'
		view(t, db, func(tx kv.Tx) error {
			b := tx.Bucket([]byte("b"))
			if got := b.Get([]byte("key")); string(got) != "value" {
				t.Errorf("after commit: %q", got)
			}
			for _, name := range []string{"nil", "empty"} {
				if got := b.Get([]byte(name)); got == nil || len(got) != 0 {
					t.Errorf("%s value after commit: %#v", name, got)
				}
			}
			if b.Get([]byte("gone")) != nil {
				t.Error("deleted key came back")
			}
			if b.KeyN() != 5 {
				t.Errorf("KeyN %d, want 5", b.KeyN())
			}
			wantErr(t, b.Put([]byte("k"), nil), kv.ErrTxNotWritable)
			wantErr(t, b.Delete([]byte("key")), kv.ErrTxNotWritable)
			return nil
		})
	})
}

func TestSequence(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		update(t, db, func(tx kv.Tx) error {
			b := mustBucket(t, tx, "b")
			if b.Sequence() != 0 {
				t.Errorf("new bucket's sequence %d", b.Sequence())
			}
			for want := uint64(1); want <= 3; want++ {
				if got, err := b.NextSequence(); err != nil || got != want {
					t.Fatalf("NextSequence %d, %v; want %d", got, err, want)
				}
			}
			if b.Sequence() != 3 {
				t.Errorf("Sequence %d, want 3", b.Sequence())
			}
			return nil
		})
		boom := errors.New("boom")
		wantErr(t, db.Update(func(tx kv.Tx) error {
			if n, _ := tx.Bucket([]byte("b")).NextSequence(); n != 4 {
				t.Errorf("NextSequence after commit: %d", n)
			}
			return boom
		}), boom)
		// A sequence alone (no key written) commits.
		update(t, db, func(tx kv.Tx) error {
			if n, _ := tx.Bucket([]byte("b")).NextSequence(); n != 4 {
				t.Errorf("NextSequence after a rollback: %d, want 4", n)
			}
			return nil
		})
		view(t, db, func(tx kv.Tx) error {
			b := tx.Bucket([]byte("b"))
			if b.Sequence() != 4 {
				t.Errorf("committed sequence %d, want 4", b.Sequence())
			}
			_, err := b.NextSequence()
			wantErr(t, err, kv.ErrTxNotWritable)
			return nil
		})
	})
}

func TestKeyN(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "b", 500)
		update(t, db, func(tx kv.Tx) error {
			b := tx.Bucket([]byte("b"))
			if b.KeyN() != 500 {
				t.Errorf("KeyN %d, want 500", b.KeyN())
			}
			mustPut(t, b, key(0), "overwrite")
			mustPut(t, b, "new", "x")
			deleteKeys(t, b, 100, 200)
			if b.KeyN() != 401 {
				t.Errorf("KeyN in the writing transaction %d, want 401", b.KeyN())
			}
			if n := mustBucket(t, tx, "fresh").KeyN(); n != 0 {
				t.Errorf("new bucket KeyN %d", n)
			}
			return nil
		})
		view(t, db, func(tx kv.Tx) error {
			if n := tx.Bucket([]byte("b")).KeyN(); n != 401 {
				t.Errorf("KeyN after commit %d, want 401", n)
			}
			return nil
		})
	})
}

// randomBytes is n bytes, the same on every call, incompressible.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(b)
	return b
}

// oversizedValue is a slice one byte longer than MaxValueSize, mapped but
// never touched (no memory is committed): Put must refuse it by its length.
func oversizedValue(t *testing.T) []byte {
	b, err := syscall.Mmap(-1, 0, kv.MaxValueSize+1, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Fatalf("map an oversized value: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Munmap(b); err != nil {
			t.Error(err)
		}
	})
	return b
}

func TestRollback(t *testing.T) {
	boom := errors.New("boom")
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "keep", 300)
		update(t, db, func(tx kv.Tx) error {
			b := mustBucket(t, tx, "doomed")
			mustPut(t, b, "x", "1")
			_, err := b.NextSequence()
			return err
		})
		before := dumpDB(t, db)
		// Everything a transaction can do, undone by an error and by a panic.
		work := func(tx kv.Tx) {
			keep := tx.Bucket([]byte("keep"))
			mustPut(t, keep, key(0), "changed")
			mustPut(t, keep, "added", "1")
			deleteKeys(t, keep, 10, 200)
			if _, err := keep.NextSequence(); err != nil {
				t.Fatal(err)
			}
			mustPut(t, mustBucket(t, tx, "created"), "k", "v")
			if err := tx.DeleteBucket([]byte("doomed")); err != nil {
				t.Fatal(err)
			}
		}
		wantErr(t, db.Update(func(tx kv.Tx) error { work(tx); return boom }), boom)
		equalDumps(t, dumpDB(t, db), before)

		func() {
			defer func() {
				if p := recover(); p != boom {
					t.Fatalf("recovered %v, want the panic of fn", p)
				}
			}()
			_ = db.Update(func(tx kv.Tx) error { work(tx); panic(boom) })
		}()
		equalDumps(t, dumpDB(t, db), before)

		// The store still takes writes after both.
		update(t, db, func(tx kv.Tx) error { work(tx); return nil })
		after := dumpDB(t, db)
		if _, ok := after["created"]; !ok || after["keep"].KeyN != 300-190+1 {
			t.Fatalf("commit after rollbacks: %v", after["keep"].KeyN)
		}
	})
}

func TestDurableAcrossReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := kv.Open(path, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if db.Path() != path {
		t.Errorf("Path %q, want %q", db.Path(), path)
	}
	fill(t, db, "b", 100)
	update(t, db, func(tx kv.Tx) error { _, err := tx.Bucket([]byte("b")).NextSequence(); return err })
	want := dumpDB(t, db)
	closeDB(t, db)
	db, err = kv.Open(path, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB(t, db)
	equalDumps(t, dumpDB(t, db), want)
	if kv.OpenMemory().Path() != "" {
		t.Error("memory store has a path")
	}
}
