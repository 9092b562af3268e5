package mcpcore

import (
	"sync"
	"time"
)

// workerIdle is how long a handler goroutine waits for the next call
// before it exits.
const workerIdle = 10 * time.Second

// workers runs tool handlers on goroutines it keeps for a while after each
// handler returns. A new goroutine starts with a small stack that a
// handler's call depth (decoding, a plugin, a network client) makes the
// runtime copy several times over, on every call; a kept one has grown
// already. There are never more workers than handlers running at once
// (bounded by concurrent_tool_calls) plus those idle, which exit after
// idle (workerIdle) or when stop is called.
type workers struct {
	idle time.Duration
	work chan func() // unbuffered: a send succeeds only when a worker waits
	quit chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex // orders wg.Add against stop
	stopped bool
}

func newWorkers(idle time.Duration) *workers {
	return &workers{idle: idle, work: make(chan func()), quit: make(chan struct{})}
}

// run runs f on an idle worker, or on a new one; after stop, on a
// goroutine that exits when f returns. f must not panic.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
		return
	default:
	}
	w.mu.Lock()
	stopped := w.stopped
	if !stopped {
		w.wg.Add(1)
	}
	w.mu.Unlock()
	if stopped {
		go f()
		return
	}
	go w.loop(f)
}

// loop runs f, then the work handed to it, until it has waited w.idle
// for work or stop is called.
func (w *workers) loop(f func()) {
	defer w.wg.Done()
	idle := time.NewTimer(w.idle)
	defer idle.Stop()
	for {
		f()
		f = nil // not kept alive while waiting
		idle.Reset(w.idle)
		select {
		case f = <-w.work:
		case <-idle.C:
			return
		case <-w.quit:
			return
		}
	}
}

// stop makes the idle workers exit, and each busy one once its handler
// returns; wait waits for them.
func (w *workers) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.stopped = true
		close(w.quit)
	}
}

func (w *workers) wait() { w.wg.Wait() }
