package kv

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Batch sizing, as bbolt's defaults.
const (
	maxBatchSize  = 1000
	maxBatchDelay = 10 * time.Millisecond
)

// errTrySolo tells a batched call that its fn failed and must run alone.
var errTrySolo = errors.New("kv: batched function failed; re-run alone")

// batcher coalesces concurrent Batch calls into shared Updates, with bbolt's
// DB.Batch semantics, for both backends. It starts no goroutine: the first
// caller of a batch waits for company (up to maxBatchDelay or maxBatchSize
// calls) and then runs the batch on its own goroutine.
type batcher struct {
	update func(func(Tx) error) error

	mu      sync.Mutex
	pending *batch
}

type batch struct {
	calls []batchCall
	full  chan struct{} // closed when calls reaches maxBatchSize
}

type batchCall struct {
	fn   func(Tx) error
	done chan error
}

// do implements DB.Batch.
func (b *batcher) do(fn func(Tx) error) error {
	done := make(chan error, 1)
	b.mu.Lock()
	bt := b.pending
	leader := bt == nil
	if leader {
		bt = &batch{full: make(chan struct{})}
		b.pending = bt
	}
	bt.calls = append(bt.calls, batchCall{fn: fn, done: done})
	if len(bt.calls) == maxBatchSize {
		b.pending = nil
		close(bt.full)
	}
	b.mu.Unlock()

	if leader {
		timer := time.NewTimer(maxBatchDelay)
		select {
		case <-bt.full:
		case <-timer.C:
		}
		timer.Stop()
		b.mu.Lock()
		if b.pending == bt {
			b.pending = nil
		}
		b.mu.Unlock()
		bt.run(b.update)
	}
	err := <-done
	if err == errTrySolo {
		err = b.update(fn)
	}
	return err
}

// run commits the batch's calls in one Update; when a call fails it is told
// to re-run alone and the rest are retried together.
func (bt *batch) run(update func(func(Tx) error) error) {
	calls := bt.calls
	for len(calls) > 0 {
		failed := -1
		err := update(func(tx Tx) error {
			for i, c := range calls {
				if err := callSafely(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, c := range calls {
				c.done <- err
			}
			return
		}
		calls[failed].done <- errTrySolo
		calls = append(calls[:failed], calls[failed+1:]...)
	}
}

// callSafely runs fn, turning a panic into an error so that the batch rolls
// back and the panicking call re-runs (and panics) on its own goroutine.
func callSafely(fn func(Tx) error, tx Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("kv: batched function panicked: %v", p)
		}
	}()
	return fn(tx)
}
