package test

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/benchpair"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStdioRoundTrip compares a no-op tools/call round trip through
// bin/mcpkit over stdio with the same tool served by the SDK's own
// StdioTransport (internal/sdkpeer), in one run. The target is ratio <= 1.10:
// mcpkit's framing may cost at most 10% over the SDK's.
func BenchmarkStdioRoundTrip(b *testing.B) {
	peer := buildInternal(b, "sdkpeer") // the SDK-only server measured against
	mcpkit := connectCommand(b, exec.Command(binary(b), "serve", "--stdio", "--plugins", "diag", "--log-level", "warn"), "")
	sdk := connectCommand(b, exec.Command(peer), "")
	if ratio := compareRoundTrips(b, mcpkit, sdk); b.N >= 1000 && ratio > 1.10 {
		b.Errorf("mcpkit's stdio round trip costs %.1f%% more than the SDK's (target <= 10%%)", (ratio-1)*100)
	}
}

// BenchmarkHTTPRoundTrip compares a no-op tools/call round trip through
// `bin/mcpkit serve --http` (era router, origin and host checks, session
// tracking) with the SDK's own StreamableHTTPHandler serving the same tool,
// in each protocol era. It reports the ratio; no target is set for HTTP.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	peer := buildInternal(b, "sdkpeer") // the SDK-only server measured against
	for _, era := range eras {
		b.Run(era, func(b *testing.B) {
			hp := startHTTP(b, "--plugins", "diag")
			mcpkit := hp.connect(b, era, nil)
			args := []string{"--http", "127.0.0.1:0"}
			if era >= modernEra {
				args = append(args, "--stateless")
			}
			sdk := connectHTTPPeer(b, peer, era, args...)
			compareRoundTrips(b, mcpkit, sdk)
		})
	}
}

// compareRoundTrips calls diag_echo b.N times on each session (see
// benchpair.Compare) and returns the ratio, mcpkit over the SDK.
func compareRoundTrips(b *testing.B, mcpkit, sdk *mcp.ClientSession) float64 {
	return compareRoundTripsNamed(b, [2]string{"mcpkit", "sdk"}, mcpkit, sdk)
}

// compareRoundTripsNamed is compareRoundTrips of two sessions named names.
func compareRoundTripsNamed(b *testing.B, names [2]string, first, second *mcp.ClientSession) float64 {
	return benchpair.Compare(b, names, echoCalls(b, first, second))
}

// echoCalls returns a no-op tools/call (diag_echo) through each session.
func echoCalls(b *testing.B, first, second *mcp.ClientSession) [2]func() {
	params := &mcp.CallToolParams{Name: "diag_echo", Arguments: map[string]any{"message": "ping"}}
	call := func(cs *mcp.ClientSession) func() {
		return func() {
			res, err := cs.CallTool(b.Context(), params)
			if err != nil || res.IsError {
				b.Fatalf("call: %v %v", err, res)
			}
		}
	}
	return [2]func(){call(first), call(second)}
}

// buildInternal builds the command test/internal/<name> (a peer a
// benchmark measures against) and returns its path.
func buildInternal(b testing.TB, name string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/"+name).CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}

// connectCommand connects a client over a subprocess's stdio.
func connectCommand(b *testing.B, cmd *exec.Cmd, era string) *mcp.ClientSession {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// connectHTTPPeer starts sdkpeer over HTTP and connects a client to it.
func connectHTTPPeer(b *testing.B, peer, era string, args ...string) *mcp.ClientSession {
	b.Helper()
	cmd := exec.Command(peer, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		b.Fatalf("sdkpeer: %q %v", line, err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(b.Context(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}
