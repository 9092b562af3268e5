package test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Peak memory of bin/mcpkit over stdio, read from /proc/<pid>/status
// (VmHWM: the process's peak resident set, garbage and runtime included).
//
// NOTE: these tests need limits.inflight_request_bytes, and the command line
// passing it (and 2×concurrent_tool_calls as the pending-request cap) to
// stdio.Options.

const mib = 1 << 20

// quiet waits until n has not changed for 500ms and returns it.
func quiet(n func() int64) int64 {
	last := n()
	for stable := 0; stable < 10; {
		time.Sleep(50 * time.Millisecond)
		if v := n(); v != last {
			last, stable = v, 0
		} else {
			stable++
		}
	}
	return last
}

// TestStdioMemoryClientNotReading: a client writes many echo requests with
// inline results and never reads stdout. Before, mcpkit read on, and every
// answered call's reply waited in memory (150,000 small echoes: 859 MB);
// now reading pauses at inflight_request_bytes of unanswered requests, so
// the peak stays within a bound derived from the limits, whatever the
// client writes.
func TestStdioMemoryClientNotReading(t *testing.T) {
	t.Parallel()
	const (
		frame    = 1 * mib
		inflight = 4 * mib
		size     = 256 << 10 // per request; the inline reply is about twice that
		requests = 400       // 100 MiB if nothing stopped the client
	)
	cfg := writeConfig(t, fmt.Sprintf(`{"limits":{"frame_bytes":%d,"inflight_request_bytes":%d,"inline_result_bytes":%d}}`,
		frame, inflight, 1*mib))
	rs := startRawStdio(t, "--plugins", "diag", "--config", cfg)
	idle := vmHWM(t, rs.proc.cmd.Process.Pid)
	line := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"diag_echo","arguments":{"message":"` + strings.Repeat("x", size) + `"}}}` + "\n"
	var written atomic.Int64
	go func() {
		for i := range requests {
			if _, err := fmt.Fprintf(rs.in, line, i+1); err != nil {
				return // the test closed stdin
			}
			written.Add(size)
		}
	}()
	n := quiet(written.Load)
	peak := vmHWM(t, rs.proc.cmd.Process.Pid)
	// Unanswered requests hold at most inflight bytes, plus the frame being
	// read; each byte of them costs the process a bounded factor (decoded
	// request, tool argument, serialized result, reply, garbage until the
	// next collection): measured below by TestStdioMemoryOneFrame.
	bound := idle + memFactor*(inflight+frame)
	t.Logf("client wrote %d MiB before mcpkit stopped reading; peak RSS %d MiB (idle %d MiB, bound %d MiB)",
		n/mib, peak/mib, idle/mib, bound/mib)
	if n >= requests*size {
		t.Errorf("mcpkit read all %d MiB while no reply could be written: reading never paused", n/mib)
	}
	if peak > bound {
		t.Errorf("peak RSS %d MiB exceeds %d MiB, the bound derived from the limits", peak/mib, bound/mib)
	}
	for range requests { // every request is answered once the client reads
		rs.readLine()
	}
}

// memFactor bounds the peak RSS a request costs mcpkit per byte of it.
const memFactor = 12

// TestStdioMemoryOneFrame: one echo of frame_bytes costs a bounded multiple
// of its size.
func TestStdioMemoryOneFrame(t *testing.T) {
	t.Parallel()
	const frame = 32 * mib
	cfg := writeConfig(t, fmt.Sprintf(`{"limits":{"frame_bytes":%d,"inflight_request_bytes":%d}}`, frame, frame))
	rs := startRawStdio(t, "--plugins", "diag", "--config", cfg)
	idle := vmHWM(t, rs.proc.cmd.Process.Pid)
	rs.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"diag_echo","arguments":{"message":"` + strings.Repeat("x", frame-200) + `"}}}` + "\n")
	reply := rs.readLine()
	peak := vmHWM(t, rs.proc.cmd.Process.Pid)
	if !strings.Contains(string(reply), `"id":1`) || strings.Contains(string(reply), `"isError":true`) {
		t.Fatalf("the echo failed: %.300s", reply)
	}
	t.Logf("one %d MiB frame: peak RSS %d MiB over idle %d MiB (%.1f times the frame)",
		frame/mib, (peak-idle)/mib, idle/mib, float64(peak-idle)/frame)
	if bound := idle + memFactor*frame; peak > bound {
		t.Errorf("peak RSS %d MiB exceeds %d MiB (%d times the frame)", peak/mib, bound/mib, memFactor)
	}
}
