package test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// eofInput is an MCP session written to stdin at once and closed: the
// server reads EOF while the first requests are still being answered.
func eofInput(calls ...string) string {
	lines := append([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"eof","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, calls...)
	return strings.Join(lines, "\n") + "\n"
}

// runToEOF runs bin/mcpkit with input on stdin and returns the responses
// it wrote by id (raw JSON text), failing unless it exits with 0 within
// 30s.
func runToEOF(t *testing.T, input string, args ...string) map[string]string {
	t.Helper()
	var out bytes.Buffer
	p := startProc(t, strings.NewReader(input), &out, args...)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpkit %v still running 30s after its stdin ended", args)
	}
	if p.err != nil {
		t.Fatalf("mcpkit %v: %v\n%s", args, p.err, p.stderr.String())
	}
	got := map[string]string{}
	for line := range strings.Lines(out.String()) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		got[string(m.ID)] = line
	}
	return got
}

// TestStdioEOFAnswersRequestsRead: initialize, tools/list, ping and a tool
// call written at once, followed by EOF (`printf ... | mcpkit serve
// --stdio`), are all answered before the process exits; before, the
// answers were usually lost (run with -count 20: the race was lost most
// of the time, not always). The SDK answers these requests.
func TestStdioEOFAnswersRequestsRead(t *testing.T) {
	t.Parallel()
	call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"diag_sleep","arguments":{"ms":200}}}`
	got := runToEOF(t, eofInput(call), "serve", "--stdio", "--plugins", "diag", "--log-level", "warn")
	for id := 1; id <= 4; id++ {
		line := got[strconv.Itoa(id)]
		if !strings.Contains(line, `"result":`) {
			t.Errorf("request %d answered with %.300q; ids answered: %v", id, line, slices.Sorted(maps.Keys(got)))
		}
	}
}

// TestStdioEOFAnswersDirectCalls: the same through the RESP sidecar, whose
// execute calls the host answers itself (direct calls, on one processor):
// a call still waiting on Redis when stdin ends (BLPOP for 300ms) is
// answered too.
func TestStdioEOFAnswersDirectCalls(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	exec := func(id int, cmd string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"resp_execute","arguments":{"commands":[` + cmd + `]}}}`
	}
	input := eofInput(exec(4, `["SET","eof","v"]`), exec(5, `["BLPOP","eof-list","0.3"]`), exec(6, `["GET","eof"]`))
	got := runToEOF(t, input, "resp", "--host", "127.0.0.1", "--port", strconv.Itoa(srv.Port), "--log-level", "warn")
	for id := 1; id <= 6; id++ {
		line := got[strconv.Itoa(id)]
		if !strings.Contains(line, `"result":`) {
			t.Errorf("request %d answered with %.300q; ids answered: %v", id, line, slices.Sorted(maps.Keys(got)))
		}
	}
	if !strings.Contains(got["6"], `"content":[{"type":"text","text":"v"}]`) || strings.Contains(got["6"], `"structuredContent"`) {
		t.Errorf("GET answered with %.300s", got["6"])
	}
}

// TestStdioOversizedIDLast: a request line over frame_bytes whose id comes
// after its params, as the TypeScript SDK writes it, is answered with its
// id (before: id null, and the client waited for its own timeout), and the
// session goes on. The 64 MiB line is skipped as it is read, not kept: the
// peak resident memory grows by far less than the line.
func TestStdioOversizedIDLast(t *testing.T) {
	t.Parallel()
	const size = 64 * mib
	cfg := writeConfig(t, `{"limits": {"frame_bytes": 65536}}`)
	rs := startRawStdio(t, "--plugins", "diag", "--config", cfg)
	before := vmHWM(t, rs.proc.cmd.Process.Pid)
	go func() { // the pipe holds 64 KiB: write while the test reads
		rs.in.WriteString(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"diag_echo","arguments":{"message":"` +
			strings.Repeat("x", size) + `"}},"id":"ts-last"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
	}()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rs.readLine(), &m); err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != `"ts-last"` || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "frame_bytes") {
		t.Fatalf("oversized line answered with id %s, error %+v", m.ID, m.Error)
	}
	if id := rs.readID(); id != "2" {
		t.Fatalf("the next request answered with id %s", id)
	}
	peak := vmHWM(t, rs.proc.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB before the line, %d MiB after", before/mib, peak/mib)
	if peak-before > 16*mib {
		t.Errorf("reading a %d MiB line over a 64 KiB limit raised the peak RSS by %d MiB, want at most 16 MiB", size/mib, (peak-before)/mib)
	}
}
