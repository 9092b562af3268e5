package mcpcore

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
)

// BenchmarkObserve is what the host's telemetry adds to one tools/call,
// alone: the observe middleware around a handler that does nothing, with
// every span sampled and batched to a discarding exporter and the
// operation histogram recorded (CPU time and allocations per call).
func BenchmarkObserve(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	attach := func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, echoArgs) (any, error) { return nil, nil })
	}
	srv, err := NewServer(b.Context(), Options{Instances: []Instance{instance("ta", attach)}, TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close(context.Background()) })
	res := &mcp.CallToolResult{}
	h := srv.observe(func(context.Context, string, mcp.Request) (mcp.Result, error) { return res, nil })
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "ta_echo",
		Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		Extra: &mcp.RequestExtra{Header: http.Header{wire.HeaderRequestID: {"7"}}}} // the request's id, as the transport gives it
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h(b.Context(), "tools/call", req); err != nil {
			b.Fatal(err)
		}
	}
}
