package store

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/mcpkit/mcpkit/internal/plugintel"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry of the store's tool calls, through the global OpenTelemetry
// providers the core sets (no-ops when it sets none). Each tool call runs
// one store transaction (a load, one per 1000 documents; a backup or dump
// reads one snapshot), so a call is the unit: one span, one count, one
// duration point. docs/observability.md lists the names.
const (
	// ScopeName is the instrumentation scope of the store plugin's spans
	// and metrics.
	ScopeName = "mcpkit/store"

	// MetricOperations counts the store's tool calls by operation (the
	// tool) and outcome.
	MetricOperations = "mcpkit.store.operations"
	// MetricOperationDuration is the duration of a tool call's
	// transaction, in seconds, by operation and error type.
	MetricOperationDuration = "mcpkit.store.operation.duration"

	// dbSystem is db.system.name: the store is mcpkit's own engine
	// whatever it keeps its keys in (the backend attribute says which).
	dbSystem = "mcpkit.docstore"
)

// durationBuckets are the boundaries of MetricOperationDuration, the DB
// conventions' advised ones for operation durations, in seconds.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// telemetry holds the plugin's tracer and instruments, from the global
// providers: made before the core sets them, they forward to them once set.
type telemetry struct {
	tracer     trace.Tracer
	operations metric.Int64Counter
	duration   metric.Float64Histogram
}

var tel = newTelemetry()

func newTelemetry() *telemetry {
	m := otel.Meter(ScopeName)
	t := &telemetry{tracer: otel.Tracer(ScopeName)}
	var err1, err2 error
	t.operations, err1 = m.Int64Counter(MetricOperations, metric.WithUnit("{operation}"),
		metric.WithDescription("Document store tool calls, by operation (the tool) and outcome."))
	t.duration, err2 = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a document store tool call's transaction."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err := errors.Join(err1, err2); err != nil {
		otel.Handle(err) // the instruments that failed are no-ops
	}
	return t
}

// backend names the store's key-value backend for the
// mcpkit.docstore.backend attribute: bbolt, memory or postgresql.
func (c *settings) backend() string {
	switch {
	case kv.IsURL(c.path):
		return "postgresql"
	case c.path == "":
		return "memory"
	}
	return "bbolt"
}

// instrument wraps a store tool's handler (op is the tool's unprefixed
// name) with its span and metrics. The span is an INTERNAL child of the
// request's span: the engine runs in the process, whatever its backend.
func instrument[In any](p *Plugin, op string, fn mcpcore.ToolFunc[In]) mcpcore.ToolFunc[In] {
	opAttr := attribute.String("db.operation.name", op)
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (any, error) {
		ctx, span := plugintel.Child(ctx, tel.tracer, trace.SpanKindInternal)
		metrics := tel.operations.Enabled(ctx) || tel.duration.Enabled(ctx)
		if span == nil && !metrics {
			return fn(ctx, req, in)
		}
		backend := attribute.String("mcpkit.docstore.backend", p.cfg.backend())
		if span != nil {
			name, attrs := op, []attribute.KeyValue{attribute.String("db.system.name", dbSystem), opAttr, backend}
			if coll := collectionOf(in); coll != "" {
				name += " " + coll
				attrs = append(attrs, attribute.String("db.collection.name", coll))
			}
			span.SetName(name)
			span.SetAttributes(attrs...)
		}
		start := time.Now()
		out, err := fn(ctx, req, in)
		elapsed := time.Since(start).Seconds()
		errType := plugintel.ErrorType(err)
		if span != nil {
			if err != nil {
				span.SetAttributes(attribute.String("error.type", errType))
				span.SetStatus(codes.Error, errType)
			}
			span.End()
		}
		if metrics {
			attrs := []attribute.KeyValue{attribute.String("db.system.name", dbSystem), opAttr, backend}
			if err != nil {
				attrs = append(attrs, attribute.String("error.type", errType))
			}
			tel.duration.Record(ctx, elapsed, metric.WithAttributes(attrs...))
			tel.operations.Add(ctx, 1, metric.WithAttributes(append(attrs, attribute.String("outcome", plugintel.Outcome(err)))...))
		}
		return out, err
	}
}

// collectionOf is the collection a tool call's arguments name (their
// Collection field), "" when they name none. Reflection, but only for a
// span that records.
func collectionOf(in any) string {
	v := reflect.ValueOf(in)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName("Collection")
	if !f.IsValid() || f.Type() != reflect.TypeFor[collectionName]() {
		return ""
	}
	return f.String()
}
