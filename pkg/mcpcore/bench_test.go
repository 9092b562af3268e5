package mcpcore

import (
	"context"
	"testing"

	"github.com/mcpkit/mcpkit/internal/benchpair"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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
	params := &mcp.CallToolParams{Name: "ta_echo", Arguments: map[string]any{"message": "ping"}}
	call := func(cs *mcp.ClientSession) func() {
		return func() {
			if res, err := cs.CallTool(b.Context(), params); err != nil || res.IsError {
				b.Fatalf("call: %v %v", err, res)
			}
		}
	}
	benchpair.Compare(b, [2]string{"host", "sdk"}, [2]func(){call(a), call(c)})
}

// BenchmarkObservedToolCall compares a tools/call round trip through the
// host with telemetry on (every span sampled, exported to a discarding
// batcher; the operation histogram recorded) and off, over in-memory
// transports: the in-process share of test/'s BenchmarkTelemetryOverhead.
func BenchmarkObservedToolCall(b *testing.B) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (any, error) {
			return in, nil
		})
	})
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	servers := [2]*Server{}
	for i, o := range []Options{{Plugins: []string{"ta"}, TracerProvider: tp, MeterProvider: mp}, {Plugins: []string{"ta"}}} {
		srv, err := NewServer(b.Context(), o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Close(context.Background()) })
		servers[i] = srv
	}
	on, ssOn := connectMemory(b, servers[0].MCP())
	off, ssOff := connectMemory(b, servers[1].MCP())
	b.Cleanup(func() { on.Close(); ssOn.Wait(); off.Close(); ssOff.Wait() })
	params := &mcp.CallToolParams{Name: "ta_echo", Arguments: map[string]any{"message": "ping"}}
	call := func(cs *mcp.ClientSession) func() {
		return func() {
			if res, err := cs.CallTool(b.Context(), params); err != nil || res.IsError {
				b.Fatalf("call: %v %v", err, res)
			}
		}
	}
	benchpair.Compare(b, [2]string{"telemetry", "off"}, [2]func(){call(on), call(off)})
}
