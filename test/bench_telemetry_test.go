package test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/mcpkit/mcpkit/internal/benchpair"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkTelemetryOverhead compares a no-op tools/call round trip
// (diag_echo) through bin/mcpkit with metrics and tracing on (every span
// sampled and exported over OTLP/HTTP to an in-test receiver; over HTTP
// also the Prometheus exporter behind /metrics; over stdio OTLP metrics)
// with the same binary with telemetry off, in one run. The target is
// ratio <= 1.05: recording a call may cost at most 5% of its round trip.
func BenchmarkTelemetryOverhead(b *testing.B) {
	rcv := startOTLPReceiver(b)
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
		checkOverhead(b, "stdio", traced, plain)
	})
	b.Run("http", func(b *testing.B) {
		args := []string{"serve", "--http", "127.0.0.1:0", "--log-format", "json", "--plugins", "diag"}
		traced := startListeningEnv(b, on, binary(b), args...).connect(b, legacyEra, nil)
		plain := startListeningEnv(b, []string{"OTEL_SDK_DISABLED=true"}, binary(b), args...).connect(b, legacyEra, nil)
		checkOverhead(b, "http", traced, plain)
	})
}

// checkOverhead compares a no-op call through the session with telemetry
// on and through the one with it off, logs the two as a table (the figures
// the report reads: go test prints no result line for a benchmark that
// failed) and fails the benchmark when the target is missed.
func checkOverhead(b *testing.B, transport string, on, off *mcp.ClientSession) {
	perCall, ratio := benchpair.CompareCalls(b, [2]string{"telemetry", "off"}, echoCalls(b, on, off))
	if b.N < 1000 {
		return // calibration
	}
	b.Logf("%s overhead  ns/call\ntelemetry  %d\noff  %d", transport, perCall[0].Nanoseconds(), perCall[1].Nanoseconds())
	if ratio > 1.05 {
		b.Errorf("a call with telemetry on costs %.1f%% more than with it off (target <= 5%%)", (ratio-1)*100)
	}
}
