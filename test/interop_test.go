package test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptClients checks bin/mcpkit against the official TypeScript MCP
// clients, an implementation independent of the Go SDK the other tests use:
// @modelcontextprotocol/sdk 1.x in the 2025-11-25 era and
// @modelcontextprotocol/client 2.x pinned to 2026-07-28, each over stdio and
// streamable HTTP. test/interop/run.mjs does the talking (negotiated version,
// tools/list, diag_echo, diag_blob's output schema with an inline 1000-byte
// and a paged 300000-byte blob with their sha256, error kinds, release,
// mcpkit://info); this test runs it once per combination. It needs
// Node 20+ and npm; the pinned packages are installed with `npm ci` on first
// use.
func TestTypeScriptClients(t *testing.T) {
	dir, err := filepath.Abs("interop")
	if err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	npmCI(t, dir, "@modelcontextprotocol/sdk", "@modelcontextprotocol/client")

	for _, transport := range []string{"stdio", "http"} {
		for _, era := range eras {
			t.Run(transport+"/"+era, func(t *testing.T) {
				args := []string{"--transport", transport, "--era", era}
				var srv *proc
				if transport == "stdio" {
					// run.mjs spawns the server itself through the client's
					// StdioClientTransport and shows its stderr on failure.
					args = append(args, "--bin", bin)
				} else {
					hp := startHTTP(t, "--plugins", "diag")
					srv = hp.proc
					args = append(args, "--url", hp.base+"/mcp")
				}
				out := interopRun(t, dir, args...)
				t.Log(out)
				if srv != nil {
					select {
					case <-srv.done:
						t.Fatalf("mcpkit exited during the run: %v", srv.err)
					default:
					}
				}
			})
		}
	}
}

// interopRun runs run.mjs and returns its summary line, failing the test with
// its output when it does not pass.
func interopRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"run.mjs"}, args...)...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil {
		t.Fatalf("node run.mjs %s: %v\n%s", strings.Join(args, " "), err, text)
	}
	if !strings.HasPrefix(text, "PASS ") || strings.Contains(text, "\n") {
		t.Fatalf("node run.mjs %s exited 0 but did not print one PASS line:\n%s", strings.Join(args, " "), text)
	}
	return text
}
