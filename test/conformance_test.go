package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// confServeArgs are the arguments of the server under test after
// `serve --http 127.0.0.1:0 --log-format json`: the diag plugin gives the
// suite tools to call (http-header-validation checks Mcp-Name with one).
var confServeArgs = []string{"--plugins", "diag"}

// TestConformance runs the official MCP conformance suite (pinned in
// test/conformance, driven by scripts/conformance.sh) against
// `bin/mcpkit serve --http`, one subtest per scenario of both protocol eras.
// It needs Node 20+ and npm; the suite is installed with `npm ci` on first
// use. MCPKIT_CONFORMANCE_BIN replaces bin/mcpkit (any binary that takes the
// same `serve` flags and logs "listening" the same way).
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance suite skipped in -short mode")
	}
	root := confRepoRoot(t)
	script := filepath.Join(root, "scripts", "conformance.sh")
	bin := os.Getenv("MCPKIT_CONFORMANCE_BIN")
	if bin == "" {
		bin = filepath.Join(root, "bin", "mcpkit")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make build` first (%v)", bin, err)
	}
	for _, tool := range []string{"node", "npm", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the conformance suite needs Node 20+ and npm (`make deps`)", tool)
		}
	}
	confInstallSuite(t, root)

	out, err := exec.Command(script, "--list").Output()
	if err != nil {
		t.Fatalf("%s --list: %v", script, err)
	}
	scenarios := strings.Fields(string(out))
	if len(scenarios) == 0 {
		t.Fatalf("%s --list printed no scenarios", script)
	}

	srv := confStartServer(t, bin)
	url := "http://" + srv.addr + "/mcp"
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, script, url, sc)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance scenario %s failed (%v):\n%s\nserver stderr:\n%s", sc, err, out, srv.stderr.String())
			}
			// The first line is the PASS summary (passed, warnings, untestable).
			summary, _, _ := strings.Cut(string(out), "\n")
			t.Log(summary)
		})
	}
}

// confRepoRoot returns the repository root (the parent of test/).
func confRepoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// confInstallSuite installs the pinned suite once, so its time is not charged
// to the first scenario.
func confInstallSuite(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, "test", "conformance")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")); err == nil {
		return
	}
	cmd := exec.Command("npm", "ci", "--prefix", dir, "--ignore-scripts", "--no-audit", "--no-fund")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci --prefix %s: %v\n%s", dir, err, out)
	}
}

// confBuffer is a concurrency-safe log buffer.
type confBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *confBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *confBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type confServer struct {
	addr   string
	stderr *confBuffer
}

// confStartServer starts `bin serve --http 127.0.0.1:0 --log-format json`
// with confServeArgs,
// waits for its "listening" log line and stops it (SIGINT, then kill) at
// cleanup.
func confStartServer(t *testing.T, bin string) *confServer {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--http", "127.0.0.1:0", "--log-format", "json"}, confServeArgs...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	srv := &confServer{stderr: &confBuffer{}}
	addrc := make(chan string, 1)
	scanned := make(chan struct{})
	go func() { // ends at EOF, when the process exits
		defer close(scanned)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			srv.stderr.Write([]byte(string(line) + "\n"))
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" && rec.Addr != "" {
				select {
				case addrc <- rec.Addr:
				default:
				}
			}
		}
		// Keep draining if the scanner stopped early (an over-long line).
		_, _ = bufio.NewReader(pipe).WriteTo(srv.stderr)
	}()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-scanned:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not exit within 10s of SIGINT; killing it", bin)
			_ = cmd.Process.Kill()
			<-scanned
		}
		_ = cmd.Wait()
	}
	select {
	case srv.addr = <-addrc:
	case <-scanned:
		_ = cmd.Wait()
		t.Fatalf("%s exited before logging \"listening\":\n%s", bin, srv.stderr.String())
	case <-time.After(15 * time.Second):
		stop()
		t.Fatalf("%s did not log \"listening\" within 15s:\n%s", bin, srv.stderr.String())
	}
	t.Cleanup(stop)
	return srv
}
