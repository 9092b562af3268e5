package test

import (
	"context"
	"os"
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

// TestConformanceFixtures runs server-stateless again in strict mode (no
// check may be untestable) against an mcpkit build that adds the suite's
// fixture tools as a plugin (internal/fixtures, built the way a plugin author
// builds a binary), so that the checks needing those tools run too:
// capability errors (-32021), logging gated on the request's log level, and
// response streams carrying no independent requests.
func TestConformanceFixtures(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	npmCI(t, filepath.Join(root, "test", "conformance"), "@modelcontextprotocol/conformance")
	bin := filepath.Join(t.TempDir(), "mcpkit-fixtures")
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/fixturebin").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture binary: %v\n%s", err, out)
	}
	hp := startHTTPBinary(t, bin, "--plugins", "diag,fixtures", "--config", writeConfig(t, `{"plugins": {"fixtures": {"prefix": ""}}}`))
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "scripts", "conformance.sh"), hp.base+"/mcp", "2026-07-28:server-stateless")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CONFORMANCE_STRICT=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("server-stateless with fixtures failed (%v):\n%s", err, out)
	}
	summary, _, _ := strings.Cut(string(out), "\n")
	t.Log(summary)
}
