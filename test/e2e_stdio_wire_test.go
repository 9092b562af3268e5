package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawStdio is bin/mcpkit serving over stdio through OS pipes, driven with
// raw lines. Nothing reads its stdout until the test does, so the server
// can be made to wait on a client that does not read.
type rawStdio struct {
	t    testing.TB
	proc *proc
	in   *os.File
	out  *bufio.Reader
}

func startRawStdio(t testing.TB, args ...string) *rawStdio {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, inR, outW, append([]string{"serve", "--stdio", "--log-level", "warn"}, args...)...)
	inR.Close() // the child holds its own copies
	outW.Close()
	rs := &rawStdio{t: t, proc: p, in: inW, out: bufio.NewReaderSize(outR, 1<<20)}
	t.Cleanup(func() {
		inW.Close() // EOF: the server ends once every reply is written
		go func() { rs.out.WriteTo(io.Discard); outR.Close() }()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second): // proc's own cleanup interrupts it
		}
	})
	rs.write(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	if id := rs.readID(); id != `"init"` {
		t.Fatalf("initialize answered with id %s", id)
	}
	return rs
}

func (rs *rawStdio) write(s string) {
	rs.t.Helper()
	if _, err := rs.in.WriteString(s); err != nil {
		rs.t.Fatalf("writing to mcpkit: %v", err)
	}
}

// readLine returns the next stdout line, failing after 10s.
func (rs *rawStdio) readLine() []byte {
	rs.t.Helper()
	type lineErr struct {
		line []byte
		err  error
	}
	c := make(chan lineErr, 1)
	go func() {
		line, err := rs.out.ReadBytes('\n')
		c <- lineErr{line, err}
	}()
	select {
	case le := <-c:
		if le.err != nil {
			rs.t.Fatalf("reading mcpkit's stdout: %v\nstderr:\n%s", le.err, rs.proc.stderr.String())
		}
		return le.line
	case <-time.After(10 * time.Second):
		rs.t.Fatalf("no line from mcpkit within 10s\nstderr:\n%s", rs.proc.stderr.String())
		return nil
	}
}

// rest closes stdin and returns everything mcpkit writes until it exits.
func (rs *rawStdio) rest() []byte {
	rs.t.Helper()
	rs.in.Close()
	c := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		rs.out.WriteTo(&b)
		c <- b.Bytes()
	}()
	select {
	case b := <-c:
		return b
	case <-time.After(10 * time.Second):
		rs.t.Fatalf("mcpkit did not exit within 10s of EOF\nstderr:\n%s", rs.proc.stderr.String())
		return nil
	}
}

// readID reads a line and returns the raw text of its "id" member.
func (rs *rawStdio) readID() string {
	rs.t.Helper()
	line := rs.readLine()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		rs.t.Fatalf("stdout line is not a JSON object: %.200q", line)
	}
	return string(m["id"])
}

// TestStdioIDsEchoedExactly: request ids come back byte for byte, including
// those the SDK decodes through float64 (before, 9007199254740993 came back
// as 9007199254740992, 123456789012345678901234567890 as
// -9223372036854775808 and 1.5 as 1), and two calls in flight whose ids the
// SDK would take for one are both answered.
func TestStdioIDsEchoedExactly(t *testing.T) {
	t.Parallel()
	rs := startRawStdio(t, "--plugins", "diag")
	sleep := func(id string, ms int) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"diag_sleep","arguments":{"ms":` + strconv.Itoa(ms) + `}}}` + "\n"
	}
	rs.write(sleep("9007199254740993", 300) + sleep("9007199254740992", 300))
	got := map[string]bool{rs.readID(): true, rs.readID(): true}
	if !got["9007199254740993"] || !got["9007199254740992"] {
		t.Fatalf("response ids %v, want 9007199254740993 and 9007199254740992", got)
	}
	for _, id := range []string{"123456789012345678901234567890", "1.5", "-0", "1e3", "-12.50e-3", "42", `"s"`} {
		rs.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n")
		if got := rs.readID(); got != id {
			t.Errorf("ping %s answered with id %s", id, got)
		}
	}
}

// TestStdioCancelledCallNotAnswered: a call the client cancels gets no
// response (MCP: the receiver of notifications/cancelled should not send
// one); a later ping is answered.
func TestStdioCancelledCallNotAnswered(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"7", "7.5", `"seven"`} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			rs := startRawStdio(t, "--plugins", "diag")
			rs.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"diag_sleep","arguments":{"ms":5000}}}` + "\n")
			time.Sleep(200 * time.Millisecond) // let the call start
			rs.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}` + "\n")
			time.Sleep(200 * time.Millisecond) // let the handler end and its reply be written, or not
			rs.write(`{"jsonrpc":"2.0","id":"after","method":"ping"}` + "\n")
			if got := rs.readID(); got != `"after"` {
				t.Fatalf("first line after the cancellation has id %s, want \"after\"", got)
			}
			if rest := rs.rest(); len(bytes.TrimSpace(rest)) > 0 {
				t.Fatalf("output after the ping: %.300q", rest)
			}
		})
	}
}

// vmHWM returns the peak resident set size of process pid, in bytes.
func vmHWM(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the peak RSS: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
