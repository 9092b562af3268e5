package test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConformance runs the official MCP conformance suite (pinned in
// test/conformance, driven by scripts/conformance.sh) against
// `bin/mcpkit serve --http`, one subtest per scenario of both protocol eras.
// It needs Node 20+ and npm; the suite is installed with `npm ci` on first
// use. The diag plugin gives the suite tools to call (http-header-validation
// checks Mcp-Name with one).
func TestConformance(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "scripts", "conformance.sh")
	npmCI(t, filepath.Join(root, "test", "conformance"), "@modelcontextprotocol/conformance")

	out, err := exec.Command(script, "--list").Output()
	if err != nil {
		t.Fatalf("%s --list: %v", script, err)
	}
	scenarios := strings.Fields(string(out))
	if len(scenarios) == 0 {
		t.Fatalf("%s --list printed no scenarios", script)
	}

	hp := startHTTP(t, "--plugins", "diag")
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			t.Parallel() // scenarios are independent clients of one server
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, script, hp.base+"/mcp", sc)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance scenario %s failed (%v):\n%s", sc, err, out)
			}
			// The first line is the PASS summary (passed, warnings, untestable).
			summary, _, _ := strings.Cut(string(out), "\n")
			t.Log(summary)
		})
	}
}
