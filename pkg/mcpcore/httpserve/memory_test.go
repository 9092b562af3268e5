package httpserve

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// heapPeak samples the bytes of heap objects every millisecond until stop
// is called, which returns the peak above the level when it started.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	var peak uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		if peak < base {
			return 0
		}
		return peak - base
	}
}

// echoLoad sends n concurrent tools/call requests, each echoing size bytes,
// on one legacy session, and returns their HTTP status codes.
func echoLoad(t *testing.T, env *testEnv, n, size int) map[int]int {
	t.Helper()
	cs := env.quietConnect(t)
	text := strings.Repeat("x", size)
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`, i, text)
	}
	return env.postAll(t, bodies, map[string]string{"Mcp-Session-Id": cs.ID(), "Mcp-Protocol-Version": legacyVersion})
}

// TestInflightMemory measures the peak heap of concurrent large requests
// (each echoed back whole) against a real listener and checks that
// MaxInflightBytes bounds it: a request in flight costs several times its
// body (the SDK's copies, the decoded arguments, the result and its
// encodings, and here the client's side too), so without the budget the
// peak grows with the number of requests (8 of 1 MiB: about 120 MiB), with
// it with the budget (two at a time: about 40 MiB).
func TestInflightMemory(t *testing.T) {
	const (
		n      = 8
		size   = 1 << 20
		budget = 2*size + size/2
	)
	env := start(t, Options{MaxInflightBytes: budget, MaxBodyBytes: 2 * size})
	stop := heapPeak()
	codes := echoLoad(t, env, n, size)
	peak := stop()
	t.Logf("%d concurrent %d MiB echoes, %.1f MiB budget: peak heap %d MiB (%v)", n, size>>20, float64(budget)/(1<<20), peak>>20, codes)
	if codes[http.StatusOK] < 2 || codes[http.StatusOK]+codes[http.StatusServiceUnavailable] != n {
		t.Fatalf("status codes %v: want at least 2 served, the rest refused", codes)
	}
	if limit := uint64(2 * 32 * size); peak > limit {
		t.Errorf("peak heap %d MiB, want at most %d MiB", peak>>20, limit>>20)
	}
}
