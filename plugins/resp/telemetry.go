package resp

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/mcpkit/mcpkit/internal/plugintel"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry of execute's pipelines, through the global OpenTelemetry
// providers the core sets (no-ops when it sets none). Names follow the
// OpenTelemetry database semantic conventions (v1.37 of the database
// client spans and metrics; Redis conventions as published, in
// development) and docs/observability.md lists them.
const (
	// ScopeName is the instrumentation scope of the RESP plugin's spans
	// and metrics.
	ScopeName = "mcpkit/resp"

	// MetricOperationDuration is the DB conventions' client operation
	// duration: one point per pipeline sent, in seconds.
	MetricOperationDuration = "db.client.operation.duration"
	// MetricPipelines counts the pipelines sent, by outcome.
	MetricPipelines = "mcpkit.resp.pipelines"
	// MetricCommands counts the commands sent, by outcome (ok, error,
	// unknown).
	MetricCommands = "mcpkit.resp.commands"
)

// Pipeline outcomes, the "outcome" attribute of MetricPipelines.
const (
	pipelineOK        = "ok"              // every reply arrived, none an error
	pipelineError     = "error"           // every reply arrived, one or more an error reply
	pipelineTimeout   = "timeout"         // the call's deadline passed before every reply arrived
	pipelineCancelled = "cancelled"       // the call was cancelled before every reply arrived
	pipelineLimit     = "limit"           // a reply exceeded reply_bytes; the connection was closed
	pipelineLost      = "connection_lost" // the connection failed before every reply arrived
)

// Command outcomes, the "outcome" attribute of MetricCommands.
const (
	commandOK      = "ok"      // a reply that is not an error
	commandError   = "error"   // an error reply
	commandUnknown = "unknown" // no reply: it may or may not have run
)

// durationBuckets are the DB conventions' advised boundaries for
// db.client.operation.duration, in seconds.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// telemetry holds the plugin's tracer and instruments. They come from the
// global providers: created before the core sets them, they forward to
// them once set.
type telemetry struct {
	tracer    trace.Tracer
	duration  metric.Float64Histogram
	pipelines metric.Int64Counter
	commands  metric.Int64Counter
}

// tel is the package's telemetry, shared by every plugin instance.
var tel = newTelemetry(otel.GetTracerProvider(), otel.GetMeterProvider())

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) *telemetry {
	m := mp.Meter(ScopeName)
	t := &telemetry{tracer: tp.Tracer(ScopeName)}
	var errs [3]error
	t.duration, errs[0] = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of RESP pipelines sent by execute, from the first byte written to the last reply read."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	t.pipelines, errs[1] = m.Int64Counter(MetricPipelines, metric.WithUnit("{pipeline}"),
		metric.WithDescription("RESP pipelines sent by execute, by outcome."))
	t.commands, errs[2] = m.Int64Counter(MetricCommands, metric.WithUnit("{command}"),
		metric.WithDescription("RESP commands sent by execute, by outcome (ok, error reply, unknown after a failure)."))
	if err := errors.Join(errs[:]...); err != nil {
		otel.Handle(err) // the instruments that failed are no-ops; the call goes on
	}
	return t
}

// pipelineSpan is one pipeline's telemetry while it runs: its span (nil
// when the call carries no span to be the child of, or nothing records
// it) and its start (zero when no metric is recorded).
type pipelineSpan struct {
	span    trace.Span
	start   time.Time
	metrics bool
}

// startPipeline begins the telemetry of cmds sent to t's addr. It costs
// a branch or two when nothing is configured: a span is started only as
// the child of the call's span (the MCP request's; the stdio fast path's
// context carries none), and no attribute is built nor the clock read
// unless a span records or a metric is enabled.
func (t *telemetry) startPipeline(ctx context.Context, addr string, cmds Commands) (context.Context, pipelineSpan) {
	var ps pipelineSpan
	ctx, ps.span = plugintel.Child(ctx, t.tracer, trace.SpanKindClient)
	if ps.span != nil {
		op := operationName(cmds)
		host, port := splitAddr(addr)
		ps.span.SetName(op + " " + addr)
		attrs := []attribute.KeyValue{
			attribute.String("db.system.name", "redis"),
			attribute.String("db.operation.name", op),
			attribute.String("server.address", host),
		}
		if port > 0 {
			attrs = append(attrs, attribute.Int("server.port", port))
		}
		if len(cmds) != 1 {
			attrs = append(attrs, attribute.Int("db.operation.batch.size", len(cmds)))
		}
		ps.span.SetAttributes(attrs...)
	}
	if t.duration.Enabled(ctx) || t.pipelines.Enabled(ctx) || t.commands.Enabled(ctx) {
		ps.metrics = true
		ps.start = time.Now()
	}
	return ctx, ps
}

// pipelineEnd is how a pipeline ended, for its telemetry.
type pipelineEnd struct {
	addr      string
	cmds      Commands
	received  int    // replies read
	errs      int    // error replies among them
	firstErr  string // the first error reply's prefix (ERR, WRONGTYPE, ...), "" when none
	err       error  // the pipeline's failure after dispatch, nil when every reply arrived
	errStatus string // the outcome err means (pipelineTimeout, ...), "" when err is nil
}

// active reports whether the pipeline has a span or metrics to record:
// when not, its end is not even described.
func (ps pipelineSpan) active() bool { return ps.span != nil || ps.metrics }

// end records the pipeline's metrics and ends its span (see active).
func (t *telemetry) end(ctx context.Context, ps pipelineSpan, e pipelineEnd) {
	outcome, errType := pipelineOK, ""
	switch {
	case e.err != nil:
		outcome, errType = e.errStatus, e.errStatus
	case e.errs > 0:
		outcome, errType = pipelineError, e.firstErr
	}
	var elapsed float64
	if ps.metrics {
		elapsed = time.Since(ps.start).Seconds()
	}
	if ps.span != nil {
		if errType != "" {
			msg := errType
			if e.err != nil {
				msg = e.err.Error()
			}
			ps.span.SetStatus(codes.Error, msg)
			ps.span.SetAttributes(attribute.String("error.type", errType))
		}
		if e.firstErr != "" {
			ps.span.SetAttributes(attribute.String("db.response.status_code", e.firstErr))
		}
		ps.span.End()
	}
	if !ps.metrics {
		return
	}
	t.duration.Record(ctx, elapsed, metric.WithAttributes(operationAttrs(e.addr, e.cmds, errType, e.firstErr)...))
	t.pipelines.Add(ctx, 1, metric.WithAttributes(attribute.String("db.system.name", "redis"), attribute.String("outcome", outcome)))
	t.addCommands(ctx, commandOK, int64(e.received-e.errs))
	t.addCommands(ctx, commandError, int64(e.errs))
	t.addCommands(ctx, commandUnknown, int64(len(e.cmds)-e.received))
}

// addCommands adds n commands of an outcome (none when n is 0).
func (t *telemetry) addCommands(ctx context.Context, outcome string, n int64) {
	if n > 0 {
		t.commands.Add(ctx, n, metric.WithAttributes(attribute.String("db.system.name", "redis"), attribute.String("outcome", outcome)))
	}
}

// operationAttrs are the attributes of a pipeline's duration point (the
// DB conventions' for db.client.operation.duration).
func operationAttrs(addr string, cmds Commands, errType, status string) []attribute.KeyValue {
	host, port := splitAddr(addr)
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attribute.String("db.system.name", "redis"),
		attribute.String("db.operation.name", operationName(cmds)), attribute.String("server.address", host))
	if port > 0 {
		attrs = append(attrs, attribute.Int("server.port", port))
	}
	if errType != "" {
		attrs = append(attrs, attribute.String("error.type", errType))
	}
	if status != "" {
		attrs = append(attrs, attribute.String("db.response.status_code", status))
	}
	return attrs
}

// failureOutcome names how a pipeline that failed after dispatch ended.
func failureOutcome(ctx context.Context, err error) string {
	if ended(ctx, err) {
		if errors.Is(ctx.Err(), context.Canceled) {
			return pipelineCancelled
		}
		return pipelineTimeout
	}
	var le *resp.LimitError
	if errors.As(err, &le) {
		return pipelineLimit
	}
	return pipelineLost
}

// operationName is db.operation.name for cmds: the command's name for
// one command; MULTI for a transaction (MULTI first, EXEC last); PIPELINE
// for any other batch — the Redis terms the conventions allow in place of
// BATCH. A name is upper-cased and, to bound the metrics' cardinality,
// _OTHER unless it looks like a command name (ASCII letters, digits, -
// and _, at most 32 bytes).
func operationName(cmds Commands) string {
	switch {
	case len(cmds) == 1:
		return commandName(cmds[0])
	case len(cmds) >= 2 && commandName(cmds[0]) == "MULTI" && commandName(cmds[len(cmds)-1]) == "EXEC":
		return "MULTI"
	}
	return "PIPELINE"
}

// commandName is a command's name for telemetry (see operationName).
func commandName(cmd [][]byte) string {
	if len(cmd) == 0 || len(cmd[0]) == 0 || len(cmd[0]) > 32 {
		return "_OTHER"
	}
	b := make([]byte, len(cmd[0]))
	for i, c := range cmd[0] {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b[i] = c
		default:
			return "_OTHER"
		}
	}
	return string(b)
}

// errorPrefix is an error reply's prefix, its first word (ERR, WRONGTYPE,
// MOVED, ...): the conventions' db.response.status_code for Redis.
func errorPrefix(v *resp.Value) string {
	text := v.ErrorText()
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' {
			text = text[:i]
			break
		}
	}
	if len(text) > 32 {
		return "_OTHER"
	}
	return text
}

// errorStats are the count of error replies among replies and the first
// one's prefix.
func errorStats(replies []resp.Value) (n int, first string) {
	for i := range replies {
		if replies[i].IsError() {
			if n == 0 {
				first = errorPrefix(&replies[i])
			}
			n++
		}
	}
	return n, first
}

// splitAddr splits a target's host:port; port is 0 when addr has none.
func splitAddr(addr string) (host string, port int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}
