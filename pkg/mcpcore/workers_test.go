package mcpcore

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// goroutineID returns the calling goroutine's id, from its stack header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

// runOn runs f through w and returns the id of the goroutine it ran on.
func runOn(w *workers) string {
	ids := make(chan string, 1)
	w.run(func() { ids <- goroutineID() })
	return <-ids
}

// TestWorkersReuse: work handed to the pool once a worker is idle runs on
// a goroutine that ran earlier work, not on a new one.
func TestWorkersReuse(t *testing.T) {
	w := newWorkers(time.Minute)
	t.Cleanup(func() { w.stop(); w.wait() })
	seen := map[string]bool{runOn(w): true}
	for range 200 {
		time.Sleep(time.Millisecond) // for the worker to be back waiting
		id := runOn(w)
		if seen[id] {
			return
		}
		seen[id] = true
	}
	t.Fatalf("200 calls one after the other ran on %d goroutines, none reused", len(seen))
}

// TestWorkersExit: idle workers exit after their idle time, and at once
// on stop; a busy worker exits once its work returns.
func TestWorkersExit(t *testing.T) {
	waitFor := func(w *workers, within time.Duration) {
		t.Helper()
		done := make(chan struct{})
		go func() { w.wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(within):
			t.Fatalf("the workers did not exit within %v", within)
		}
	}
	idle := newWorkers(20 * time.Millisecond)
	runOn(idle)
	runOn(idle)
	waitFor(idle, 5*time.Second)

	w := newWorkers(time.Hour)
	runOn(w)
	release := make(chan struct{})
	w.run(func() { <-release })
	w.stop()
	waited := make(chan struct{})
	go func() { w.wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("wait returned while a worker was busy")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the busy worker did not exit once its work returned")
	}
	if runOn(w) == "" { // after stop: runs all the same (goleak checks its goroutine exits)
		t.Fatal("no goroutine id")
	}
}
