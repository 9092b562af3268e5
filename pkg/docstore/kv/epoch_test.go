package kv_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// epochOf returns the epoch a new View sees.
func epochOf(t testing.TB, db kv.DB) uint64 {
	t.Helper()
	var e uint64
	view(t, db, func(tx kv.Tx) error { e = tx.Epoch(); return nil })
	return e
}

// TestEpochCommitRollback: the epoch starts at 0, moves only with BumpEpoch,
// commits and rolls back (error or panic) with its transaction, and a View
// cannot bump it.
func TestEpochCommitRollback(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		if e := epochOf(t, db); e != 0 {
			t.Fatalf("new store at epoch %d", e)
		}
		update(t, db, func(tx kv.Tx) error {
			mustPut(t, mustBucket(t, tx, "b"), "k", "v") // a write alone leaves it
			return nil
		})
		if e := epochOf(t, db); e != 0 {
			t.Fatalf("a write without BumpEpoch moved the epoch to %d", e)
		}
		update(t, db, func(tx kv.Tx) error {
			for want := uint64(1); want <= 2; want++ {
				if err := tx.BumpEpoch(); err != nil {
					return err
				}
				if e := tx.Epoch(); e != want {
					t.Errorf("Epoch after bump: %d, want %d", e, want)
				}
			}
			return nil
		})
		if e := epochOf(t, db); e != 2 {
			t.Fatalf("after commit: epoch %d, want 2", e)
		}
		boom := errors.New("boom")
		err := db.Update(func(tx kv.Tx) error {
			if err := tx.BumpEpoch(); err != nil {
				return err
			}
			return boom
		})
		wantErr(t, err, boom)
		func() {
			defer func() {
				if p := recover(); p != boom {
					t.Errorf("recovered %v", p)
				}
			}()
			_ = db.Update(func(tx kv.Tx) error {
				if err := tx.BumpEpoch(); err != nil {
					return err
				}
				panic(boom)
			})
		}()
		if e := epochOf(t, db); e != 2 {
			t.Fatalf("after rollbacks: epoch %d, want 2", e)
		}
		update(t, db, func(tx kv.Tx) error {
			if e := tx.Epoch(); e != 2 {
				t.Errorf("an Update began at epoch %d, want 2", e)
			}
			return nil
		})
		var ended kv.Tx
		view(t, db, func(tx kv.Tx) error {
			ended = tx
			wantErr(t, tx.BumpEpoch(), kv.ErrTxNotWritable)
			return nil
		})
		wantErr(t, ended.BumpEpoch(), kv.ErrTxClosed)
	})
}

// TestEpochViewSnapshot: a View sees the epoch committed when it began, for
// as long as it runs, and the same snapshot as the data: under concurrent
// bumping commits that also write the new epoch as a value, every View reads
// the value equal to its Epoch.
func TestEpochViewSnapshot(t *testing.T) {
	eachBackend(t, func(t *testing.T, db kv.DB) {
		put := func(tx kv.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("e"))
			if err != nil {
				return err
			}
			return b.Put([]byte("epoch"), binary.BigEndian.AppendUint64(nil, tx.Epoch()))
		}
		update(t, db, put)

		opened, release := make(chan struct{}), make(chan struct{})
		early := make(chan uint64, 1)
		go func() {
			_ = db.View(func(tx kv.Tx) error {
				close(opened)
				<-release
				early <- tx.Epoch()
				return nil
			})
		}()
		<-opened
		update(t, db, func(tx kv.Tx) error {
			if err := tx.BumpEpoch(); err != nil {
				return err
			}
			if e := epochOf(t, db); e != 0 {
				t.Errorf("a View during the Update saw epoch %d", e)
			}
			return put(tx)
		})
		close(release)
		if e := <-early; e != 0 {
			t.Errorf("a View begun before the commit saw epoch %d after it", e)
		}

		const bumps = 300
		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 3 {
			wg.Go(func() {
				for !stop.Load() {
					err := db.View(func(tx kv.Tx) error {
						got := tx.Bucket([]byte("e")).Get([]byte("epoch"))
						if v := binary.BigEndian.Uint64(got); v != tx.Epoch() {
							return fmt.Errorf("view at epoch %d reads data of epoch %d", tx.Epoch(), v)
						}
						return nil
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		for range bumps {
			update(t, db, func(tx kv.Tx) error {
				if err := tx.BumpEpoch(); err != nil {
					return err
				}
				return put(tx)
			})
		}
		stop.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if e := epochOf(t, db); e != bumps+1 {
			t.Errorf("epoch %d, want %d", e, bumps+1)
		}
	})
}

// TestEpochBatchRetry: Batch calls that bump the epoch bump it once each,
// though a failing call rolls their shared transaction back and they re-run.
func TestEpochBatchRetry(t *testing.T) {
	const callers = 20
	boom := errors.New("boom")
	eachBackend(t, func(t *testing.T, db kv.DB) {
		// The first call holds the batcher until the others have queued, so
		// that they share a transaction with the failing one.
		var queued sync.WaitGroup
		queued.Add(callers)
		var runs atomic.Int64
		results := make(chan error, callers+1)
		go func() {
			results <- db.Batch(func(tx kv.Tx) error {
				queued.Wait()
				time.Sleep(50 * time.Millisecond) // from Done to queued
				return tx.BumpEpoch()
			})
		}()
		for i := range callers {
			go func() {
				queued.Done()
				results <- db.Batch(func(tx kv.Tx) error {
					runs.Add(1)
					if err := tx.BumpEpoch(); err != nil {
						return err
					}
					if i == 3 {
						return boom
					}
					return nil
				})
			}()
		}
		failed := 0
		for range callers + 1 {
			if err := <-results; errors.Is(err, boom) {
				failed++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if failed != 1 {
			t.Fatalf("%d calls failed, want 1", failed)
		}
		if e := epochOf(t, db); e != callers {
			t.Errorf("epoch %d after %d successful bumping calls", e, callers)
		}
		if runs.Load() <= callers {
			t.Errorf("no call re-ran (%d runs): the calls did not share a batch", runs.Load())
		}
	})
}
