package test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	segjson "github.com/segmentio/encoding/json"
)

// The workload of BenchmarkRespSessions: respSessions sessions at once,
// each making respSessionRounds calls (after respSessionWarmup unmeasured
// ones): pipelines of 128 commands with values of respSessionValueBytes
// (96 SETs, 32 GETs), and every fourth call a blocking one (an LPUSH to
// the next session's list, then a BLPOP of its own for up to 20 ms).
const (
	respSessions          = 8
	respSessionRounds     = 60
	respSessionWarmup     = 10
	respSessionValueBytes = 1024
	respSessionRuns       = 5
)

// BenchmarkRespSessions measures `mcpkit resp` under concurrent load with
// the Go runtime on one processor (what `mcpkit resp` sets over stdio,
// cli.ServeParams.OneProcessor) and on the default number (the GOMAXPROCS
// environment variable, set to the machine's CPUs, overrides the forcing),
// in interleaved runs (the order alternating), in two shapes:
//
//   - processes: 8 MCP sessions, each an `mcpkit resp` process over stdio,
//     as 8 agents that each start the sidecar;
//   - handles: one `mcpkit resp` process over stdio with 8 concurrent
//     calls, each on a session of its own (resp_session open: a Redis
//     connection each), as one agent that works in parallel.
//
// It prints, per shape and setting, the commands per second of the
// pipelines (all sessions together), the p50 and p95 of a pipeline call and
// the p50 of a blocking call, each the median of the runs. It measures; it
// has no target (`make bench-resp-sessions`; b.N is ignored).
func BenchmarkRespSessions(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{})
	value := strings.Repeat("v", respSessionValueBytes)
	type result struct{ rate, p50, p95, block50 float64 }
	results := map[string][]result{}
	var order []string
	for run := range respSessionRuns {
		settings := []string{"one", "default"}
		if run%2 == 1 {
			slices.Reverse(settings)
		}
		for _, shape := range []string{"processes", "handles"} {
			for _, setting := range settings {
				rate, pipe, block := runSessions(b, srv.Port, shape, setting, value)
				key := shape + " " + setting
				if _, ok := results[key]; !ok {
					order = append(order, key)
				}
				results[key] = append(results[key], result{rate, q(pipe, 0.5), q(pipe, 0.95), q(block, 0.5)})
			}
		}
	}
	median := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	slices.Sort(order)
	var table []string
	for _, key := range order {
		rs := results[key]
		var runs []string
		for _, r := range rs {
			runs = append(runs, fmt.Sprintf("%.0f", r.rate))
		}
		table = append(table, fmt.Sprintf("%-18s  %9.0f  %7.0f  %7.0f  %8.0f   %s", key,
			median(rs, func(r result) float64 { return r.rate }), median(rs, func(r result) float64 { return r.p50 }),
			median(rs, func(r result) float64 { return r.p95 }), median(rs, func(r result) float64 { return r.block50 }),
			strings.Join(runs, " ")))
	}
	b.Logf("mcpkit resp, %d concurrent sessions, pipelines of 128 (%d B values) and blocking calls; GOMAXPROCS one (forced) or default (%d);\n"+
		"medians of %d interleaved runs (commands/s of the pipelines, all sessions; call latency in µs):\n"+
		"shape / setting        cmd/s  pipe p50  pipe p95  block p50   each run's cmd/s\n%s",
		respSessions, respSessionValueBytes, runtime.NumCPU(), respSessionRuns, strings.Join(table, "\n"))
}

// q returns the q quantile of ds, in microseconds.
func q(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / 1e3
}

// runSessions runs the workload once in shape with setting, and returns the
// pipelines' commands per second and the latencies of the pipeline and
// blocking calls.
func runSessions(b *testing.B, port int, shape, setting, value string) (float64, []time.Duration, []time.Duration) {
	b.Helper()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
	if setting == "default" {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(runtime.NumCPU()))
	}
	start := func() *muxClient {
		cmd := exec.Command(binary(b), "resp", "--port", strconv.Itoa(port), "--log-level", "warn")
		cmd.Env = env
		return startMuxClient(b, cmd)
	}
	type session struct {
		c      *muxClient
		handle string
	}
	sessions := make([]session, respSessions)
	var shared *muxClient
	for i := range sessions {
		switch shape {
		case "processes":
			sessions[i] = session{c: start()}
		default:
			if shared == nil {
				shared = start()
			}
			var open struct {
				Result struct {
					StructuredContent struct {
						Session string `json:"session"`
					} `json:"structuredContent"`
				} `json:"result"`
			}
			line := shared.call(b, "resp_session", `{"action":"open"}`)
			if _, err := segjson.Parse(line, &open, 0); err != nil || open.Result.StructuredContent.Session == "" {
				b.Fatalf("resp_session open: %v: %.300s", err, line)
			}
			sessions[i] = session{c: shared, handle: open.Result.StructuredContent.Session}
		}
	}
	var (
		mu            sync.Mutex
		pipes, blocks []time.Duration
		warm, wg      sync.WaitGroup
	)
	ready := make(chan struct{})
	warm.Add(len(sessions))
	for i, s := range sessions {
		pipeline, blocking := sessionCalls(i, s.handle, value)
		wg.Go(func() {
			for range respSessionWarmup {
				s.c.execute(b, pipeline, 128)
			}
			warm.Done()
			<-ready
			var ps, bs []time.Duration
			for r := range respSessionRounds {
				t0 := time.Now()
				if r%4 == 3 {
					s.c.execute(b, blocking, 2)
					bs = append(bs, time.Since(t0))
					continue
				}
				s.c.execute(b, pipeline, 128)
				ps = append(ps, time.Since(t0))
			}
			mu.Lock()
			pipes, blocks = append(pipes, ps...), append(blocks, bs...)
			mu.Unlock()
		})
	}
	warm.Wait()
	began := time.Now()
	close(ready)
	wg.Wait()
	elapsed := time.Since(began)
	for _, s := range sessions {
		s.c.stop(b)
	}
	return float64(len(pipes)*128) / elapsed.Seconds(), pipes, blocks
}

// sessionCalls returns the arguments of session i's pipeline and blocking
// calls.
func sessionCalls(i int, handle, value string) (pipeline, blocking string) {
	var cmds []string
	for j := range 96 {
		cmds = append(cmds, fmt.Sprintf(`["SET","s%d:%d",%q]`, i, j, value))
	}
	for j := range 32 {
		cmds = append(cmds, fmt.Sprintf(`["GET","s%d:%d"]`, i, j))
	}
	session := ""
	if handle != "" {
		session = fmt.Sprintf(`,"session":%q`, handle)
	}
	pipeline = `{"format":"json","commands":[` + strings.Join(cmds, ",") + `]` + session + `}`
	blocking = fmt.Sprintf(`{"format":"json","commands":[["LPUSH","q:%d","x"],["BLPOP","q:%d","0.02"]]%s}`, (i+1)%respSessions, i, session)
	return pipeline, blocking
}

// muxClient is a JSON-RPC client over a subprocess's stdio that several
// goroutines call at once: requests are written whole under a lock, and a
// reader goroutine hands each reply to the call waiting for its id.
type muxClient struct {
	cmd  *exec.Cmd
	in   *os.File
	out  *os.File
	wmu  sync.Mutex
	mu   sync.Mutex
	next int
	wait map[int]chan []byte
	done chan struct{} // the reader has returned
}

func startMuxClient(b testing.TB, cmd *exec.Cmd) *muxClient {
	b.Helper()
	inW, outR := startPiped(b, cmd)
	c := &muxClient{cmd: cmd, in: inW, out: outR, wait: map[int]chan []byte{}, done: make(chan struct{})}
	go c.readLoop()
	b.Cleanup(func() { c.stop(b) })
	c.request(b, "initialize", `{"protocolVersion":"`+legacyEra+`","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}`)
	c.wmu.Lock()
	c.in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	c.wmu.Unlock()
	return c
}

// readLoop hands each reply to its waiting call, until EOF.
func (c *muxClient) readLoop() {
	defer close(c.done)
	r := bufio.NewReaderSize(c.out, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID *int `json:"id"`
		}
		if _, err := segjson.Parse(line, &m, 0); err != nil || m.ID == nil {
			continue // a notification
		}
		c.mu.Lock()
		ch := c.wait[*m.ID]
		delete(c.wait, *m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

// request sends a request and returns its reply line.
func (c *muxClient) request(b testing.TB, method, params string) []byte {
	ch := make(chan []byte, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.wait[id] = ch
	c.mu.Unlock()
	line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + "}\n"
	c.wmu.Lock()
	_, err := c.in.WriteString(line)
	c.wmu.Unlock()
	if err != nil {
		b.Errorf("write to mcpkit: %v", err)
		return nil
	}
	select {
	case reply := <-ch:
		return reply
	case <-c.done:
		b.Errorf("mcpkit closed its output before answering %s", method)
		return nil
	case <-time.After(time.Minute):
		b.Errorf("no answer to %s", method)
		return nil
	}
}

func (c *muxClient) call(b testing.TB, tool, arguments string) []byte {
	return c.request(b, "tools/call", `{"name":"`+tool+`","arguments":`+arguments+`}`)
}

// execute runs resp_execute and checks its outcome and reply count.
func (c *muxClient) execute(b testing.TB, arguments string, replies int) {
	line := c.call(b, "resp_execute", arguments)
	var r rpcReply
	if _, err := segjson.Parse(line, &r, segjson.ZeroCopy); err != nil || r.Error != nil || r.Result.IsError ||
		r.Result.StructuredContent.Outcome != "ok" || len(r.Result.StructuredContent.Replies) != replies {
		b.Errorf("resp_execute: %v: %.300s", err, bytes.TrimSpace(line))
	}
}

// stop closes the process's stdin (EOF ends the session) and waits for it.
func (c *muxClient) stop(b testing.TB) {
	c.wmu.Lock()
	c.in.Close()
	c.wmu.Unlock()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
	}
	if c.cmd.ProcessState == nil {
		c.cmd.Wait()
	}
	c.out.Close()
}
