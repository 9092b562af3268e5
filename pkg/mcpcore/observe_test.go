package mcpcore

import (
	"context"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/stdio"
)

// TestObserveDirectAndSDKCalls: over stdio, a direct tool's call (the
// fast path, which the SDK never sees) and an SDK-served tool's call each
// get a SERVER span under the client's _meta.traceparent, the span in the
// handler's context, and a mcp.server.operation.duration point with the
// conventions' attributes.
func TestObserveDirectAndSDKCalls(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var handlerSpans [2]trace.SpanContext
	attach := func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in directArgs) (any, error) {
			handlerSpans[0] = trace.SpanContextFromContext(ctx)
			return Text(in.Text), nil
		}, ToolOptions{direct: true})
		AddTool(h, &mcp.Tool{Name: "plain"}, func(ctx context.Context, _ *mcp.CallToolRequest, in directArgs) (any, error) {
			handlerSpans[1] = trace.SpanContextFromContext(ctx)
			return Text(in.Text), nil
		})
	}
	srv, err := NewServer(t.Context(), Options{Instances: []Instance{instance("dx", attach)}, TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	var viaSDK atomic.Int64
	srv.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				viaSDK.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), stdio.NewTransport(inR, outW, stdio.Options{})) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(),
		&mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: legacyEra})
	if err != nil {
		t.Fatal(err)
	}
	const trace0, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, tool := range []string{"dx_echo", "dx_plain"} {
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: directArgs{Text: "hi"},
			Meta: mcp.Meta{"traceparent": "00-" + trace0 + "-" + parent + "-01"}}); err != nil {
			t.Fatal(err)
		}
	}
	cs.Close()
	<-done
	if viaSDK.Load() != 1 {
		t.Fatalf("the SDK saw %d tools/call, want 1 (dx_echo is direct)", viaSDK.Load())
	}
	got := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans.GetSpans().Snapshots() {
		got[s.Name()] = s
	}
	if s := got["initialize"]; s == nil || !slices.Contains(s.Attributes(), attribute.String("mcp.protocol.version", legacyEra)) {
		t.Errorf("the initialize span has no protocol version: %v", s)
	}
	ids := map[string]bool{} // jsonrpc.request.id, on the direct path (from the context) and the SDK's (from RequestExtra)
	for _, name := range []string{"initialize", "tools/call dx_echo", "tools/call dx_plain"} {
		if s := got[name]; s != nil {
			set := attribute.NewSet(s.Attributes()...)
			v, _ := set.Value("jsonrpc.request.id")
			if _, err := strconv.Atoi(v.AsString()); err != nil || ids[v.AsString()] {
				t.Errorf("%s: jsonrpc.request.id %q, want its own request's id", name, v.AsString())
			}
			ids[v.AsString()] = true
		}
	}
	for i, tool := range []string{"dx_echo", "dx_plain"} {
		s := got["tools/call "+tool]
		if s == nil {
			t.Fatalf("no span for %s among %v", tool, got)
		}
		if s.SpanKind() != trace.SpanKindServer || s.Parent().TraceID().String() != trace0 || s.Parent().SpanID().String() != parent || !s.Parent().IsRemote() {
			t.Errorf("%s: kind %v, parent %v", tool, s.SpanKind(), s.Parent())
		}
		if handlerSpans[i].SpanID() != s.SpanContext().SpanID() {
			t.Errorf("%s: the handler's context carries span %v, not the server span %v", tool, handlerSpans[i].SpanID(), s.SpanContext().SpanID())
		}
		want := attribute.NewSet(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", tool),
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("network.transport", "pipe"),
			attribute.String("mcp.protocol.version", legacyEra))
		have := attribute.NewSet(s.Attributes()...)
		for _, kv := range want.ToSlice() {
			if v, ok := have.Value(kv.Key); !ok || v != kv.Value {
				t.Errorf("%s: %s = %v, want %v", tool, kv.Key, v.Emit(), kv.Value.Emit())
			}
		}
	}
	counts := map[string]uint64{}
	if h, ok := collect(t, reader, "mcp.server.operation.duration").(metricdata.Histogram[float64]); ok {
		for _, dp := range h.DataPoints {
			tool, _ := dp.Attributes.Value("gen_ai.tool.name")
			transport, _ := dp.Attributes.Value("network.transport")
			counts[tool.AsString()+"/"+transport.AsString()] += dp.Count
		}
	}
	if counts["dx_echo/pipe"] != 1 || counts["dx_plain/pipe"] != 1 {
		t.Errorf("operation durations recorded: %v, want one per tool over pipe", counts)
	}
}

// TestCountRefused: each refusal a transport reports is one point of
// mcpkit.server.rejected_calls with its reason and limit, every known
// series present from the start; a pair the host does not know is
// counted with reason _OTHER rather than lost.
func TestCountRefused(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	srv, err := NewServer(t.Context(), Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	srv.CountRefused("limit", "frame_bytes")
	srv.CountRefused("limit", "frame_bytes")
	srv.CountRefused("auth", "")
	srv.CountRefused("limit", "no_such_limit")
	got := map[string]int64{}
	if sum, ok := collect(t, reader, "mcpkit.server.rejected_calls").(metricdata.Sum[int64]); ok {
		for _, dp := range sum.DataPoints {
			reason, _ := dp.Attributes.Value("reason")
			limit, _ := dp.Attributes.Value("limit")
			got[reason.AsString()+" "+limit.AsString()] = dp.Value
		}
	}
	want := map[string]int64{"limit concurrent_tool_calls": 0, "timeout tool_timeout": 0, "limit frame_bytes": 2,
		"limit inflight_request_bytes": 0, "limit http_sessions": 0, "timeout body_timeout": 0, "auth ": 1, "_OTHER ": 1}
	if !maps.Equal(got, want) {
		t.Errorf("rejected_calls = %v, want %v", got, want)
	}
}

// collect reads reader and returns the data of the metric named name, or
// nil.
func collect(t *testing.T, reader *sdkmetric.ManualReader, name string) metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	return nil
}
