package action

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcpkit/mcpkit/internal/plugintel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry of action runs, through the global OpenTelemetry providers
// (no-ops unless the program sets them: mcpkit's core does from the
// OTEL_* environment). docs/observability.md lists the names.
const (
	// ScopeName is the instrumentation scope of the action spans and
	// metrics.
	ScopeName = "mcpkit/action"

	// MetricCalls counts action runs by action, transport and outcome.
	MetricCalls = "mcpkit.action.calls"
	// MetricDuration is the duration of action runs, in seconds, by
	// action, transport and error type.
	MetricDuration = "mcpkit.action.duration"
)

// Transports, the mcpkit.action.transport attribute: a Conn's Type, with
// "web" named http.
var transports = map[string]string{"web": "http", "websocket": "websocket", "cli": "cli", "task": "task", "mcp": "mcp"}

// transport is a connection's transport attribute value ("other" for a
// Conn of another Type, which a program may give App.Run).
func transport(c *Conn) string {
	if t, ok := transports[c.Type]; ok {
		return t
	}
	return "other"
}

// durationBuckets are MetricDuration's boundaries, in seconds: the HTTP
// and RPC conventions' advised boundaries, actions being requests.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

type telemetry struct {
	tracer   trace.Tracer
	calls    metric.Int64Counter
	duration metric.Float64Histogram
}

var tel = newTelemetry()

func newTelemetry() *telemetry {
	m := otel.Meter(ScopeName)
	t := &telemetry{tracer: otel.Tracer(ScopeName)}
	var err1, err2 error
	t.calls, err1 = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Action runs, by action, transport (http, websocket, cli, task, mcp) and outcome."))
	t.duration, err2 = m.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of action runs, validation and middlewares included."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err := errors.Join(err1, err2); err != nil {
		otel.Handle(err) // the instruments that failed are no-ops
	}
	return t
}

// runSpan starts the span of act's run for c: SERVER for the HTTP and
// WebSocket transports (the run is the server side of the client's
// request; its parent is the traceparent the client sent, if any),
// INTERNAL for the others (under the MCP request's span for mcp). It
// returns nil, and ctx as it was, when the span does not record.
func (t *telemetry) runSpan(ctx context.Context, c *Conn, act *Action) (context.Context, trace.Span) {
	kind := trace.SpanKindInternal
	if c.Type == "web" || c.Type == "websocket" {
		kind = trace.SpanKindServer
	}
	sctx, span := t.tracer.Start(ctx, "action", trace.WithSpanKind(kind))
	if !span.IsRecording() {
		span.End()
		return ctx, nil
	}
	span.SetName("action " + act.Name)
	span.SetAttributes(attribute.String("mcpkit.action.name", act.Name), attribute.String("mcpkit.action.transport", transport(c)))
	if c.Type == "web" && act.Web != nil {
		span.SetAttributes(attribute.String("http.request.method", act.Web.Method), attribute.String("http.route", act.Web.Route))
	}
	return sctx, span
}

// requestContext is r's context with the trace context r's headers
// carry (see plugintel.RemoteParent), so that an action run over HTTP or
// WebSocket continues the client's trace.
func requestContext(r *http.Request) context.Context {
	return plugintel.RemoteParent(r.Context(), r.Header)
}

// endRun ends the run's span (nil: none) and records its metrics; err is
// the run's final error, an *Error or nil.
func (t *telemetry) endRun(ctx context.Context, span trace.Span, c *Conn, act *Action, start time.Time, err error) {
	metrics := t.calls.Enabled(ctx) || t.duration.Enabled(ctx)
	if span == nil && !metrics {
		return
	}
	errType := ""
	var e *Error
	if errors.As(err, &e) {
		errType = string(e.Kind)
	} else if err != nil {
		errType = plugintel.ErrorType(err)
	}
	if span != nil {
		if errType != "" {
			span.SetAttributes(attribute.String("error.type", errType))
			span.SetStatus(codes.Error, errType)
		}
		span.End()
	}
	if !metrics {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("mcpkit.action.name", act.Name), attribute.String("mcpkit.action.transport", transport(c))}
	if errType != "" {
		attrs = append(attrs, attribute.String("error.type", errType))
	}
	t.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	t.calls.Add(ctx, 1, metric.WithAttributes(append(attrs, attribute.String("outcome", plugintel.Outcome(err)))...))
}
