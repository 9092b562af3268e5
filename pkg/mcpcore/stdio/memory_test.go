package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The memory tests run the server in a child process (this test binary,
// re-executed with serveEnv set) on its real stdin and stdout, and read its
// peak resident set size (VmHWM) from /proc: the honest measure of what a
// client can make the process hold, garbage and runtime overhead included.

// serveEnv, when set, makes the test binary serve newServer() over stdio
// with the Options JSON-encoded in its value, instead of running tests.
const serveEnv = "MCPKIT_STDIO_TEST_SERVE"

// serveChild is the child process's main: it serves until stdin ends.
func serveChild(optsJSON string) int {
	var opts Options
	if err := json.Unmarshal([]byte(optsJSON), &opts); err != nil {
		fmt.Fprintln(os.Stderr, "bad options:", err)
		return 2
	}
	ss, err := newServer().Connect(context.Background(), NewTransport(os.Stdin, os.Stdout, opts), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 1
	}
	ss.Wait()
	return 0
}

// memChild is a server child process and its pipes.
type memChild struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	written atomic.Int64 // bytes the client has written
}

func startMemChild(t *testing.T, opts Options) *memChild {
	t.Helper()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read the peak RSS")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies memory use; test/e2e_stdio_memory_test.go measures the binary")
	}
	optsJSON, _ := json.Marshal(opts)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+string(optsJSON), "GOMAXPROCS=2")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &memChild{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	t.Cleanup(func() {
		in.Close()
		go io.Copy(io.Discard, out)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server child: %v", err)
			}
		case <-time.After(waitTimeout):
			cmd.Process.Kill()
			<-done
			t.Error("server child did not exit after EOF")
		}
	})
	c.write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mem","version":"0"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	c.readLine()
	return c
}

func (c *memChild) write(s string) {
	c.t.Helper()
	n, err := io.WriteString(c.in, s)
	c.written.Add(int64(n))
	if err != nil {
		c.t.Fatalf("writing to the server: %v", err)
	}
}

func (c *memChild) readLine() []byte {
	c.t.Helper()
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("reading the server's output: %v", err)
	}
	return line
}

// peakRSS returns the child's VmHWM in bytes.
func (c *memChild) peakRSS() int64 {
	c.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		c.t.Fatal(err)
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			if err != nil {
				c.t.Fatalf("VmHWM line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	c.t.Fatal("no VmHWM in /proc status")
	return 0
}

func echoLine(id int, text string) string {
	return toolCall(strconv.Itoa(id), "echo", `{"text":"`+text+`"}`)
}

const miB = 1 << 20

// TestMemoryBoundedWhenClientDoesNotRead: a client writes many large
// requests and never reads. The server's peak RSS must stay within a bound
// derived from the limits, whatever the amount written: reading pauses at
// MaxInflightBytes of unanswered requests.
func TestMemoryBoundedWhenClientDoesNotRead(t *testing.T) {
	t.Parallel()
	const (
		frame    = 1 * miB
		inflight = 4 * miB
		size     = 256 << 10 // per request; the echo's response is twice that
		requests = 400       // 100 MiB written if nothing stopped the client
	)
	c := startMemChild(t, Options{MaxFrameBytes: frame, MaxInflightBytes: inflight, MaxPendingRequests: 1 << 20})
	idle := c.peakRSS()
	text := strings.Repeat("x", size)
	go func() {
		for i := range requests {
			if _, err := io.WriteString(c.in, echoLine(i+1, text)); err != nil {
				return // the test closed the pipe
			}
			c.written.Add(int64(size))
		}
	}()
	written := quiescent(c.written.Load)
	peak := c.peakRSS()
	// Unanswered requests hold at most inflight bytes, plus the frame being
	// read; each of their bytes costs this server a bounded factor (the
	// SDK decodes a request three times over, a typed tool validates and
	// decodes its arguments, the echo's reply is twice the request; one
	// large frame peaks at about 18 times its size).
	bound := idle + memFactor*(inflight+frame)
	t.Logf("wrote %d MiB before the server stopped reading; peak RSS %d MiB (idle %d MiB, bound %d MiB)",
		written/miB, peak/miB, idle/miB, bound/miB)
	if written >= requests*size {
		t.Errorf("the server read all %d MiB without answering: reading never paused", written/miB)
	}
	if peak > bound {
		t.Errorf("peak RSS %d MiB exceeds the bound %d MiB derived from the limits", peak/miB, bound/miB)
	}
	for range requests { // everything is answered once the client reads
		c.readLine()
	}
}

// memFactor bounds the peak RSS that a byte of request costs this test's
// server (SDK typed echo tool), transport included.
const memFactor = 20
