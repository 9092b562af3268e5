package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/rawio"
	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// respBatchSizes are the pipeline lengths BenchmarkRespSidecar measures.
var respBatchSizes = []int{1, 16, 128}

// Targets of BenchmarkRespSidecar. At batch 128 the sidecar's ratio to
// direct RESP's throughput is at least 0.85 of the ratio the lower bound
// (test/internal/respbound) reaches in the same run (issue 26): the
// machine's noise moves both alike, where an absolute ratio measures the
// machine as much as mcpkit. The absolute target of issue 6, half of
// direct RESP's throughput, is still reported (and printed as met or
// missed), not enforced. At batch 1 the sidecar's median round costs at
// most 150 µs more than direct RESP's. The verdict is the median of five
// runs (scripts/bench-resp-median.sh, `make bench-resp RUNS=5`); one run
// fails when it misses a target.
const (
	respMinOfBound         = 0.85
	respMinThroughputRatio = 0.5 // reported, not enforced
	respMaxAddedP50        = 150 * time.Microsecond
)

// respWarmupRounds are the unmeasured rounds of each side before a batch
// size's measured ones.
const respWarmupRounds = 200

// respRounds is one side's measured rounds of one batch size.
type respRounds []time.Duration

// stats returns commands per second over the rounds, and their p50 and p95.
func (r respRounds) stats(batch int) (perSec float64, p50, p95 time.Duration) {
	s := slices.Clone(r)
	slices.Sort(s)
	var total time.Duration
	for _, d := range s {
		total += d
	}
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return float64(batch*len(s)) / total.Seconds(), at(0.50), at(0.95)
}

// BenchmarkRespSidecar measures, in the style of the seed's
// benchmarks/mcp.py, a persistent MCP stdio session through `bin/mcpkit
// resp` (resp_execute) against a direct persistent RESP connection
// (pkg/resp's pipeline) on the same disposable redis-server, one round (a
// pipeline of SETs) of each in turn, at batch sizes 1, 16 and 128; b.N is
// the measured rounds per side (`make bench-resp` runs 100), after
// respWarmupRounds unmeasured ones.
//
// The MCP side is a thin JSON-RPC client, as a benchmark harness is: it
// writes one request line and decodes the reply line (checking the id, the
// outcome and the reply count), so the figures are the sidecar's cost. The
// same calls through the Go SDK's client are measured too, for the cost an
// agent's client adds. It prints commands per second, p50 and p95 round
// latency and the MCP/direct ratio, with `redis-benchmark -P <batch> -c 1` on
// the same server as the ceiling of one connection, and the MCP floor (a
// call that does no datastore I/O); it fails when a target is missed.
//
// Beside mcpkit it measures the lower bound of any Go sidecar on the same
// machine: test/internal/respbound, which answers the same calls with the
// same bytes and does nothing else (no decoding, validation, session or
// limit), through the same thin client, its rounds alternating with
// direct rounds of their own after mcpkit's. Its ratio says how much of
// the gap to direct RESP is the MCP exchange itself (two more pipe hops,
// a JSON request and response) rather than mcpkit.
func BenchmarkRespSidecar(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{})
	args := []string{"resp", "--port", strconv.Itoa(srv.Port), "--log-level", "warn"}
	thin := startRPCClient(b, exec.Command(binary(b), args...))
	sdk := connectCommand(b, exec.Command(binary(b), args...), "")
	bound := startRPCClient(b, exec.Command(buildInternal(b, "respbound"), "--port", strconv.Itoa(srv.Port)))
	direct, err := resp.Dial(b.Context(), resp.DialOptions{Addr: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })

	// The MCP floor: a round trip of the sidecar that does no datastore I/O.
	floor := func(c *rpcClient) (p50, p95 time.Duration) {
		rounds := make(respRounds, 0, 200)
		for i := range 220 {
			start := time.Now()
			c.call(b, "resp_session", `{"action":"list"}`, -1)
			if i >= 20 {
				rounds = append(rounds, time.Since(start))
			}
		}
		_, p50, p95 = rounds.stats(1)
		return p50, p95
	}
	floorP50, floorP95 := floor(thin)
	boundFloorP50, _ := floor(bound)

	var table []string
	for _, batch := range respBatchSizes {
		jsonCmds := make([][]any, batch)
		wireCmds := make([][][]byte, batch)
		for i := range batch {
			key, value := fmt.Sprintf("bench:%d", i), fmt.Sprintf("value-%010d", i)
			jsonCmds[i] = []any{"SET", key, value}
			wireCmds[i] = [][]byte{[]byte("SET"), []byte(key), []byte(value)}
		}
		arguments, err := json.Marshal(map[string]any{"format": "json", "commands": jsonCmds})
		if err != nil {
			b.Fatal(err)
		}
		params := &mcp.CallToolParams{Name: "resp_execute", Arguments: map[string]any{"format": "json", "commands": jsonCmds}}
		viaThin := func() { thin.call(b, "resp_execute", string(arguments), batch) }
		viaBound := func() { bound.call(b, "resp_execute", string(arguments), batch) }
		viaSDK := func() {
			res, err := sdk.CallTool(b.Context(), params)
			if err != nil || res.IsError {
				b.Fatalf("resp_execute: %v %v", err, res)
			}
		}
		viaRESP := func() {
			res, err := direct.Pipeline(b.Context(), wireCmds, resp.PipelineOptions{})
			if err != nil || len(res.Replies) != batch {
				b.Fatalf("pipeline: %v (%d replies)", err, len(res.Replies))
			}
		}
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			// The two compared sides alternate, so noise hits both alike; the
			// SDK client's rounds follow, apart, so that its process does not
			// disturb them, and then the lower bound's, alternating with
			// direct rounds of their own.
			ops := []func(){viaThin, viaRESP, viaSDK, viaBound, viaRESP}
			// Warm-up, unmeasured: both sides are persistent sessions, and
			// a process's first few hundred calls (allocator, stacks, caches)
			// run up to twice as slow as its later ones.
			for range respWarmupRounds {
				for _, op := range ops {
					op()
				}
			}
			rounds := make([]respRounds, len(ops))
			measure := func(i int) {
				start := time.Now()
				ops[i]()
				rounds[i] = append(rounds[i], time.Since(start))
			}
			b.ResetTimer()
			for range b.N {
				measure(0)
				measure(1)
			}
			b.StopTimer()
			for range b.N {
				measure(2)
			}
			for range b.N {
				measure(3)
				measure(4)
			}
			mcpRate, mcpP50, mcpP95 := rounds[0].stats(batch)
			respRate, respP50, respP95 := rounds[1].stats(batch)
			_, sdkP50, _ := rounds[2].stats(batch)
			boundRate, _, _ := rounds[3].stats(batch)
			boundRespRate, _, _ := rounds[4].stats(batch)
			b.ReportMetric(mcpRate, "mcp-cmd/s")
			b.ReportMetric(respRate, "direct-cmd/s")
			b.ReportMetric(mcpRate/respRate, "ratio")
			ratio, boundRatio := mcpRate/respRate, boundRate/boundRespRate
			if b.N < 100 {
				return // calibration
			}
			ceiling := redisBenchmark(b, srv, batch)
			table = append(table, fmt.Sprintf("%5d  %6d  %9.0f  %9.0f  %5.2f  %9.0f  %7s  %7s  %7s  %7s  %7s  %9.0f  %9.0f  %7.2f",
				batch, b.N, mcpRate, respRate, mcpRate/respRate, ceiling,
				micros(mcpP50), micros(respP50), micros(mcpP95), micros(respP95), micros(sdkP50),
				boundRate, boundRespRate, boundRate/boundRespRate))
			if batch == 128 {
				absolute := "met"
				if ratio < respMinThroughputRatio {
					absolute = "missed"
				}
				b.Logf("batch 128: ratio %.3f, the lower bound's %.3f: %.3f of it (target at least %.2f); the absolute target %.2f (reported, not enforced): %s",
					ratio, boundRatio, ratio/boundRatio, respMinOfBound, respMinThroughputRatio, absolute)
				if ratio < respMinOfBound*boundRatio {
					b.Errorf("batch 128: MCP's ratio to direct RESP, %.3f (%.0f against %.0f commands/s), is under %.2f of the lower bound's, %.3f, in this run (test/internal/respbound)",
						ratio, mcpRate, respRate, respMinOfBound, boundRatio)
				}
			}
			if batch == 1 && mcpP50 > respP50+respMaxAddedP50 {
				b.Errorf("batch 1: MCP p50 %v is more than %v above direct RESP's %v", mcpP50, respMaxAddedP50, respP50)
			}
		})
	}
	if len(table) > 0 {
		b.Logf("RESP sidecar over MCP stdio vs direct RESP (commands/s; round latency in µs; ceiling: redis-benchmark -P batch -c 1;\n"+
			"sdk p50: the same call through the Go SDK's client; bound/s: test/internal/respbound, the least any sidecar\n"+
			"does, against direct rounds of its own, bdir/s):\n"+
			"batch  rounds      mcp/s   direct/s  ratio    ceiling  mcp p50  dir p50  mcp p95  dir p95  sdk p50    bound/s     bdir/s  b-ratio\n%s\n"+
			"MCP floor (resp_session list, no datastore I/O, 200 calls): p50 %s µs, p95 %s µs; the bound's: p50 %s µs",
			strings.Join(table, "\n"), micros(floorP50), micros(floorP95), micros(boundFloorP50))
	}
}

// TestRespBound holds test/internal/respbound, the lower bound
// BenchmarkRespSidecar measures, to answering resp_execute with the very
// bytes bin/mcpkit answers, so that the two are compared on the same work.
func TestRespBound(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	port := strconv.Itoa(srv.Port)
	sidecar := startRPCClient(t, exec.Command(binary(t), "resp", "--port", port, "--log-level", "warn"))
	bound := startRPCClient(t, exec.Command(buildInternal(t, "respbound"), "--port", port))
	for _, batch := range []int{1, 3, 128} {
		cmds := make([]string, batch)
		for i := range cmds {
			cmds[i] = fmt.Sprintf(`["SET","bound:%d","value-%d"]`, i, i)
		}
		arguments := `{"format":"json","commands":[` + strings.Join(cmds, ",") + `]}`
		sidecar.call(t, "resp_execute", arguments, batch)
		bound.call(t, "resp_execute", arguments, batch)
		if !bytes.Equal(bound.line, sidecar.line) {
			t.Errorf("batch %d: respbound answered\n%s\nwhere mcpkit answered\n%s", batch, bound.line, sidecar.line)
		}
	}
}

func micros(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 0, 64) }

// rpcClient is a thin MCP client over a subprocess's stdio: one JSON-RPC
// request line out, one reply line in, as a benchmark harness speaks it.
type rpcClient struct {
	in   io.Writer
	out  *bufio.Reader
	id   int
	buf  []byte // the request line being written, reused
	line []byte // the last reply line read, valid until the next read
}

// startRPCClient starts cmd and initializes an MCP session (2025-11-25) on
// its stdio. Its ends of the pipes are read and written by raw system calls
// (internal/rawio), as pkg/resp reads and writes the direct side's
// connection, so that the two sides of the comparison do their I/O alike.
// The process is stopped at cleanup.
func startRPCClient(b testing.TB, cmd *exec.Cmd) *rpcClient {
	b.Helper()
	inW, outR := startPiped(b, cmd)
	in, err := rawio.File(inW)
	if err != nil {
		b.Fatal(err)
	}
	out, err := rawio.File(outR)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		inW.Close() // EOF shuts mcpkit down
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		outR.Close()
	})
	c := &rpcClient{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	c.write(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+legacyEra+`","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
	c.read(b, 0)
	c.write(b, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// startPiped starts cmd with its stdin and stdout on new pipes
// (non-blocking, as os.Pipe makes them) and returns their other ends.
func startPiped(b testing.TB, cmd *exec.Cmd) (stdin, stdout *os.File) {
	b.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close() // the child's ends
	outW.Close()
	if err != nil {
		b.Fatal(err)
	}
	return inW, outR
}

// write writes the concatenation of parts and a newline as one line,
// in one write, from a buffer kept for the next line.
func (c *rpcClient) write(b testing.TB, parts ...string) {
	c.buf = c.buf[:0]
	for _, p := range parts {
		c.buf = append(c.buf, p...)
	}
	c.buf = append(c.buf, '\n')
	if _, err := c.in.Write(c.buf); err != nil {
		b.Fatalf("write to mcpkit: %v", err)
	}
}

// rpcReply is what the thin client decodes of a reply.
type rpcReply struct {
	ID     *int            `json:"id"`
	Error  json.RawMessage `json:"error"`
	Result struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Outcome string            `json:"outcome"`
			Replies []json.RawMessage `json:"replies"`
		} `json:"structuredContent"`
	} `json:"result"`
}

// read reads lines up to the reply to id, skipping notifications.
func (c *rpcClient) read(b testing.TB, id int) rpcReply {
	for {
		// The line is read in place when it fits the reader's buffer (1 MiB)
		// and decoded without copies (its raw replies alias it): it is
		// not used after the next read.
		line, err := c.out.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			var rest []byte
			rest, err = c.out.ReadBytes('\n')
			line = append(slices.Clip(line), rest...)
		}
		if err != nil {
			b.Fatalf("read from mcpkit: %v", err)
		}
		var r rpcReply
		// segmentio's decoder, which mcpkit uses too: encoding/json takes
		// about 120 µs for a reply to 128 commands, a harness cost larger
		// than some of what the benchmark measures. It validates the
		// whole line as any decoder does.
		if rest, err := segjson.Parse(line, &r, segjson.ZeroCopy); err != nil || len(bytes.TrimSpace(rest)) > 0 {
			b.Fatalf("reply %.200q: %v", line, err)
		}
		if r.ID == nil {
			continue // a notification
		}
		if *r.ID != id || r.Error != nil || r.Result.IsError {
			b.Fatalf("reply to %d: %.300s", id, line)
		}
		c.line = line
		return r
	}
}

// call calls tool with arguments (a JSON object) and checks the reply: for
// replies >= 0, outcome ok and that many replies.
func (c *rpcClient) call(b testing.TB, tool, arguments string, replies int) {
	c.id++
	c.write(b, `{"jsonrpc":"2.0","id":`, strconv.Itoa(c.id), `,"method":"tools/call","params":{"name":"`, tool, `","arguments":`, arguments, `}}`)
	r := c.read(b, c.id)
	if sc := r.Result.StructuredContent; replies >= 0 && (sc.Outcome != "ok" || len(sc.Replies) != replies) {
		b.Fatalf("%s: outcome %q with %d replies, want ok with %d", tool, sc.Outcome, len(sc.Replies), replies)
	}
}

// redisBenchmarkRate is the requests per second of `redis-benchmark -q`.
var redisBenchmarkRate = regexp.MustCompile(`SET: ([0-9.]+) requests per second`)

// redisBenchmark runs redis-benchmark's SET test with pipelines of batch on
// one connection against srv, the ceiling of raw RESP on this machine, and
// returns its commands per second.
func redisBenchmark(b *testing.B, srv *redistest.Server, batch int) float64 {
	b.Helper()
	tool, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Fatalf("redis-benchmark (Debian's redis-tools, which redis-server depends on) not found: %v", err)
	}
	out, err := exec.Command(tool, "-h", "127.0.0.1", "-p", strconv.Itoa(srv.Port), "-t", "set", "-P", strconv.Itoa(batch),
		"-c", "1", "-n", strconv.Itoa(max(20000, 200*batch)), "-d", "16", "-q").CombinedOutput()
	m := redisBenchmarkRate.FindSubmatch(out)
	if err != nil || m == nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	rate, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		b.Fatal(err)
	}
	return rate
}
