package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine of the tests (stdio pipes, SDK
// client sessions, process waiters) outlives them. The server's own leaks are
// checked in the server process by TestNoLeakedGoroutines.
func TestMain(m *testing.M) {
	code := pgtest.M(m).Run() // then the shared PostgreSQL server (pgtest.Shared) is stopped
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if code == 0 {
		// Keep-alive connections still being torn down belong to net/http's
		// pool, not to the code under test; bleve (a benchmark peer) starts
		// its analysis workers when its package is loaded, for the life of
		// the process.
		if err := goleak.Find(goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Protocol eras every end-to-end test runs in.
const (
	legacyEra = "2025-11-25"
	modernEra = "2026-07-28"
)

var eras = []string{legacyEra, modernEra}

// binary returns the absolute path of bin/mcpkit, built by `make build`.
func binary(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "bin", "mcpkit"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `make build` first (%v)", p, err)
	}
	return p
}

// writeConfig writes a configuration file for one test.
func writeConfig(t testing.TB, cfg string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mcpkit.json")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// syncBuffer collects a subprocess's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running bin/mcpkit.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error // exit status, valid after done
}

func startProc(t testing.TB, stdin io.Reader, stdout io.Writer, args ...string) *proc {
	t.Helper()
	return startBinary(t, binary(t), stdin, stdout, args...)
}

// startBinary starts bin (bin/mcpkit or another mcpkit build) with args.
func startBinary(t testing.TB, bin string, stdin io.Reader, stdout io.Writer, args ...string) *proc {
	t.Helper()
	return startBinaryEnv(t, nil, bin, stdin, stdout, args...)
}

// startBinaryEnv is startBinary with env ("NAME=value") added to the
// process's environment.
func startBinaryEnv(t testing.TB, env []string, bin string, stdin io.Reader, stdout io.Writer, args ...string) *proc {
	t.Helper()
	p := &proc{stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = stdin, stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("mcpkit %s stderr:\n%s", strings.Join(args, " "), p.stderr.String())
		}
	})
	return p
}

// stop interrupts the process and waits for it.
func (p *proc) stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		t.Errorf("mcpkit did not stop within 10s of SIGINT")
	}
}

// stdioProc is bin/mcpkit serving over stdio. Responses whose id is null or a
// string starting with "raw-" go to raw (lines the test wrote itself);
// everything else goes to the SDK client.
type stdioProc struct {
	*proc
	mu     sync.Mutex // serializes writes to stdin; guards nonRPC
	stdin  io.WriteCloser
	nonRPC []string // stdout lines that are not JSON-RPC messages
	toSDK  *io.PipeReader
	raw    chan map[string]any
}

func startStdio(t testing.TB, args ...string) *stdioProc {
	t.Helper()
	return startStdioEnv(t, nil, args...)
}

// startStdioEnv is startStdio with env ("NAME=value") added to the
// process's environment.
func startStdioEnv(t testing.TB, env []string, args ...string) *stdioProc {
	t.Helper()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	sdkR, sdkW := io.Pipe()
	sp := &stdioProc{stdin: stdinW, toSDK: sdkR, raw: make(chan map[string]any, 16)}
	sp.proc = startBinaryEnv(t, env, binary(t), stdinR, stdoutW, append([]string{"serve", "--stdio"}, args...)...)
	go func() { <-sp.done; stdoutW.Close(); stdinR.Close() }()
	go func() {
		defer sdkW.Close()
		r := bufio.NewReaderSize(stdoutR, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				var m map[string]any
				if json.Unmarshal(line, &m) != nil || m["jsonrpc"] != "2.0" {
					sp.mu.Lock()
					sp.nonRPC = append(sp.nonRPC, string(line))
					sp.mu.Unlock()
					continue
				}
				id, hasID := m["id"]
				s, isStr := id.(string)
				if _, isResp := m["error"]; isResp && hasID && (id == nil || isStr && strings.HasPrefix(s, "raw-")) {
					sp.raw <- m
					continue
				}
				if _, err := sdkW.Write(line); err != nil {
					io.Copy(io.Discard, r)
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		sp.closeStdin()
		sdkR.Close()
		select { // EOF on stdin ends the server; proc's own cleanup handles a hang
		case <-sp.done:
		case <-time.After(10 * time.Second):
		}
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if len(sp.nonRPC) > 0 {
			t.Errorf("stdout carried %d lines that are not JSON-RPC, first: %.200q", len(sp.nonRPC), sp.nonRPC[0])
		}
	})
	return sp
}

func (sp *stdioProc) Write(b []byte) (int, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.stdin.Write(b)
}

func (sp *stdioProc) closeStdin() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.stdin.Close()
}

// connect starts an SDK client session over the process's stdio.
func (sp *stdioProc) connect(t testing.TB, era string) *mcp.ClientSession {
	t.Helper()
	return sp.connectWith(t, era, nil)
}

// connectWith is connect with client options (notification handlers).
func (sp *stdioProc) connectWith(t testing.TB, era string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, opts).Connect(t.Context(),
		&mcp.IOTransport{Reader: sp.toSDK, Writer: nopCloser{sp}}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect over stdio (%s): %v\nstderr:\n%s", era, err, sp.stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	checkEra(t, cs, era)
	return cs
}

// rawResponse waits for the response to a line the test wrote itself.
func (sp *stdioProc) rawResponse(t testing.TB) map[string]any {
	t.Helper()
	select {
	case m := <-sp.raw:
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no response to a raw line within 10s")
		return nil
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// httpProc is bin/mcpkit serving streamable HTTP on a free loopback port.
type httpProc struct {
	*proc
	base string // http://127.0.0.1:PORT, or https://
}

func startHTTP(t testing.TB, args ...string) *httpProc {
	t.Helper()
	return startHTTPBinary(t, binary(t), args...)
}

// startHTTPBinary is startHTTP for another mcpkit build.
func startHTTPBinary(t testing.TB, bin string, args ...string) *httpProc {
	t.Helper()
	return startListening(t, bin, append([]string{"serve", "--http", "127.0.0.1:0", "--log-format", "json"}, args...)...)
}

// startListening runs bin with args (which must serve HTTP and log JSON)
// and returns its base URL once it logs "listening".
func startListening(t testing.TB, bin string, args ...string) *httpProc {
	t.Helper()
	return startListeningEnv(t, nil, bin, args...)
}

// startListeningEnv is startListening with env added to the process's
// environment.
func startListeningEnv(t testing.TB, env []string, bin string, args ...string) *httpProc {
	t.Helper()
	return awaitListening(t, startBinaryEnv(t, env, bin, nil, nil, args...))
}

// awaitListening returns p's base URL once it logs "listening" (p must
// serve HTTP and log JSON).
func awaitListening(t testing.TB, p *proc) *httpProc {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for line := range strings.Lines(p.stderr.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "listening" {
				return &httpProc{proc: p, base: strings.TrimSuffix(m["url"].(string), "/mcp")}
			}
		}
		select {
		case <-p.done:
			t.Fatalf("mcpkit exited before listening: %v\n%s", p.err, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("mcpkit did not log \"listening\" within 15s:\n%s", p.stderr.String())
	return nil
}

// connect starts an SDK client session over streamable HTTP.
func (hp *httpProc) connect(t testing.TB, era string, client *http.Client) *mcp.ClientSession {
	t.Helper()
	return hp.connectWith(t, era, client, nil)
}

// connectWith is connect with client options (notification handlers).
func (hp *httpProc) connectWith(t testing.TB, era string, client *http.Client, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, opts).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: hp.base + "/mcp", HTTPClient: client, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect over HTTP (%s): %v\nstderr:\n%s", era, err, hp.stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	checkEra(t, cs, era)
	return cs
}

func checkEra(t testing.TB, cs *mcp.ClientSession, era string) {
	t.Helper()
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("negotiated protocol %q, want %q", got, era)
	}
}

// client is one way of reaching the binary: a transport in one era.
type client struct {
	name        string
	era         string
	connect     func(t *testing.T, args ...string) (*mcp.ClientSession, *proc)
	connectWith func(t *testing.T, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession
}

// clients lists stdio and HTTP in both eras.
func clients() []client {
	var out []client
	for _, era := range eras {
		stdio := func(t *testing.T, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *proc) {
			sp := startStdio(t, args...)
			return sp.connectWith(t, era, opts), sp.proc
		}
		web := func(t *testing.T, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *proc) {
			hp := startHTTP(t, args...)
			return hp.connectWith(t, era, nil, opts), hp.proc
		}
		for _, tr := range []struct {
			name string
			c    func(*testing.T, *mcp.ClientOptions, ...string) (*mcp.ClientSession, *proc)
		}{{"stdio", stdio}, {"http", web}} {
			name, c := tr.name, tr.c
			out = append(out, client{
				name: name + "/" + era, era: era,
				connect: func(t *testing.T, args ...string) (*mcp.ClientSession, *proc) { return c(t, nil, args...) },
				connectWith: func(t *testing.T, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
					cs, _ := c(t, opts, args...)
					return cs
				},
			})
		}
	}
	return out
}

// callTool calls a tool and returns its result, failing on protocol errors.
func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// decode unmarshals a tool's JSON text result, failing on isError.
func decode[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	if res.IsError {
		t.Fatalf("tool error: %s", resultText(res))
	}
	if err := json.Unmarshal([]byte(resultText(res)), &v); err != nil {
		t.Fatalf("decode %q: %v", resultText(res), err)
	}
	return v
}

// info reads mcpkit://info.
func info(t testing.TB, cs *mcp.ClientSession) mcpcore.Info {
	t.Helper()
	return readResource[mcpcore.Info](t, cs, mcpcore.InfoURI)
}

// readResource reads a JSON resource and decodes it into T.
func readResource[T any](t testing.TB, cs *mcp.ClientSession, uri string) T {
	t.Helper()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping checks that a session still answers. Over stdio the SDK client's ping
// works in both eras. Over HTTP, the 2026-07-28 era removed ping from the
// protocol (the SDK answers -32601 "not supported in the new protocol"), so
// there the cheapest request of that era, tools/list, stands in for it.
func ping(t testing.TB, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

func pingHTTP(t testing.TB, cs *mcp.ClientSession) {
	t.Helper()
	if cs.InitializeResult().ProtocolVersion < modernEra {
		ping(t, cs)
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list (the 2026-07-28 liveness check): %v", err)
	}
}

// npmCI installs the npm project in dir from its package-lock.json, unless
// every one of pkgs is already in its node_modules. It fails the test when
// Node or npm is missing: the suites that need them are part of `make test`.
func npmCI(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: this test needs Node 20+ and npm", tool)
		}
	}
	installed := true
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			installed = false
		}
	}
	if installed {
		return
	}
	cmd := exec.Command("npm", "ci", "--prefix", dir, "--ignore-scripts", "--no-audit", "--no-fund")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci --prefix %s: %v\n%s", dir, err, out)
	}
}
