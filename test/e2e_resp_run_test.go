package test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

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
