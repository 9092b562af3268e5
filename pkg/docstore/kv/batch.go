package kv

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// maxBatchSize is the most calls one batch commits, as bbolt's default.
const maxBatchSize = 1000

// errTrySolo tells a batched call that its fn failed and must run alone.
var errTrySolo = errors.New("kv: batched function failed; re-run alone")

// errLead tells a queued call that it is now the leader: it runs the next
// batch.
var errLead = errors.New("kv: lead the next batch")

// batcher coalesces concurrent Batch calls into shared Updates (group
// commit), with bbolt's DB.Batch semantics for fn, for both backends. A
// call that finds no batch running runs at once, alone; calls that arrive
// while a batch commits queue up and commit together in the next one. No
// call waits for company (bbolt waits up to 10 ms, which a lone writer
// pays on every write), and the batcher starts no goroutine: each batch is
// run by one of its callers, the leader, who hands the lead to the next
// queued call when done.
type batcher struct {
	update func(func(Tx) error) error

	mu      sync.Mutex
	running bool // a leader is running a batch
	queue   []batchCall
}

type batchCall struct {
	fn   func(Tx) error
	done chan error // buffered: the result, or errLead
}

// do implements DB.Batch.
func (b *batcher) do(fn func(Tx) error) error {
	call := batchCall{fn: fn, done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, call)
	lead := !b.running
	b.running = true
	b.mu.Unlock()
	if lead {
		b.lead()
	}
	for {
		err := <-call.done
		switch err {
		case errLead:
			b.lead()
		case errTrySolo:
			return b.update(fn)
		default:
			return err
		}
	}
}

// lead runs one batch from the head of the queue, then hands the lead to
// the next queued call, or ends the run.
func (b *batcher) lead() {
	b.mu.Lock()
	n := min(len(b.queue), maxBatchSize)
	calls := slices.Clone(b.queue[:n])
	b.queue = slices.Delete(b.queue, 0, n)
	b.mu.Unlock()
	run(calls, b.update)
	b.mu.Lock()
	if len(b.queue) > 0 {
		b.queue[0].done <- errLead
	} else {
		b.running = false
	}
	b.mu.Unlock()
}

// run commits calls in one Update; when a call fails it is told to re-run
// alone and the rest are retried together.
func run(calls []batchCall, update func(func(Tx) error) error) {
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
			if f, ok := p.(*pgFailure); ok {
				panic(f) // the server failed, not fn: the shared transaction ends with it
			}
			err = fmt.Errorf("kv: batched function panicked: %v", p)
		}
	}()
	return fn(tx)
}
