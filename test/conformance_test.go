package test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// conformanceParallel is how many scenarios run at once: most of a
// scenario's time is the suite waiting on timers, not CPU.
const conformanceParallel = 8

// TestConformance runs every server scenario of the official MCP
// conformance suite (pinned in test/conformance, driven by
// scripts/conformance.sh) for both protocol eras against `bin/mcpkit serve
// --http --plugins conformance`, in strict mode: a check the suite cannot
// test fails the run. One subtest per scenario.
//
// With MCPKIT_CONFORMANCE_PEER=1 (make conformance) it also runs the same
// scenarios against the go-sdk's own example server (its
// conformance/everything-server, built from the module cache) and logs
// both servers' pass counts per era side by side.
func TestConformance(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	npmCI(t, filepath.Join(root, "test", "conformance"), "@modelcontextprotocol/conformance")
	out, err := exec.Command(filepath.Join(root, "scripts", "conformance.sh"), "--list").Output()
	if err != nil {
		t.Fatalf("conformance.sh --list: %v", err)
	}
	scenarios := strings.Fields(string(out))
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		if n := countEra(scenarios, era); n < 30 {
			t.Fatalf("conformance.sh --list gives %d scenarios of %s, want every server scenario of the suite (33 and 40 in 0.2.0-alpha.12):\n%s", n, era, out)
		}
	}

	hp := startHTTP(t, "--plugins", "conformance")
	ours := runScenarios(t, root, hp.base+"/mcp", scenarios)
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			r := ours[sc]
			if r.err != nil {
				t.Fatalf("conformance scenario %s failed (%v):\n%s", sc, r.err, r.out)
			}
			t.Log(r.summary())
		})
	}

	if os.Getenv("MCPKIT_CONFORMANCE_PEER") != "1" {
		return
	}
	peer := filepath.Join(t.TempDir(), "everything-server")
	if out, err := exec.Command("go", "build", "-o", peer, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput(); err != nil {
		t.Fatalf("build the go-sdk's example server: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the peer takes no listener; the port is free again at once
	startBinary(t, peer, nil, nil, "-http", addr, "-stateless=false")
	eventually(t, 15*time.Second, "the go-sdk example server listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	theirs := runScenarios(t, root, "http://"+addr+"/mcp", scenarios)
	var b strings.Builder
	fmt.Fprintf(&b, "\n| era | scenarios | mcpkit passed | mcpkit checks passed | go-sdk example passed | go-sdk checks passed |\n|---|---|---|---|---|---|\n")
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		op, oc := tally(ours, scenarios, era)
		tp, tc := tally(theirs, scenarios, era)
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", era, countEra(scenarios, era), op, oc, tp, tc)
	}
	for _, sc := range scenarios {
		if theirs[sc].err != nil {
			fmt.Fprintf(&b, "go-sdk example server fails %s:\n%s\n", sc, theirs[sc].out)
		}
	}
	t.Log(b.String())
}

// scenarioRun is one scenario's outcome.
type scenarioRun struct {
	out string
	err error
}

// summary is the suite's first line: PASS or FAIL, then the check counts.
func (r scenarioRun) summary() string {
	line, _, _ := strings.Cut(r.out, "\n")
	return line
}

var checksPassed = regexp.MustCompile(`: (\d+) passed,`)

// runScenarios runs each scenario against url, conformanceParallel at once,
// in strict mode.
func runScenarios(t *testing.T, root, url string, scenarios []string) map[string]scenarioRun {
	out := make(map[string]scenarioRun, len(scenarios))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, conformanceParallel)
	for _, sc := range scenarios {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "conformance.sh"), url, sc)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CONFORMANCE_STRICT=1")
			b, err := cmd.CombinedOutput()
			mu.Lock()
			out[sc] = scenarioRun{out: string(b), err: err}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func countEra(scenarios []string, era string) int {
	n := 0
	for _, sc := range scenarios {
		if strings.HasPrefix(sc, era+":") {
			n++
		}
	}
	return n
}

// tally returns how many of era's scenarios passed, and how many checks.
func tally(runs map[string]scenarioRun, scenarios []string, era string) (passed, checks int) {
	for _, sc := range scenarios {
		if !strings.HasPrefix(sc, era+":") {
			continue
		}
		r := runs[sc]
		if r.err == nil {
			passed++
		}
		if m := checksPassed.FindStringSubmatch(r.summary()); m != nil {
			n, _ := strconv.Atoi(m[1])
			checks += n
		}
	}
	return passed, checks
}
