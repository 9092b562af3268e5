package telemetry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// clearEnv unsets every OTEL_* variable Setup reads, for one test.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
}

// TestWanted: which signals each environment asks for.
func TestWanted(t *testing.T) {
	for _, c := range []struct {
		env                       map[string]string
		http                      bool
		traces, otlpMetrics, prom bool
	}{
		{nil, false, false, false, false},
		{nil, true, false, false, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false, true, true, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x"}, false, true, false, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, true, false, true, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none"}, true, true, false, false},
		{map[string]string{"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, true, true, false, true},
	} {
		clearEnv(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		traces, otlpMetrics, prom := wanted(c.http)
		if traces != c.traces || otlpMetrics != c.otlpMetrics || prom != c.prom {
			t.Errorf("%v (http %v): traces %v, otlp metrics %v, prometheus %v; want %v %v %v", c.env, c.http,
				traces, otlpMetrics, prom, c.traces, c.otlpMetrics, c.prom)
		}
	}
}

// TestSetupNothingConfigured: without any OTEL_* variable, over stdio,
// Setup installs nothing: no providers, no /metrics.
func TestSetupNothingConfigured(t *testing.T) {
	clearEnv(t)
	tel, err := Setup(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tel.TracerProvider() != nil || tel.MeterProvider() != nil || tel.MetricsHandler() != nil || tel.Tracing() {
		t.Fatalf("providers installed with nothing configured: %+v", tel)
	}
}

// TestSetupDisabled: OTEL_SDK_DISABLED=true turns even /metrics off.
func TestSetupDisabled(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_SDK_DISABLED", "TRUE")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	tel, err := Setup(t.Context(), Options{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	if tel.MeterProvider() != nil || tel.MetricsHandler() != nil || tel.Tracing() {
		t.Fatalf("telemetry on though disabled: %+v", tel)
	}
}

// TestSetupUnknownExporter: a typo in an exporter's name is an error,
// not telemetry silently dropped.
func TestSetupUnknownExporter(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlpp")
	if _, err := Setup(t.Context(), Options{}); err == nil {
		t.Fatal("OTEL_TRACES_EXPORTER=otlpp accepted")
	}
}

// TestSetupPrometheus: with an HTTP listener the Prometheus handler serves
// what the global meter records, under the resource's service name.
func TestSetupPrometheus(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_SERVICE_NAME", "svc-under-test")
	tel, err := Setup(t.Context(), Options{Prometheus: true, Version: "v0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	c, err := otel.Meter("test").Int64Counter("probe.calls")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(t.Context(), 3)
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if !strings.Contains(body, "probe_calls_total{") || !strings.Contains(body, `service_name="svc-under-test"`) {
		t.Fatalf("/metrics:\n%s", body)
	}
}

// TestLogHandler: a record logged with a recording span's context carries
// its trace_id and span_id; one without does not.
func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(LogHandler(slog.NewTextHandler(&buf, nil))).With("plugin", "p")
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(t.Context(), "op")
	logger.InfoContext(ctx, "traced")
	span.End()
	logger.Info("untraced")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	sc := span.SpanContext()
	if !strings.Contains(lines[0], "trace_id="+sc.TraceID().String()) || !strings.Contains(lines[0], "span_id="+sc.SpanID().String()) {
		t.Errorf("traced line: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Errorf("untraced line: %s", lines[1])
	}
}

// TestBatcher: spans are exported when a batch fills, at ForceFlush and
// at Shutdown; none is lost or exported twice.
func TestBatcher(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // never, within the test
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
	client := &capturingClient{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newBatcher(client, resource.Empty())))
	tr := tp.Tracer("t")
	end := func(n int) {
		for range n {
			_, s := tr.Start(t.Context(), "s")
			s.End()
		}
	}
	end(4) // a full batch wakes the exporter
	deadline := time.Now().Add(5 * time.Second)
	for client.count(t) != 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := client.count(t); got != 4 {
		t.Fatalf("after a full batch: %d spans exported, want 4", got)
	}
	end(2)
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := client.count(t); got != 6 {
		t.Fatalf("after ForceFlush: %d spans exported, want 6", got)
	}
	end(9) // more than two batches: sent as three
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, shut := client.count(t), client.stopped.Load(); got != 15 || !shut {
		t.Fatalf("after Shutdown: %d spans exported (want 15), client stopped %v", got, shut)
	}
	if got := len(client.requests(t)); got != 5 {
		t.Errorf("%d exports, want 5 (batches of at most 4)", got)
	}
}

// TestBatcherEncoding: what the batcher sends is what the SDK's OTLP
// exporter sends for the same spans (decoded, field by field): every
// attribute type, events, links, status, a remote parent with trace
// state, dropped counts, two instrumentation scopes interleaved, the
// resource.
func TestBatcherEncoding(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.40.0",
		attribute.String("service.name", "svc"), attribute.Int("replica", 3))
	ours, theirs := &capturingClient{}, &capturingClient{}
	exp, err := otlptrace.New(t.Context(), theirs)
	if err != nil {
		t.Fatal(err)
	}
	limits := sdktrace.NewSpanLimits()
	limits.AttributeCountLimit = 16
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithBatcher(exp), sdktrace.WithSpanProcessor(newBatcher(ours, res)))
	a := tp.Tracer("scope/a", trace.WithInstrumentationVersion("v1.2"), trace.WithSchemaURL("https://example.com/s"),
		trace.WithInstrumentationAttributes(attribute.Bool("x", true)))
	b := tp.Tracer("scope/b")

	ts, err := trace.ParseTraceState("vendor=v1,other=o")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(t.Context(), remote)
	attrs := []attribute.KeyValue{attribute.Bool("b", true), attribute.Bool("b0", false), attribute.Int("i", -7),
		attribute.Int("i0", 0), attribute.Float64("f", 2.5), attribute.String("s", "tools/call"), attribute.String("s0", ""),
		attribute.ByteSlice("bytes", []byte{0, 1, 2}), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.IntSlice("is", []int{1, -1}), attribute.Float64Slice("fs", []float64{0.5}),
		attribute.StringSlice("ss", []string{"a", ""}), attribute.Slice("mixed", attribute.IntValue(1), attribute.StringValue("x")),
		attribute.Map("m", attribute.String("k", "v"), attribute.Int("n", 2))}
	ctx, server := a.Start(ctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...),
		trace.WithLinks(trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9},
			SpanID: trace.SpanID{8}, TraceState: ts, Remote: true}), Attributes: []attribute.KeyValue{attribute.String("l", "1")}}))
	for i := range 4 { // beyond the limit of 16: dropped
		server.SetAttributes(attribute.Int("extra"+strconv.Itoa(i), i))
	}
	_, child := b.Start(ctx, "lookup", trace.WithSpanKind(trace.SpanKindClient))
	child.RecordError(errors.New("boom"))
	child.SetStatus(codes.Error, "boom")
	child.End()
	_, internal := a.Start(ctx, "inner")
	internal.AddEvent("step", trace.WithAttributes(attribute.Int("n", 1)))
	internal.SetStatus(codes.Ok, "")
	internal.End()
	server.End()
	_, root := b.Start(t.Context(), "root")
	root.End()
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, want := ours.requests(t), theirs.requests(t)
	if len(got) != 1 || len(want) != 1 {
		t.Fatalf("%d and %d exports, want one each", len(got), len(want))
	}
	g, w := got[0].ResourceSpans, want[0].ResourceSpans
	if len(g) != 1 || len(w) != 1 {
		t.Fatalf("%d and %d resources, want one each", len(g), len(w))
	}
	// The exporter orders the scopes as they first appear, as the batcher
	// does; compare field by field.
	if !proto.Equal(g[0], w[0]) {
		t.Fatalf("the batcher sent\n%v\nthe SDK's exporter\n%v", prototext.Format(g[0]), prototext.Format(w[0]))
	}
	if n := len(g[0].ScopeSpans); n != 2 {
		t.Fatalf("%d scopes, want 2", n)
	}
	if s := g[0].ScopeSpans[1].Spans[1]; s.DroppedAttributesCount != 2 || len(s.Attributes) != 16 || s.TraceState != "vendor=v1,other=o" {
		t.Errorf("the server span: %d attributes, %d dropped, trace state %q", len(s.Attributes), s.DroppedAttributesCount, s.TraceState)
	}
}

// capturingClient is an OTLP trace client that keeps each request as
// the collector would receive it (marshalled and decoded).
type capturingClient struct {
	mu      sync.Mutex
	sent    [][]byte
	stopped atomic.Bool
}

func (c *capturingClient) Start(context.Context) error { return nil }

func (c *capturingClient) Stop(context.Context) error { c.stopped.Store(true); return nil }

func (c *capturingClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, body)
	return nil
}

// requests decodes what was sent.
func (c *capturingClient) requests(t *testing.T) []*coltracepb.ExportTraceServiceRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	var reqs []*coltracepb.ExportTraceServiceRequest
	for _, body := range c.sent {
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			t.Fatalf("an export does not decode: %v", err)
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// count is the number of spans sent.
func (c *capturingClient) count(t *testing.T) int {
	n := 0
	for _, req := range c.requests(t) {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
	}
	return n
}

// TestSetupTraceProtocols: OTEL_EXPORTER_OTLP_PROTOCOL chooses the
// client the batcher sends through; a span reaches a gRPC collector
// (grpc) and an HTTP one (http/protobuf, the default), and an unknown
// protocol is an error.
func TestSetupTraceProtocols(t *testing.T) {
	received := make(chan string, 4)
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, &traceService{names: received})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err != nil || proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		received <- spanNames(req)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(hs.Close)
	for _, c := range []struct{ proto, endpoint string }{{"grpc", "http://" + ln.Addr().String()}, {"", hs.URL}} {
		clearEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", c.proto)
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", c.endpoint)
		tel, err := Setup(t.Context(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, span := tel.TracerProvider().Tracer("t").Start(t.Context(), "op "+c.proto)
		span.End()
		if err := tel.Shutdown(t.Context()); err != nil {
			t.Fatalf("%q: %v", c.proto, err)
		}
		select {
		case got := <-received:
			if got != "op "+c.proto {
				t.Errorf("protocol %q: the collector received %q", c.proto, got)
			}
		default:
			t.Errorf("protocol %q: nothing received", c.proto)
		}
	}
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	if _, err := Setup(t.Context(), Options{}); err == nil {
		t.Fatal("OTEL_EXPORTER_OTLP_PROTOCOL=http/json accepted")
	}
}

// traceService is a gRPC OTLP collector that passes on the span names
// of each export.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	names chan<- string
}

func (s *traceService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.names <- spanNames(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// spanNames joins the names of the spans of req.
func spanNames(req *coltracepb.ExportTraceServiceRequest) string {
	var names []string
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				names = append(names, s.Name)
			}
		}
	}
	return strings.Join(names, ",")
}
