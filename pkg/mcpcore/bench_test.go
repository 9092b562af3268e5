package mcpcore

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Message string `json:"message"`
}

// BenchmarkToolCall compares a tools/call round trip through the host
// (argument validation and strict decoding, the concurrency slot, the
// timeout, panic recovery, serialization) with the same tool added by the
// SDK's own mcp.AddTool, both over in-memory transports, alternating rounds
// so that machine noise hits both alike. It reports the ratio (host over
// SDK): the host's share of the stdio benchmark's ratio.
func BenchmarkToolCall(b *testing.B) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (any, error) {
			return in, nil
		})
	})
	srv, err := NewServer(b.Context(), Options{Plugins: []string{"ta"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close(context.Background()) })
	sdk := mcp.NewServer(&mcp.Implementation{Name: "sdk"}, nil)
	mcp.AddTool(sdk, &mcp.Tool{Name: "ta_echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, echoArgs, error) {
		return nil, in, nil
	})
	a, ssA := connectMemory(b, srv.MCP())
	c, ssC := connectMemory(b, sdk)
	b.Cleanup(func() { a.Close(); ssA.Wait(); c.Close(); ssC.Wait() })
	sessions := []*mcp.ClientSession{a, c}
	params := &mcp.CallToolParams{Name: "ta_echo", Arguments: map[string]any{"message": "ping"}}
	call := func(cs *mcp.ClientSession) {
		if res, err := cs.CallTool(b.Context(), params); err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
	}
	for _, cs := range sessions {
		for range 200 {
			call(cs)
		}
	}
	var took [2]time.Duration
	const round = 50
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		for i, cs := range sessions {
			start := time.Now()
			for range min(round, b.N-done) {
				call(cs)
			}
			took[i] += time.Since(start)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N), "host-ns/call")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N), "sdk-ns/call")
	b.ReportMetric(float64(took[0])/float64(took[1]), "ratio")
}
