// Package plugintel holds what the bundled plugins' OpenTelemetry
// instrumentation shares: starting a child span only under the call's
// own span, and naming a failed call's error type the way the host names
// its error kind. The plugins use the global providers only (the core
// sets them from the OTEL_* environment); with none set, every call here
// costs a branch.
package plugintel

import (
	"context"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Outcomes of a call, the "outcome" attribute of the plugins' counters.
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
)

// Child starts a span of the given kind as the child of the span ctx
// carries, and returns it only when it records: nil (and ctx as it was)
// when ctx carries no span — a tool call served without one, such as the
// stdio fast path's — or the span is not sampled. The caller sets its
// name and attributes on a non-nil span, so that nothing is built for a
// span no one records.
func Child(ctx context.Context, tracer trace.Tracer, kind trace.SpanKind) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, nil
	}
	cctx, span := tracer.Start(ctx, "child", trace.WithSpanKind(kind))
	if !span.IsRecording() {
		span.End()
		return ctx, nil
	}
	return cctx, span
}

// ErrorType is error.type for a call's error: the kind the host reports
// for it (the error's ErrorKind, as mcpcore.KindError gives, or timeout,
// cancelled, error: mcpcore's kinds, spelled here so that the engines,
// which import no MCP code, can use this package), "" for nil.
func ErrorType(err error) string {
	var kinded interface{ ErrorKind() string }
	switch {
	case err == nil:
		return ""
	case errors.As(err, &kinded) && kinded.ErrorKind() != "":
		return kinded.ErrorKind()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "error"
}

// Outcome is OutcomeOK for a nil error, else OutcomeError.
func Outcome(err error) string {
	if err == nil {
		return OutcomeOK
	}
	return OutcomeError
}

// RemoteParent is ctx with the W3C trace context (traceparent,
// tracestate) an HTTP request's header carries, through the global
// propagator (none unless the program sets one: mcpkit's core does), as
// the parent of the spans started from it — unless ctx already carries a
// span (the core's, for the request), which stays the parent.
func RemoteParent(ctx context.Context, h http.Header) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(h))
}
