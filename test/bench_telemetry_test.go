package test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/benchpair"
	"github.com/mcpkit/mcpkit/pkg/telemetry"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkTelemetryOverhead compares a no-op tools/call round trip
// (diag_echo) through bin/mcpkit with metrics and tracing on (every span
// sampled and exported over OTLP/HTTP to an in-test receiver; over HTTP
// also the Prometheus exporter behind /metrics; over stdio OTLP metrics)
// with the same binary with telemetry off, in one run. The target is
// ratio <= 1.05: recording a call may cost at most 5% of its round trip.
// Its table also has the bound: what recording one call costs at least
// (spanBound), timed in the same run, so that the overhead can be read
// against it on a machine where 5% is out of reach.
func BenchmarkTelemetryOverhead(b *testing.B) {
	rcv := startOTLPReceiver(b)
	rcv.discard()
	// The SDK's default batching (a batch every 5 s or of 512 spans), not
	// the tests' short delay.
	on := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_TRACES_SAMPLER=always_on",
		"OTEL_METRICS_EXPORTER=otlp"}
	b.Run("stdio", func(b *testing.B) {
		start := func(env []string) *exec.Cmd {
			cmd := exec.Command(binary(b), "serve", "--stdio", "--plugins", "diag", "--log-level", "warn")
			cmd.Env = append(os.Environ(), env...)
			return cmd
		}
		traced := connectCommand(b, start(on), "")
		plain := connectCommand(b, start([]string{"OTEL_SDK_DISABLED=true"}), "")
		checkOverhead(b, "stdio", traced, plain, on, rcv)
	})
	b.Run("http", func(b *testing.B) {
		args := []string{"serve", "--http", "127.0.0.1:0", "--log-format", "json", "--plugins", "diag"}
		traced := startListeningEnv(b, on, binary(b), args...).connect(b, legacyEra, nil)
		plain := startListeningEnv(b, []string{"OTEL_SDK_DISABLED=true"}, binary(b), args...).connect(b, legacyEra, nil)
		checkOverhead(b, "http", traced, plain, on, rcv)
	})
}

// checkOverhead compares a no-op call through the session with telemetry
// on and through the one with it off, logs the two as a table (the figures
// the report reads: go test prints no result line for a benchmark that
// failed) with the bound (spanBound under env, the servers'), and fails
// the benchmark when the target is missed, or when no spans were
// exported during the calls (rcv does not decode them: see discard).
func checkOverhead(b *testing.B, transport string, on, off *mcp.ClientSession, env []string, rcv *otlpReceiver) {
	exports := rcv.exports.Load()
	perCall, ratio := benchpair.CompareCalls(b, [2]string{"telemetry", "off"}, echoCalls(b, on, off))
	if b.N < 1000 {
		return // calibration
	}
	if rcv.exports.Load() == exports {
		b.Fatalf("the server with telemetry on exported no spans during %d calls", b.N)
	}
	bound := spanBound(b, env, b.N)
	extra, bounded := perCall[0]-perCall[1], perCall[1]+bound
	b.ReportMetric(float64(bound.Nanoseconds()), "bound-ns/call")
	b.Logf("%s overhead  ns/call\ntelemetry  %d\noff  %d\nbound  %d\noff plus bound  %d", transport,
		perCall[0].Nanoseconds(), perCall[1].Nanoseconds(), bound.Nanoseconds(), bounded.Nanoseconds())
	b.Logf("%s: telemetry adds %v a call, %.1fx the bound (one sampled span started and ended and one histogram point, %v); off + bound would be ratio %.3f",
		transport, extra, float64(extra)/float64(bound), bound, float64(bounded)/float64(perCall[1]))
	if ratio > 1.05 {
		b.Errorf("a call with telemetry on costs %.1f%% more than with it off (target <= 5%%)", (ratio-1)*100)
	}
}

// spanBound times what recording one call costs at least, in this
// process: a sampled SERVER span with the attributes of a tools/call
// started and ended, and one point of a histogram, through the providers
// package telemetry builds from env (the servers' environment: its
// batcher, exporting over OTLP to the same receiver), n times. Its queue
// holds all n: ended back to back, spans outrun the export, and a span
// the batcher drops is one it does not encode, which would make the bound
// less than the work.
func spanBound(b *testing.B, env []string, n int) time.Duration {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	b.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", strconv.Itoa(n))
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "bound"})
	if err != nil || tel.TracerProvider() == nil || tel.MeterProvider() == nil {
		b.Fatalf("telemetry for the bound: %v", err)
	}
	defer tel.Shutdown(ctx)
	tracer := tel.TracerProvider().Tracer("bound")
	hist, err := tel.MeterProvider().Meter("bound").Float64Histogram("bound.duration", metric.WithUnit("s"))
	if err != nil {
		b.Fatal(err)
	}
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", "tools/call"), attribute.String("network.transport", "pipe"),
		attribute.String("gen_ai.tool.name", "diag_echo"), attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("mcp.protocol.version", "2026-07-28")}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}
	point := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
	began := time.Now()
	for range n {
		start := time.Now()
		_, span := tracer.Start(ctx, "tools/call diag_echo", opts...)
		span.End()
		hist.Record(ctx, time.Since(start).Seconds(), point...)
	}
	return time.Since(began) / time.Duration(n)
}
