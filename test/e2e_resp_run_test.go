package test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunScript runs scripts/run.sh, what `make run` serves, on a free port:
// it starts its own redis-server (never 6379), serves diag, resp and the
// store (on a file in MCPKIT_DATA_DIR) over HTTP, a newcomer's first
// execute and store work, and stopping the script stops mcpkit, then
// redis-server, and removes the temporary directory, keeping the store file.
func TestRunScript(t *testing.T) {
	data := t.TempDir()
	t.Setenv("MCPKIT_DATA_DIR", data)
	script, err := filepath.Abs(filepath.Join("..", "scripts", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	hp := startHTTPBinary(t, script)
	m := regexp.MustCompile(`run\.sh: redis-server pid=(\d+) port=(\d+) dir=(\S+)`).FindStringSubmatch(hp.stderr.String())
	if m == nil {
		t.Fatalf("run.sh named no redis-server:\n%s", hp.stderr.String())
	}
	pid, _ := strconv.Atoi(m[1])
	if port, _ := strconv.Atoi(m[2]); port == 6379 {
		t.Fatalf("run.sh started redis-server on the shared port 6379")
	}
	dir := m[3]
	if _, err := os.Stat(filepath.Join(dir, "redis.conf")); err != nil {
		t.Fatalf("redis-server's directory: %v", err)
	}

	cs := hp.connect(t, legacyEra, nil)
	if got := decode[struct{ Message string }](t, callTool(t, cs, "diag_echo", map[string]any{"message": "hi"})); got.Message != "hi" {
		t.Fatalf("diag_echo = %+v", got)
	}
	reply := decode[execReply](t, callTool(t, cs, "resp_execute", map[string]any{
		"commands": [][]any{{"SET", "run:greeting", "hello"}, {"GET", "run:greeting"}},
	}))
	if reply.Outcome != "ok" || len(reply.Replies) != 2 || reply.Replies[1].Str(t) != "hello" {
		t.Fatalf("resp_execute = %+v", reply)
	}
	callTool(t, cs, "store_store", map[string]any{"collection": "notes", "id": "first", "doc": map[string]any{"text": "hello"}})
	if got := decode[struct{ Doc struct{ Text string } }](t, callTool(t, cs, "store_get", map[string]any{"collection": "notes", "id": "first"})); got.Doc.Text != "hello" {
		t.Fatalf("store_get = %+v", got)
	}
	// The example app: its tool, and its HTTP API beside /mcp.
	callTool(t, cs, "actions_message-post", map[string]any{"channel": "run", "text": "hi", "author": "me"})
	cs.Close()
	resp, err := http.Get(hp.base + "/api/messages?channel=run")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"text":"hi"`) {
		t.Fatalf("GET /api/messages: %d %s", resp.StatusCode, body)
	}

	hp.stop(t)
	if hp.err != nil {
		t.Fatalf("run.sh exited with %v:\n%s", hp.err, hp.stderr.String())
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("redis-server pid %d is still there after run.sh exited (kill -0: %v)", pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("run.sh left %s behind (%v)", dir, err)
	}
	if !strings.Contains(hp.stderr.String(), "run.sh: redis-server pid="+m[1]+" stopped") {
		t.Fatalf("run.sh did not report stopping redis-server:\n%s", hp.stderr.String())
	}
	if !strings.Contains(hp.stderr.String(), "run.sh: store file="+filepath.Join(data, "store.db")) {
		t.Fatalf("run.sh did not name the store's file:\n%s", hp.stderr.String())
	}
	if fi, err := os.Stat(filepath.Join(data, "store.db")); err != nil || fi.Size() == 0 {
		t.Fatalf("the store's file after run.sh: %v", err)
	}
}

// TestRunScriptFailingServe checks that run.sh passes mcpkit's exit status on
// and still stops its redis-server when mcpkit cannot start.
func TestRunScriptFailingServe(t *testing.T) {
	t.Setenv("MCPKIT_DATA_DIR", t.TempDir()) // never the checkout's data/
	script, err := filepath.Abs(filepath.Join("..", "scripts", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "serve", "--http", "127.0.0.1:0", "--no-such-flag")
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("run.sh did not exit:\n%s", out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("run.sh with a bad flag: %v, want exit status 2 (bad command line)\n%s", err, out)
	}
	m := regexp.MustCompile(`run\.sh: redis-server pid=(\d+) `).FindSubmatch(out)
	if m == nil || !strings.Contains(string(out), "run.sh: redis-server pid="+string(m[1])+" stopped") {
		t.Fatalf("run.sh did not start and stop redis-server:\n%s", out)
	}
}
