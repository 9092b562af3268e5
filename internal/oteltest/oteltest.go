// Package oteltest installs the OpenTelemetry SDK's own in-memory parts
// (a span recorder and a manual metric reader) as the global providers
// of a test binary, so that a plugin's test checks the spans and metric
// points its instrumentation gives a real SDK. The global providers are
// set once per binary (the global instruments bind to the first
// providers set, see [Install]); a test tells its own spans from others'
// by their trace and its own points by their attributes or by the change
// between two collections.
package oteltest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var (
	once     sync.Once
	recorder *tracetest.SpanRecorder
	reader   *sdkmetric.ManualReader
)

// Install sets the global tracer provider (sampling every span into a
// recorder), meter provider (read on demand) and the W3C trace context
// propagator, the first time it is called in the binary. Instruments
// made from the global meter before or after forward to them.
func Install() {
	once.Do(func() {
		recorder = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithSpanProcessor(recorder)))
		reader = sdkmetric.NewManualReader()
		otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
		otel.SetTextMapPropagator(propagation.TraceContext{})
	})
}

// Parent starts a recording span of a new trace, the parent the test
// gives the code under test, and ends it when the test ends.
func Parent(t testing.TB, name string) (context.Context, trace.Span) {
	t.Helper()
	Install()
	ctx, span := otel.Tracer("mcpkit/oteltest").Start(t.Context(), name, trace.WithNewRoot())
	t.Cleanup(func() { span.End() })
	return ctx, span
}

// Spans are the ended spans of a trace, in the order they ended.
func Spans(id trace.TraceID) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range recorder.Ended() {
		if s.SpanContext().TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

// Children are the ended spans whose parent is parent.
func Children(parent trace.SpanContext) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range Spans(parent.TraceID()) {
		if s.Parent().SpanID() == parent.SpanID() {
			out = append(out, s)
		}
	}
	return out
}

// Attr is the value of a span's attribute key ("" and false when absent).
func Attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// Requests is receiving middleware that does what the core does for the
// plugins' instrumentation: each tools/call runs under a SERVER span of
// its own trace, in the handler's context. It keeps each span's context.
type Requests struct {
	mu    sync.Mutex
	spans []trace.SpanContext
}

// Middleware is the mcp.Middleware (for mcpcore.Options.Middleware).
func (r *Requests) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	Install()
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctx, span := otel.Tracer("mcpkit/oteltest").Start(ctx, method, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		r.mu.Lock()
		r.spans = append(r.spans, span.SpanContext())
		r.mu.Unlock()
		return next(ctx, method, req)
	}
}

// Last is the span context of the last tools/call.
func (r *Requests) Last(t testing.TB) trace.SpanContext {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.spans) == 0 {
		t.Fatal("oteltest: no tools/call went through the middleware")
	}
	return r.spans[len(r.spans)-1]
}

// Collect reads every metric point so far (cumulative).
func Collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	Install()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("oteltest: collect metrics: %v", err)
	}
	return rm
}

// Find is the metric of a scope and name (false when none was recorded).
func Find(rm metricdata.ResourceMetrics, scope, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			continue
		}
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// has reports whether set holds every attribute of want.
func has(set attribute.Set, want []attribute.KeyValue) bool {
	return !slices.ContainsFunc(want, func(kv attribute.KeyValue) bool {
		v, ok := set.Value(kv.Key)
		return !ok || v != kv.Value
	})
}

// Count is the sum of a counter's points, or the count of a histogram's,
// over the points that carry every attribute of want.
func Count(rm metricdata.ResourceMetrics, scope, name string, want ...attribute.KeyValue) int64 {
	m, ok := Find(rm, scope, name)
	if !ok {
		return 0
	}
	var n int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, want) {
				n += p.Value
			}
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, want) {
				n += int64(p.Count)
			}
		}
	}
	return n
}

// Points are the attribute sets of a histogram's points that carry every
// attribute of want.
func Points(rm metricdata.ResourceMetrics, scope, name string, want ...attribute.KeyValue) []attribute.Set {
	m, ok := Find(rm, scope, name)
	if !ok {
		return nil
	}
	var out []attribute.Set
	if d, ok := m.Data.(metricdata.Histogram[float64]); ok {
		for _, p := range d.DataPoints {
			if has(p.Attributes, want) {
				out = append(out, p.Attributes)
			}
		}
	}
	return out
}

// Ended are all the spans ended so far, in the order they ended.
func Ended() []sdktrace.ReadOnlySpan {
	Install()
	return recorder.Ended()
}
