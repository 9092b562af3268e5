package test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStdioRoundTrip compares a no-op tools/call round trip through
// bin/mcpkit over stdio with the same tool served by the SDK's own
// StdioTransport (internal/sdkpeer), in one run. The two servers are driven
// alternately in rounds so that machine noise hits both alike; the reported
// ratio is mcpkit's time over the SDK's. The target is ratio <= 1.10.
func BenchmarkStdioRoundTrip(b *testing.B) {
	peer := filepath.Join(b.TempDir(), "sdkpeer")
	if out, err := exec.Command("go", "build", "-o", peer, "./internal/sdkpeer").CombinedOutput(); err != nil {
		b.Fatalf("build sdkpeer: %v\n%s", err, out)
	}
	connect := func(cmd *exec.Cmd) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	servers := []struct {
		name string
		cs   *mcp.ClientSession
		took time.Duration
	}{
		{name: "mcpkit", cs: connect(exec.Command(binary(b), "serve", "--stdio", "--plugins", "diag", "--log-level", "warn"))},
		{name: "sdk", cs: connect(exec.Command(peer))},
	}
	params := &mcp.CallToolParams{Name: "diag_echo", Arguments: map[string]any{"message": "ping"}}
	call := func(cs *mcp.ClientSession) {
		res, err := cs.CallTool(b.Context(), params)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
	}
	for i := range servers { // warm up both
		for range 200 {
			call(servers[i].cs)
		}
	}
	const round = 50
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		for i := range servers {
			start := time.Now()
			for range min(round, b.N-done) {
				call(servers[i].cs)
			}
			servers[i].took += time.Since(start)
		}
	}
	b.StopTimer()
	mcpkit, sdk := servers[0].took, servers[1].took
	ratio := float64(mcpkit) / float64(sdk)
	b.ReportMetric(float64(mcpkit.Nanoseconds())/float64(b.N), "mcpkit-ns/call")
	b.ReportMetric(float64(sdk.Nanoseconds())/float64(b.N), "sdk-ns/call")
	b.ReportMetric(ratio, "ratio")
	if b.N < 100 {
		return // a calibration run: too short to compare
	}
	b.Logf("stdio round trip over %d calls: mcpkit %v/call, SDK %v/call, ratio %.3f (target <= 1.10)",
		b.N, mcpkit/time.Duration(b.N), sdk/time.Duration(b.N), ratio)
	if b.N >= 1000 && ratio > 1.10 { // enough calls for the ratio to be more than noise
		b.Errorf("mcpkit's stdio round trip costs %.1f%% more than the SDK's (target <= 10%%)", (ratio-1)*100)
	}
}
