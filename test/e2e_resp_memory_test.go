package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/internal/resptest"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRespMemoryLargePipeline: a pipeline of GETs whose replies fill the
// 64 MiB reply budget (9 values of 7 MiB) is answered, and its result read
// back in pages through resp_result, with the process's peak resident set
// (VmHWM) within twice the budget: each reply is encoded as it is read and
// released, and the result is retained as written, outside the Go heap, not
// as decoded values, JSON, a text copy and the stored result at once
// (before: 436 MiB; streamed but retained on the heap, where the
// collector's headroom doubled it while it was paged: 156 MiB; now about
// 100 MiB).
func TestRespMemoryLargePipeline(t *testing.T) {
	// Text values are served as UTF-8 strings; binary ones as base64, a
	// third larger.
	for _, binary := range []bool{false, true} {
		t.Run(fmt.Sprintf("binary=%v", binary), func(t *testing.T) { testRespMemoryLargePipeline(t, binary) })
	}
}

func testRespMemoryLargePipeline(t *testing.T, binaryValues bool) {
	const (
		values = 9
		size   = 7 * mib
		budget = 64 * mib  // reply_bytes' default
		bound  = 136 * mib // about twice the budget, the process itself included
	)
	srv := redistest.Start(t, redistest.Options{})
	fillLargeValues(t, srv, values, size, binaryValues)
	stderr := &syncBuffer{}
	cmd := exec.Command(binary(t), "resp", "--config", respConfig(t, srv, nil, nil))
	cmd.Env = os.Environ()
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to mcpkit resp: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	idle := vmHWM(t, cmd.Process.Pid)
	var cmds [][]string
	for i := range values {
		cmds = append(cmds, []string{"GET", "big:" + strconv.Itoa(i)})
	}
	out, isErr := call(t, cs, "resp_execute", map[string]any{"format": "json", "commands": cmds})
	peak := vmHWM(t, cmd.Process.Pid)
	if isErr {
		t.Fatalf("the pipeline failed: %.500s", out)
	}
	if len(out) < values*size {
		t.Fatalf("the result has %d bytes, want the %d values", len(out), values)
	}
	var got struct{ Replies []resptest.Frame }
	if err := json.Unmarshal(out, &got); err != nil || len(got.Replies) != values {
		t.Fatalf("the result: %v, %d replies", err, len(got.Replies))
	}
	for i, r := range got.Replies {
		if r.Str(t) != bigValue(i, size, binaryValues) {
			t.Fatalf("reply %d is not value %d", i, i)
		}
	}
	t.Logf("%d × %d MiB GET (binary %v): peak RSS %d MiB (idle %d MiB; reply budget %d MiB, bound %d MiB)",
		values, size/mib, binaryValues, peak/mib, idle/mib, budget/mib, bound/mib)
	if peak > bound {
		t.Errorf("peak RSS %d MiB exceeds %d MiB, about twice the %d MiB reply budget", peak/mib, bound/mib, budget/mib)
	}
}

// bigValue is the i-th value of size bytes, distinct per i: printable
// ASCII, or bytes that are not UTF-8.
func bigValue(i, size int, binary bool) string {
	b := make([]byte, size)
	for j := range b {
		b[j] = byte('a' + (i*7+j)%26)
		if binary {
			b[j] |= 0x80
		}
	}
	copy(b, fmt.Sprintf("value-%d-", i))
	return string(b)
}

// fillLargeValues sets big:0..n-1 to bigValue over a connection of the
// test's own, so that mcpkit's peak memory is the GETs' alone.
func fillLargeValues(t *testing.T, srv *redistest.Server, n, size int, binary bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := resp.Dial(ctx, resp.DialOptions{Addr: srv.Addr, Password: srv.Password})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range n {
		v, err := conn.Do(ctx, []byte("SET"), []byte("big:"+strconv.Itoa(i)), []byte(bigValue(i, size, binary)))
		if err != nil || v.IsError() {
			t.Fatalf("SET big:%d: %v %s", i, err, v.Str)
		}
	}
}
