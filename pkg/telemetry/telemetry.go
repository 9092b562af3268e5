// Package telemetry sets up OpenTelemetry for an mcpkit process: it builds
// the SDK's tracer and meter providers from the standard OTEL_* environment
// (the OpenTelemetry SDK environment variable specification), adds a
// Prometheus exporter whose handler the HTTP listener serves at /metrics,
// installs them as the global providers with the W3C TraceContext and
// Baggage propagators, and flushes them at Shutdown.
//
// Nothing configured costs nothing: without an exporter asked for (no
// OTEL_EXPORTER_OTLP_*ENDPOINT, no OTEL_TRACES_EXPORTER or
// OTEL_METRICS_EXPORTER naming one) and without Prometheus, Setup installs
// nothing, [Telemetry.TracerProvider] and [Telemetry.MeterProvider] are nil
// and the host (pkg/mcpcore) then records nothing at all: a nil check per
// call. OTEL_SDK_DISABLED=true turns everything off, /metrics included.
//
// Plugins use only the global API: otel.Tracer("mcpkit/<plugin>") and
// otel.Meter("mcpkit/<plugin>"); the context a tool, resource or prompt
// handler receives carries the host's server span of the MCP request.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Options says what the process serves.
type Options struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES set it.
	ServiceName string
	// Version is service.version.
	Version string
	// Prometheus adds the Prometheus exporter (the process has an HTTP
	// listener that serves [Telemetry.MetricsHandler]); it is left out
	// when OTEL_METRICS_EXPORTER is "none" or the SDK is disabled.
	Prometheus bool
	// Logger receives the SDK's own errors (an export that failed).
	Logger *slog.Logger
}

// Telemetry is the set of providers Setup installed.
type Telemetry struct {
	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
	metrics http.Handler
}

// Setup builds the providers the environment asks for and installs them
// as the global ones. It fails on an environment value it does not know
// (an unknown exporter or protocol): a typo must not silently drop the
// telemetry an operator asked for. The result is never nil.
func Setup(ctx context.Context, opts Options) (*Telemetry, error) {
	t := &Telemetry{}
	if envTrue("OTEL_SDK_DISABLED") {
		return t, nil
	}
	traces, otlpMetrics, prom := wanted(opts.Prometheus)
	if !traces && !otlpMetrics && !prom {
		return t, nil
	}
	res, err := newResource(ctx, opts)
	if err != nil {
		return t, err
	}
	if traces {
		sp, err := spanProcessor(ctx, res)
		if err != nil {
			return t, fmt.Errorf("telemetry: traces exporter: %w", err)
		}
		// The sampler comes from OTEL_TRACES_SAMPLER(_ARG), which the SDK
		// reads itself; the batching from OTEL_BSP_* (see batcher).
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res))
	}
	var readers []sdkmetric.Option
	if otlpMetrics {
		r, err := metricReader(ctx)
		if err != nil {
			return t, errors.Join(fmt.Errorf("telemetry: metrics exporter: %w", err), t.Shutdown(ctx))
		}
		readers = append(readers, sdkmetric.WithReader(r))
	}
	if prom {
		reg := prometheus.NewRegistry()
		exp, err := promexporter.New(promexporter.WithRegisterer(reg))
		if err != nil {
			return t, errors.Join(fmt.Errorf("telemetry: prometheus exporter: %w", err), t.Shutdown(ctx))
		}
		readers = append(readers, sdkmetric.WithReader(exp))
		t.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	if len(readers) > 0 {
		t.mp = sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
	}
	t.install(opts.Logger)
	return t, nil
}

// wanted reads which signals the environment asks for: traces when an
// exporter is named (not "none") or an OTLP endpoint is set for them;
// OTLP metrics likewise ("prometheus" means the /metrics endpoint, not
// autoexport's own listener); Prometheus when the process serves HTTP and
// metrics are not "none".
func wanted(httpListener bool) (traces, otlpMetrics, prom bool) {
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	switch te := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); te {
	case "":
		traces = endpoint || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		traces = te != "none"
	}
	me := strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER"))
	switch me {
	case "":
		otlpMetrics = endpoint || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
	case "none", "prometheus":
	default:
		otlpMetrics = true
	}
	return traces, otlpMetrics, httpListener && me != "none"
}

// spanProcessor is what OTEL_TRACES_EXPORTER names: for "otlp" (the
// default) the batcher, sending through the OTLP client of the protocol
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL names, as autoexport chooses it;
// for "console" the SDK's batch processor writing to stderr rather than
// stdout (over stdio, stdout carries JSON-RPC only).
func spanProcessor(ctx context.Context, res *resource.Resource) (sdktrace.SpanProcessor, error) {
	switch name := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); name {
	case "", "otlp":
		client, err := traceClient()
		if err != nil {
			return nil, err
		}
		if err := client.Start(ctx); err != nil {
			return nil, fmt.Errorf("otlp client: %w", err)
		}
		return newBatcher(client, res), nil
	case "console":
		exp, err := stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
		if err != nil {
			return nil, err
		}
		return sdktrace.NewBatchSpanProcessor(exp), nil
	default:
		return nil, fmt.Errorf("unknown OTEL_TRACES_EXPORTER %q (otlp, console or none)", name)
	}
}

// traceClient is the OTLP client of the protocol the environment names
// (http/protobuf unless it says grpc), configured by the rest of the
// OTEL_EXPORTER_OTLP_* environment as the SDK's exporters are.
func traceClient() (otlptrace.Client, error) {
	proto := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if proto == "" {
		proto = strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch proto {
	case "", "http/protobuf":
		return otlptracehttp.NewClient(), nil
	case "grpc":
		return otlptracegrpc.NewClient(), nil
	}
	return nil, fmt.Errorf("unknown OTLP protocol %q (grpc or http/protobuf)", proto)
}

// metricReader is the reader OTEL_METRICS_EXPORTER names, through
// autoexport, but for "console", which writes to stderr rather than
// stdout.
func metricReader(ctx context.Context) (sdkmetric.Reader, error) {
	if strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")) == "console" {
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(os.Stderr))
		if err != nil {
			return nil, err
		}
		return sdkmetric.NewPeriodicReader(exp), nil
	}
	return autoexport.NewMetricReader(ctx)
}

// newResource describes the process: service.name and service.version,
// then what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say (they win).
func newResource(ctx context.Context, opts Options) (*resource.Resource, error) {
	name := opts.ServiceName
	if name == "" {
		name = "mcpkit"
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(name), semconv.ServiceVersion(opts.Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil // a partial resource (a malformed attribute skipped) still describes the process
}

// install makes the providers global, with the W3C propagators, and sends
// the SDK's errors to logger.
func (t *Telemetry) install(logger *slog.Logger) {
	if t.tp != nil {
		otel.SetTracerProvider(t.tp)
	}
	if t.mp != nil {
		otel.SetMeterProvider(t.mp)
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if logger != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			logger.Warn("telemetry: export failed", "err", err)
		}))
	}
}

// TracerProvider returns the tracer provider, or nil when no traces are
// exported (the host then starts no spans).
func (t *Telemetry) TracerProvider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp
}

// MeterProvider returns the meter provider, or nil when no metrics are
// exported or served (the host then records none).
func (t *Telemetry) MeterProvider() metric.MeterProvider {
	if t == nil || t.mp == nil {
		return nil
	}
	return t.mp
}

// MetricsHandler returns the Prometheus handler for /metrics, or nil
// when Prometheus is off.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t == nil {
		return nil
	}
	return t.metrics
}

// Tracing reports whether spans are exported.
func (t *Telemetry) Tracing() bool { return t != nil && t.tp != nil }

// Shutdown flushes what is buffered (spans, the last metrics) and stops
// the exporters, bounded by ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// envTrue reads a boolean OTEL_* variable as the specification says:
// only "true", case-insensitively, is true.
func envTrue(name string) bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv(name)), "true")
}
