package oauth

import (
	"context"
	"errors"

	"github.com/mcpkit/mcpkit/internal/plugintel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry of access token checks (Verify), through the global
// OpenTelemetry providers (no-ops unless the program sets them: mcpkit's
// core does). docs/observability.md lists the names.
const (
	// ScopeName is the instrumentation scope of the OAuth server's spans
	// and metrics.
	ScopeName = "mcpkit/action/oauth"

	// MetricTokenChecks counts access token checks by outcome: valid,
	// invalid (unknown, expired, revoked or for another resource) or
	// error (the store failed).
	MetricTokenChecks = "mcpkit.oauth.token.checks"
)

// Token check outcomes.
const (
	checkValid   = "valid"
	checkInvalid = "invalid"
	checkError   = "error"
)

type telemetry struct {
	tracer trace.Tracer
	checks metric.Int64Counter
}

var tel = newTelemetry()

func newTelemetry() *telemetry {
	t := &telemetry{tracer: otel.Tracer(ScopeName)}
	var err error
	t.checks, err = otel.Meter(ScopeName).Int64Counter(MetricTokenChecks, metric.WithUnit("{check}"),
		metric.WithDescription("OAuth access token checks, by outcome (valid, invalid, error) and whether the grant came from the cache."))
	if err != nil {
		otel.Handle(err) // the counter is a no-op
	}
	return t
}

// startCheck starts a token check's INTERNAL span, the child of the
// request's span or of the traceparent the client sent (nil, and ctx as
// it was, with neither, or when it does not record): a check runs on
// every authenticated request, so it costs a branch when nothing is
// configured, and is no trace of its own.
func (t *telemetry) startCheck(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := plugintel.Child(ctx, t.tracer, trace.SpanKindInternal)
	if span != nil {
		span.SetName("oauth.token.verify")
	}
	return ctx, span
}

// endCheck records a check's outcome (cached: the grant came from the
// verify cache) and ends its span. The token is never an attribute.
func (t *telemetry) endCheck(ctx context.Context, span trace.Span, cached bool, err error) {
	outcome := checkValid
	switch {
	case errors.Is(err, ErrInvalidToken):
		outcome = checkInvalid
	case err != nil:
		outcome = checkError
	}
	if span != nil {
		span.SetAttributes(attribute.String("mcpkit.oauth.outcome", outcome), attribute.Bool("mcpkit.oauth.cached", cached))
		if err != nil {
			span.SetAttributes(attribute.String("error.type", outcome))
			span.SetStatus(codes.Error, outcome)
		}
		span.End()
	}
	if t.checks.Enabled(ctx) {
		t.checks.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome), attribute.Bool("mcpkit.oauth.cached", cached)))
	}
}
