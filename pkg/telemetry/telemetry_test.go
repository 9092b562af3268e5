package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// clearEnv unsets every OTEL_* variable Setup reads, for one test.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
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
	exp := &countingExporter{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newBatcher(exp)))
	tr := tp.Tracer("t")
	end := func(n int) {
		for range n {
			_, s := tr.Start(t.Context(), "s")
			s.End()
		}
	}
	end(4) // a full batch wakes the exporter
	deadline := time.Now().Add(5 * time.Second)
	for exp.count() != 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := exp.count(); got != 4 {
		t.Fatalf("after a full batch: %d spans exported, want 4", got)
	}
	end(2)
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := exp.count(); got != 6 {
		t.Fatalf("after ForceFlush: %d spans exported, want 6", got)
	}
	end(3)
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, shut := exp.count(), exp.shut.Load(); got != 9 || !shut {
		t.Fatalf("after Shutdown: %d spans exported (want 9), exporter shut down %v", got, shut)
	}
}

// countingExporter counts the spans exported to it.
type countingExporter struct {
	mu   sync.Mutex
	n    int
	shut atomic.Bool
}

func (e *countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n += len(spans)
	return nil
}

func (e *countingExporter) Shutdown(context.Context) error { e.shut.Store(true); return nil }

func (e *countingExporter) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}
