package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// TestViewIsolation: Views run while an Update is open, never wait for it,
// and see the last committed state until (and, if begun before it, after)
// the commit.
func TestViewIsolation(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "b", 100)
		readOld := func(tx kv.Tx) error {
			if got := tx.Bucket([]byte("b")).Get([]byte(key(1))); string(got) != fmt.Sprintf("%0100d", 1) {
				return fmt.Errorf("saw %q", got)
			}
			if tx.Bucket([]byte("new")) != nil || tx.Bucket([]byte("b")).KeyN() != 100 {
				return errors.New("saw the open Update's writes")
			}
			return nil
		}

		// A View begun before the Update, and held open across its commit.
		early := make(chan error, 1)
		opened, release := make(chan struct{}), make(chan struct{})
		go func() {
			early <- db.View(func(tx kv.Tx) error {
				close(opened)
				<-release
				return readOld(tx)
			})
		}()
		<-opened

		update(t, db, func(tx kv.Tx) error {
			b := tx.Bucket([]byte("b"))
			mustPut(t, b, key(1), "new value")
			mustPut(t, mustBucket(t, tx, "new"), "k", "v")
			deleteKeys(t, b, 50, 60)
			// A View during the Update completes without waiting for it.
			during := make(chan error, 1)
			go func() { during <- db.View(readOld) }()
			select {
			case err := <-during:
				if err != nil {
					t.Errorf("View during Update: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("View blocked behind an open Update")
			}
			return nil
		})
		close(release)
		if err := <-early; err != nil {
			t.Errorf("View held across the commit: %v", err)
		}
		view(t, db, func(tx kv.Tx) error {
			if got := tx.Bucket([]byte("b")).Get([]byte(key(1))); string(got) != "new value" {
				t.Errorf("after commit: %q", got)
			}
			if tx.Bucket([]byte("new")) == nil || tx.Bucket([]byte("b")).KeyN() != 90 {
				t.Error("commit not visible")
			}
			return nil
		})
	})
}

func TestBatchCoalesces(t *testing.T) {
	const callers = 200
	eachBackend(t, func(t *testing.T, db kv.DB) {
		update(t, db, func(tx kv.Tx) error { mustBucket(t, tx, "b"); return nil })
		var mu sync.Mutex
		txs := map[kv.Tx]int{} // holds the Tx values, so none is reused
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		// Group commit: the calls that arrive while a batch commits share
		// the next one, so each fn takes a moment, as a commit to disk does.
		start := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-start
				errs <- db.Batch(func(tx kv.Tx) error {
					mu.Lock()
					txs[tx]++
					mu.Unlock()
					time.Sleep(50 * time.Microsecond)
					return tx.Bucket([]byte("b")).Put([]byte(key(i)), []byte("v"))
				})
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(txs) > callers/4 {
			t.Errorf("%d callers used %d transactions", callers, len(txs))
		}
		view(t, db, func(tx kv.Tx) error {
			if n := tx.Bucket([]byte("b")).KeyN(); n != callers {
				t.Errorf("%d keys, want %d", n, callers)
			}
			return nil
		})
	})
}

func TestBatchFailureIsolated(t *testing.T) {
	const callers = 50
	boom := errors.New("boom")
	eachBackend(t, func(t *testing.T, db kv.DB) {
		update(t, db, func(tx kv.Tx) error { mustBucket(t, tx, "b"); return nil })
		var mu sync.Mutex
		runs := make([]int, callers)
		var wg sync.WaitGroup
		results := make([]error, callers)
		panics := make([]any, callers)
		for i := range callers {
			wg.Go(func() {
				defer func() { panics[i] = recover() }()
				results[i] = db.Batch(func(tx kv.Tx) error {
					mu.Lock()
					runs[i]++
					mu.Unlock()
					if err := tx.Bucket([]byte("b")).Put([]byte(key(i)), []byte("v")); err != nil {
						return err
					}
					switch i {
					case 7:
						return boom
					case 8:
						panic(boom)
					}
					return nil
				})
			})
		}
		wg.Wait()
		for i := range callers {
			switch i {
			case 7:
				wantErr(t, results[i], boom)
			case 8:
				if panics[i] != boom {
					t.Errorf("panicking caller recovered %v", panics[i])
				}
			default:
				if results[i] != nil || panics[i] != nil {
					t.Errorf("caller %d: %v, %v", i, results[i], panics[i])
				}
			}
		}
		// The failing functions ran in a batch and again alone.
		if runs[7] < 2 || runs[8] < 2 {
			t.Errorf("failing functions ran %d and %d times, want at least 2", runs[7], runs[8])
		}
		view(t, db, func(tx kv.Tx) error {
			b := tx.Bucket([]byte("b"))
			for i := range callers {
				if got := b.Get([]byte(key(i))); (got != nil) != (i != 7 && i != 8) {
					t.Errorf("key of caller %d: %q", i, got)
				}
			}
			if b.KeyN() != callers-2 {
				t.Errorf("%d keys, want %d", b.KeyN(), callers-2)
			}
			return nil
		})
	})
}

// TestBackup: both backends write a bbolt file that opens with Open and holds
// exactly what was committed, even while a writer is busy.
func TestBackup(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "docs", 3000)
		update(t, db, func(tx kv.Tx) error {
			mustBucket(t, tx, "empty")
			b := mustBucket(t, tx, "misc")
			for range 5 {
				if _, err := b.NextSequence(); err != nil {
					return err
				}
			}
			if err := b.Put([]byte("nil"), nil); err != nil {
				return err
			}
			mustPut(t, b, "big", strings.Repeat("x", 100_000))
			return nil
		})
		want := dumpDB(t, db)

		var buf bytes.Buffer
		var n int64
		update(t, db, func(tx kv.Tx) error {
			mustPut(t, tx.Bucket([]byte("docs")), "uncommitted", "x")
			done := make(chan error, 1)
			go func() {
				var err error
				n, err = db.Backup(&buf)
				done <- err
			}()
			return <-done
		})
		if n != int64(buf.Len()) || n == 0 {
			t.Fatalf("Backup reported %d bytes, wrote %d", n, buf.Len())
		}
		path := filepath.Join(t.TempDir(), "backup.db")
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		restored, err := kv.Open(path, kv.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer closeDB(t, restored)
		equalDumps(t, dumpDB(t, restored), want)
		// The copy is a working store.
		update(t, restored, func(tx kv.Tx) error {
			mustPut(t, tx.Bucket([]byte("docs")), "after", "restore")
			return nil
		})
		if got := dumpDB(t, restored)["docs"].KeyN; got != 3001 {
			t.Errorf("restored store after a write: %d keys", got)
		}
	})
}

func TestClose(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "b", 10)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		noop := func(kv.Tx) error { return nil }
		wantErr(t, db.View(noop), kv.ErrClosed)
		wantErr(t, db.Update(noop), kv.ErrClosed)
		wantErr(t, db.Batch(noop), kv.ErrClosed)
		_, err := db.Backup(&bytes.Buffer{})
		wantErr(t, err, kv.ErrClosed)
	})
}

// TestTxAfterEnd: a transaction's handles refuse writes and panic on reads
// once its function returned.
func TestTxAfterEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		var tx kv.Tx
		var b kv.Bucket
		var c kv.Cursor
		update(t, db, func(x kv.Tx) error {
			tx, b = x, mustBucket(t, x, "b")
			mustPut(t, b, "k", "v")
			c = b.Cursor()
			c.First()
			return nil
		})
		wantErr(t, b.Put([]byte("k"), nil), kv.ErrTxClosed)
		wantErr(t, b.Delete([]byte("k")), kv.ErrTxClosed)
		_, err := b.NextSequence()
		wantErr(t, err, kv.ErrTxClosed)
		wantErr(t, c.Delete(), kv.ErrTxClosed)
		_, err = tx.CreateBucketIfNotExists([]byte("c"))
		wantErr(t, err, kv.ErrTxClosed)
		wantErr(t, tx.DeleteBucket([]byte("b")), kv.ErrTxClosed)
		reads := map[string]func(){
			"Get":    func() { b.Get([]byte("k")) },
			"KeyN":   func() { b.KeyN() },
			"Next":   func() { c.Next() },
			"Cursor": func() { b.Cursor() },
			"Bucket": func() { tx.Bucket([]byte("b")) },
		}
		for name, read := range reads {
			func() {
				defer func() {
					if err, _ := recover().(error); !errors.Is(err, kv.ErrTxClosed) {
						t.Errorf("%s after the transaction: recovered %v", name, err)
					}
				}()
				read()
			}()
		}
	})
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	db, err := kv.Open(path, kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, db, "b", 10)

	// Locked by another DB: at once with no timeout, after it with one.
	start := time.Now()
	_, err = kv.Open(path, kv.Options{})
	wantErr(t, err, kv.ErrLocked)
	_, err = kv.Open(path, kv.Options{Timeout: 200 * time.Millisecond})
	wantErr(t, err, kv.ErrLocked)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("locked Open with a 200ms timeout returned after %v", d)
	}
	_, err = kv.Open(path, kv.Options{ReadOnly: true})
	wantErr(t, err, kv.ErrLocked)
	closeDB(t, db)

	// Read-only: reads work, writes are refused.
	ro, err := kv.Open(path, kv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	view(t, ro, func(tx kv.Tx) error {
		if tx.Bucket([]byte("b")).KeyN() != 10 {
			t.Error("read-only store lost keys")
		}
		return nil
	})
	noop := func(kv.Tx) error { return nil }
	wantErr(t, ro.Update(noop), kv.ErrReadOnly)
	wantErr(t, ro.Batch(noop), kv.ErrReadOnly)
	closeDB(t, ro)

	_, err = kv.Open(filepath.Join(dir, "missing.db"), kv.Options{ReadOnly: true})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only Open of a missing file: %v", err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a store "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = kv.Open(garbage, kv.Options{})
	wantErr(t, err, kv.ErrInvalidFile)
}

// TestMapped: on a bbolt file, a bucket with pages of its own reports the
// file's map in a View, and values read from it in one View are still
// there, unchanged, in a later View after other buckets were written,
// rewritten and emptied (their pages freed and reused); an inline bucket,
// a write transaction and the other backends report 0.
func TestMapped(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		fill(t, db, "big", 500)
		fill(t, db, "other", 500)
		update(t, db, func(tx kv.Tx) error {
			mustPut(t, mustBucket(t, tx, "small"), "k", "v")
			if at := kv.Mapped(tx.Bucket([]byte("big"))); at != 0 {
				t.Errorf("Mapped in a write transaction: %#x", at)
			}
			return nil
		})
		bolt := db.Path() != "" && !kv.IsURL(db.Path())
		var at uintptr
		var kept [][]byte
		view(t, db, func(tx kv.Tx) error {
			at = kv.Mapped(tx.Bucket([]byte("big")))
			if small := kv.Mapped(tx.Bucket([]byte("small"))); small != 0 || (at != 0) != bolt {
				t.Fatalf("Mapped: big %#x, small (inline) %#x", at, small)
			}
			for i := range 500 {
				kept = append(kept, tx.Bucket([]byte("big")).Get([]byte(key(i))))
			}
			return nil
		})
		if !bolt {
			return
		}
		for round := range 5 {
			update(t, db, func(tx kv.Tx) error {
				b := mustBucket(t, tx, "other")
				deleteKeys(t, b, 0, 500)
				for i := range 500 {
					mustPut(t, b, key(i), fmt.Sprintf("%0200d", round))
				}
				mustPut(t, mustBucket(t, tx, "small"), "k", fmt.Sprint(round))
				return nil
			})
		}
		view(t, db, func(tx kv.Tx) error {
			big := tx.Bucket([]byte("big"))
			if got := kv.Mapped(big); got != at {
				t.Fatalf("Mapped moved from %#x to %#x with the file within its map", at, got)
			}
			for i, v := range kept {
				now := big.Get([]byte(key(i)))
				if &now[0] != &v[0] || !bytes.Equal(v, []byte(fmt.Sprintf("%0100d", i))) {
					t.Fatalf("value %d moved or changed: %q", i, v)
				}
			}
			return nil
		})
	})
}
