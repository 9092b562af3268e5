package test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
	ours, suiteOut := runSuite(t, root, hp.base+"/mcp")
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			r, ran := ours[sc]
			switch {
			case !ran:
				t.Fatalf("the suite reported nothing for %s:\n%s", sc, suiteOut)
			case !r.passed:
				t.Fatalf("%s\n%s\n%s", r.summary, strings.Join(r.notes, "\n"), suiteOut)
			}
			t.Log(r.summary)
			var notes []string
			for _, n := range r.notes {
				t.Log(n)
				notes = append(notes, strings.TrimSuffix(strings.Fields(n)[1], ":")) // "  WARNING check-id: ..."
			}
			if want := knownNotes[sc]; strings.Join(notes, " ") != strings.Join(want, " ") {
				t.Errorf("checks noted (warnings, skips) = %v, want exactly %v: a new one needs fixing or listing in knownNotes with its reason", notes, want)
			}
		})
	}

	if os.Getenv("MCPKIT_CONFORMANCE_PEER") != "1" {
		return
	}
	peer := filepath.Join(t.TempDir(), "everything-server")
	if out, err := exec.Command("go", "build", "-o", peer, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput(); err != nil {
		t.Fatalf("build the go-sdk's example server: %v\n%s", err, out)
	}
	// The SDK serves the legacy era from its stateful handler and 2026-07-28
	// from its stateless one (its stateful handler refuses 2026-07-28), so
	// its example server runs twice, one era each; mcpkit serves both eras
	// on one endpoint.
	theirs := map[string]scenarioRun{}
	for era, stateless := range map[string]bool{"2025-11-25": false, "2026-07-28": true} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // the peer takes no listener; the port is free again at once
		startBinary(t, peer, nil, nil, "-http", addr, fmt.Sprintf("-stateless=%v", stateless))
		eventually(t, 15*time.Second, "the go-sdk example server listening", func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		runs, _ := runSuite(t, root, "http://"+addr+"/mcp", era)
		maps.Copy(theirs, runs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| era | scenarios | mcpkit passed | mcpkit checks passed | go-sdk example passed | go-sdk checks passed |\n|---|---|---|---|---|---|\n")
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		op, oc := tally(ours, scenarios, era)
		tp, tc := tally(theirs, scenarios, era)
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", era, countEra(scenarios, era), op, oc, tp, tc)
	}
	for _, sc := range scenarios {
		if r := theirs[sc]; !r.passed || len(r.notes) > 0 || len(ours[sc].notes) > 0 {
			fmt.Fprintf(&b, "%s\n  mcpkit: %s %v\n  go-sdk: %s %v\n", sc, ours[sc].summary, ours[sc].notes, r.summary, r.notes)
		}
	}
	t.Log(b.String())
}

// knownNotes are the checks a scenario passes with a note (a SHOULD the
// server misses), by scenario, with the reason; any other note fails the
// test.
var knownNotes = map[string][]string{
	// The SDK writes the SSE priming event and the close event's retry
	// field (SEP-1699) only for a request whose protocol version its own
	// StreamableHTTPHandler put in the request context, under an unexported
	// key; mcpkit serves legacy sessions through the SDK's exported
	// StreamableServerTransport from its own two-era router, which cannot
	// set that key, so the transport takes the request for 2025-03-26. The
	// go-sdk's example server misses the priming event too (it has no event
	// store) but sends the retry field.
	"2025-11-25:server-sse-polling": {"server-sse-priming-event", "server-sse-retry-field"},
}

// scenarioRun is one scenario's outcome: its summary line (PASS or FAIL,
// then the check counts) and notes.
type scenarioRun struct {
	passed  bool
	summary string
	notes   []string
}

var (
	summaryLine  = regexp.MustCompile(`^(PASS|FAIL) ([a-z0-9-]+) \((\d{4}-\d{2}-\d{2})\): `)
	checksPassed = regexp.MustCompile(`: (\d+) passed,`)
)

// runSuite runs every server scenario of the eras given (both by default;
// one suite process per era) against url in strict mode, and returns each
// scenario's outcome by "era:scenario" and the whole output.
func runSuite(t *testing.T, root, url string, eras ...string) (map[string]scenarioRun, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "conformance.sh"), append([]string{url}, eras...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CONFORMANCE_STRICT=1")
	b, _ := cmd.CombinedOutput() // its status is the scenarios', read line by line
	runs := map[string]scenarioRun{}
	var last string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if m := summaryLine.FindStringSubmatch(line); m != nil {
			last = m[3] + ":" + m[2]
			runs[last] = scenarioRun{passed: m[1] == "PASS", summary: line}
		} else if strings.HasPrefix(line, "  ") && last != "" {
			r := runs[last]
			r.notes = append(r.notes, line)
			runs[last] = r
		} else {
			last = ""
		}
	}
	return runs, string(b)
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
		if r.passed {
			passed++
		}
		if m := checksPassed.FindStringSubmatch(r.summary); m != nil {
			n, _ := strconv.Atoi(m[1])
			checks += n
		}
	}
	return passed, checks
}
