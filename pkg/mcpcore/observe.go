package mcpcore

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
)

// The names of the OpenTelemetry semantic conventions for MCP
// (semantic-conventions-genai v0.1.0, docs/gen-ai/mcp.md, status
// Development) and of mcpkit's own instruments; docs/observability.md
// lists them.
const (
	instrumentationName = "github.com/mcpkit/mcpkit/pkg/mcpcore"

	attrMethod          = attribute.Key("mcp.method.name")
	attrToolName        = attribute.Key("gen_ai.tool.name")
	attrPromptName      = attribute.Key("gen_ai.prompt.name")
	attrOperationName   = attribute.Key("gen_ai.operation.name")
	attrResourceURI     = attribute.Key("mcp.resource.uri")
	attrSessionID       = attribute.Key("mcp.session.id")
	attrProtocolVersion = attribute.Key("mcp.protocol.version")
	attrErrorType       = attribute.Key("error.type")
	attrStatusCode      = attribute.Key("rpc.response.status_code")
	attrTransport       = attribute.Key("network.transport")
	attrProtocolName    = attribute.Key("network.protocol.name")
	attrNetProtoVersion = attribute.Key("network.protocol.version")
	attrRequestID       = attribute.Key("jsonrpc.request.id")
	attrClientAddress   = attribute.Key("client.address")
	attrClientPort      = attribute.Key("client.port")
	attrErrorKind       = attribute.Key("mcpkit.error.kind") // the ToolErrorReply kind of a failed call
	attrReason          = attribute.Key("reason")
	attrLimit           = attribute.Key("limit") // the limit that refused a request (mcpkit.server.rejected_calls)

	// errorTypeTool is error.type of a call answered with isError (the
	// conventions' value); the host's kind is on the span.
	errorTypeTool = "tool_error"
)

// durationBuckets are the explicit bucket boundaries the conventions
// advise for mcp.server.operation.duration and mcp.server.session.duration.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}

// observer records the server's telemetry: a SERVER span per MCP request
// when tracing is on, the operation and session durations and, read only
// when exported, the host's counters. A server built without providers
// has none (Server.obs is nil) and records nothing.
type observer struct {
	tracer    trace.Tracer // nil without tracing
	operation metric.Float64Histogram
	session   metric.Float64Histogram // nil without metrics, like operation
	transport attribute.KeyValue      // network.transport: pipe (stdio) or tcp (HTTP)
	http      bool
	reg       metric.Registration
	shapes    sync.Map // shapeKey → *callShape
}

// newObserver builds the server's observer from opts' providers, or
// returns nil when both are nil.
func (s *Server) newObserver(opts Options) (*observer, error) {
	if opts.TracerProvider == nil && opts.MeterProvider == nil {
		return nil, nil
	}
	o := &observer{transport: attrTransport.String("pipe")}
	if opts.Transport == "http" {
		o.transport, o.http = attrTransport.String("tcp"), true
	}
	if opts.TracerProvider != nil {
		o.tracer = opts.TracerProvider.Tracer(instrumentationName, trace.WithInstrumentationVersion(opts.Version))
	}
	if opts.MeterProvider != nil {
		if err := o.meters(s, opts.MeterProvider.Meter(instrumentationName, metric.WithInstrumentationVersion(opts.Version))); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// meters creates the instruments: the two histograms the conventions
// name, and mcpkit's counters, observed from the host's own (callStats,
// the session table) when a reader collects, so that a call costs them
// nothing.
func (o *observer) meters(s *Server, m metric.Meter) (err error) {
	if o.operation, err = m.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return err
	}
	if o.session, err = m.Float64Histogram("mcp.server.session.duration", metric.WithUnit("s"),
		metric.WithDescription("The duration of the MCP session as observed on the MCP server."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return err
	}
	sessions, err := m.Int64ObservableUpDownCounter("mcpkit.server.active_sessions", metric.WithUnit("{session}"),
		metric.WithDescription("Client sessions open now."))
	if err != nil {
		return err
	}
	inflight, err := m.Int64ObservableUpDownCounter("mcpkit.server.inflight_calls", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls whose handler is running now."))
	if err != nil {
		return err
	}
	rejected, err := m.Int64ObservableCounter("mcpkit.server.rejected_calls", metric.WithUnit("{call}"),
		metric.WithDescription("Requests and calls refused or cut short, by reason (limit, timeout, auth) and the limit that refused them."))
	if err != nil {
		return err
	}
	paged, err := m.Int64ObservableCounter("mcpkit.server.paged_results", metric.WithUnit("{result}"),
		metric.WithDescription("Tool results too large to answer inline, retained for the read tool."))
	if err != nil {
		return err
	}
	pagedBytes, err := m.Int64ObservableCounter("mcpkit.server.paged_result_bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes of the results retained for the read tool."))
	if err != nil {
		return err
	}
	limit := metric.WithAttributes(attrReason.String(reasonLimit), attrLimit.String("concurrent_tool_calls"))
	timeout := metric.WithAttributes(attrReason.String(reasonTimeout), attrLimit.String("tool_timeout"))
	refusedOpts := refusalOptions()
	o.reg, err = m.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		ob.ObserveInt64(sessions, int64(s.sessions.count()))
		ob.ObserveInt64(inflight, s.calls.inFlight.Load())
		ob.ObserveInt64(rejected, s.calls.rejected.Load(), limit)
		ob.ObserveInt64(rejected, s.calls.timedOut.Load(), timeout)
		for i, opt := range refusedOpts {
			if n := s.calls.refused[i].Load(); n > 0 || i < len(transportRefusals) {
				ob.ObserveInt64(rejected, n, opt)
			}
		}
		ob.ObserveInt64(paged, s.calls.paged.Load())
		ob.ObserveInt64(pagedBytes, s.calls.pagedBytes.Load())
		return nil
	}, sessions, inflight, rejected, paged, pagedBytes)
	return err
}

// close unregisters the callback: a closed server is no longer observed.
func (o *observer) close() {
	if o != nil && o.reg != nil {
		_ = o.reg.Unregister()
	}
}

// The reasons of mcpkit.server.rejected_calls.
const (
	reasonLimit   = "limit"   // a limit refused the request or call
	reasonTimeout = "timeout" // a time limit ran out
	reasonAuth    = "auth"    // the request's credentials were refused
)

// refusal is one series of mcpkit.server.rejected_calls that a transport
// counts: its reason and the limit that refused (none for auth).
type refusal struct{ reason, limit string }

// transportRefusals are the refusals the transports count through
// [Server.CountRefused]; the host counts its own two (concurrent_tool_calls
// and tool_timeout) in callStats. docs/observability.md lists them all.
var transportRefusals = [...]refusal{
	{reasonLimit, "frame_bytes"},            // a message over frame_bytes: HTTP 413, or a stdio line answered with an error
	{reasonLimit, "inflight_request_bytes"}, // HTTP 503: request bodies in flight over the budget
	{reasonLimit, "http_sessions"},          // HTTP 503: a legacy session beyond the cap
	{reasonTimeout, "body_timeout"},         // HTTP 408: a body not received in time
	{reasonAuth, ""},                        // HTTP 401/403: a bearer token refused, or another principal's session
}

// refusalOptions are the record options of transportRefusals' series, in
// their order, then the one of an unknown refusal (reason _OTHER).
func refusalOptions() []metric.ObserveOption {
	opts := make([]metric.ObserveOption, 0, len(transportRefusals)+1)
	for _, r := range transportRefusals {
		attrs := []attribute.KeyValue{attrReason.String(r.reason)}
		if r.limit != "" {
			attrs = append(attrs, attrLimit.String(r.limit))
		}
		opts = append(opts, metric.WithAttributes(attrs...))
	}
	return append(opts, metric.WithAttributes(attrReason.String("_OTHER")))
}

// CountRefused counts a request a transport refused, in
// mcpkit.server.rejected_calls: reason is "limit", "timeout" or "auth",
// and limit names the limit that refused it ("frame_bytes",
// "inflight_request_bytes", "http_sessions", "body_timeout"; "" for auth).
// The stdio and HTTP transports call it through their Refused hooks, once
// per refusal; a pair it does not know is counted with reason _OTHER, so
// that no refusal goes uncounted.
func (s *Server) CountRefused(reason, limit string) {
	i := slices.Index(transportRefusals[:], refusal{reason, limit})
	if i < 0 {
		i = len(transportRefusals)
	}
	s.calls.refused[i].Add(1)
}

// observe is the receiving middleware that records each request: its
// SERVER span, started under the caller's trace context and carried by
// the context every handler receives, and its duration. It is the
// outermost, so that both cover the host's encoding of the result.
func (s *Server) observe(next mcp.MethodHandler) mcp.MethodHandler {
	o := s.obs
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		target := s.observedTarget(method, req)
		if !knownMethod(method) {
			method = "_OTHER" // a client's made-up method must not become a span name or series
		}
		version := protocolVersion(req)
		var hdr http.Header // what the transport tells (see wire.HeaderRequestID)
		if ex := req.GetExtra(); ex != nil {
			hdr = ex.Header
		}
		httpVersion := ""
		if o.http {
			httpVersion = headerValue(hdr, wire.HeaderHTTPVersion)
		}
		shape := o.shape(shapeKey{method, target.Key, target.Value.AsString(), version, httpVersion})
		var span trace.Span
		if o.tracer != nil {
			ctx, span = o.start(ctx, shape, req, hdr)
		}
		res, err := next(ctx, method, req)
		errType, code, message := classify(res, err)
		if span != nil {
			o.end(span, errType, code, message, res)
		}
		if o.operation != nil {
			o.operation.Record(ctx, time.Since(start).Seconds(), shape.point(errType)...)
		}
		return res, err
	}
}

// headerValue is h's first value for key, a canonical header name, or "".
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Observed reports whether the server records telemetry (the HTTP
// transport then tells it what the SDK does not: see
// httpserve.Options.RequestInfo).
func (s *Server) Observed() bool { return s.obs != nil }

// requestIDKey is the context key of a direct call's JSON-RPC id, which
// the SDK's path gives the middleware in RequestExtra (see tagRequest).
type requestIDKey struct{}

// withRequestID puts a direct call's id in its context, when traced.
func (o *observer) withRequestID(ctx context.Context, id jsonrpc.ID) context.Context {
	if o == nil || o.tracer == nil {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// tagRequest gives a request the SDK will answer, read by Server.Run's
// connection (stdio), its id where observe finds it: the SDK passes
// RequestExtra on to the middleware, and nothing else of the message.
// Only when traced: the id is a span attribute.
func (o *observer) tagRequest(req *jsonrpc.Request) {
	if o == nil || o.tracer == nil || req.Extra != nil {
		return
	}
	if id, ok := wire.IDString(req.ID); ok {
		req.Extra = &mcp.RequestExtra{Header: http.Header{wire.HeaderRequestID: {id}}}
	}
}

// knownMethod reports whether method is one MCP defines (those the SDK
// dispatches: requests and notifications of the specification).
func knownMethod(method string) bool {
	switch method {
	case "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/templates/list",
		"resources/read", "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get",
		"completion/complete", "logging/setLevel", "server/discover", "subscriptions/listen":
		return true
	}
	return strings.HasPrefix(method, "notifications/") && len(method) < 64
}

// shapeKey is what the span and the points of a request are built from:
// its method, its target (a tool's or a prompt's name, when the server
// has it), its protocol version and, over HTTP, the HTTP version. All are
// bounded: a few dozen distinct keys in a server's life.
type shapeKey struct {
	method      string
	targetKey   attribute.Key // attrToolName, attrPromptName or ""
	target      string
	version     string
	httpVersion string
}

// callShape is what every request of one shapeKey starts its span with
// (name, kind, attributes) and records its duration with, built once, so
// that a call builds, sorts and hashes none of it: one map lookup.
type callShape struct {
	name     string
	spanOpts []trace.SpanStartOption
	attrs    []attribute.KeyValue  // the point's, without error.type
	ok       []metric.RecordOption // the point of a request that succeeded (a slice: Record's variadic argument, not allocated per call)
	failed   sync.Map              // error.type → []metric.RecordOption
}

// shape returns the callShape of key, building it the first time.
func (o *observer) shape(key shapeKey) *callShape {
	if v, ok := o.shapes.Load(key); ok {
		return v.(*callShape)
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attrMethod.String(key.method), o.transport)
	name := key.method
	if key.targetKey != "" {
		name += " " + key.target
		attrs = append(attrs, key.targetKey.String(key.target))
	}
	if key.method == "tools/call" {
		attrs = append(attrs, attrOperationName.String("execute_tool"))
	}
	if key.version != "" {
		attrs = append(attrs, attrProtocolVersion.String(key.version))
	}
	if o.http {
		attrs = append(attrs, attrProtocolName.String("http"))
		if key.httpVersion != "" {
			attrs = append(attrs, attrNetProtoVersion.String(key.httpVersion))
		}
	}
	shape := &callShape{name: name, attrs: attrs,
		spanOpts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)},
		ok:       []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}}
	v, _ := o.shapes.LoadOrStore(key, shape)
	return v.(*callShape)
}

// point returns the record option of a request that ended with errType
// ("" when it succeeded): the shape's attributes with error.type and, for
// a JSON-RPC error, rpc.response.status_code, built once per error type.
func (c *callShape) point(errType string) []metric.RecordOption {
	if errType == "" {
		return c.ok
	}
	if opt, ok := c.failed.Load(errType); ok {
		return opt.([]metric.RecordOption)
	}
	attrs := append(slices.Clip(c.attrs), attrErrorType.String(errType))
	if _, err := strconv.Atoi(errType); err == nil { // a JSON-RPC error's code
		attrs = append(attrs, attrStatusCode.String(errType))
	}
	opt, _ := c.failed.LoadOrStore(errType, []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))})
	return opt.([]metric.RecordOption)
}

// observedTarget is the request's low-cardinality target, a tool's or a
// prompt's name, when the server has it: a name a client made up must not
// become a metric series of its own.
func (s *Server) observedTarget(method string, req mcp.Request) attribute.KeyValue {
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		if p != nil && s.ownerOf(s.tools, p.Name) {
			return attrToolName.String(p.Name)
		}
	case *mcp.GetPromptParams:
		if p != nil && s.ownerOf(s.prompts, p.Name) {
			return attrPromptName.String(p.Name)
		}
	}
	return attribute.KeyValue{}
}

// ownerOf reports whether names (s.tools or s.prompts) has name.
func (s *Server) ownerOf(names map[string]string, name string) bool {
	s.regMu.RLock()
	defer s.regMu.RUnlock()
	_, ok := names[name]
	return ok
}

// propagator reads the W3C keys the MCP convention carries in _meta (and
// HTTP carries in headers): trace context and baggage, whatever global
// propagator the process set.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// start starts the request's SERVER span, named "{mcp.method.name}
// {target}", as the conventions say. Its parent is the trace context of
// the request's params._meta (traceparent, tracestate, baggage), and the
// ambient context (over HTTP the traceparent header of the HTTP request
// that brought it, else a span already in ctx) is a link; a request
// without a valid traceparent in _meta has the ambient context as its
// parent (semantic-conventions-genai v0.1.0, "Context propagation").
func (o *observer) start(ctx context.Context, shape *callShape, req mcp.Request, hdr http.Header) (context.Context, trace.Span) {
	var fromHeader context.Context // the HTTP request's trace context
	if o.http && hdr["Traceparent"] != nil {
		fromHeader = propagator.Extract(ctx, propagation.HeaderCarrier(hdr))
	}
	var link trace.SpanContext
	if meta := paramsMeta(req); meta != nil && meta["traceparent"] != nil {
		if parent := propagator.Extract(ctx, metaCarrier(meta)); trace.SpanContextFromContext(parent).IsValid() {
			link = trace.SpanContextFromContext(ctx)
			if fromHeader != nil {
				link = trace.SpanContextFromContext(fromHeader)
			}
			ctx, fromHeader = parent, nil
		}
	}
	if fromHeader != nil {
		ctx = fromHeader
	}
	var buf [6]attribute.KeyValue
	extra := o.requestAttrs(buf[:0], ctx, req, hdr)
	var span trace.Span
	if link.IsValid() {
		ctx, span = o.tracer.Start(ctx, shape.name, append(slices.Clip(shape.spanOpts), trace.WithLinks(trace.Link{SpanContext: link}))...)
	} else {
		ctx, span = o.tracer.Start(ctx, shape.name, shape.spanOpts...)
	}
	if len(extra) > 0 {
		// After the start rather than as an option: an option's
		// attributes are copied once more. The sampler sees the shape's.
		span.SetAttributes(extra...)
	}
	return ctx, span
}

// requestAttrs are the attributes of one request's span beyond its
// shape's: the resource's URI, the session, the JSON-RPC id, over HTTP
// the client's address and the HTTP version.
func (o *observer) requestAttrs(extra []attribute.KeyValue, ctx context.Context, req mcp.Request, hdr http.Header) []attribute.KeyValue {
	switch p := req.GetParams().(type) {
	case *mcp.ReadResourceParams:
		if p != nil {
			extra = append(extra, attrResourceURI.String(p.URI))
		}
	case *mcp.SubscribeParams:
		if p != nil {
			extra = append(extra, attrResourceURI.String(p.URI))
		}
	case *mcp.UnsubscribeParams:
		if p != nil {
			extra = append(extra, attrResourceURI.String(p.URI))
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && ss.ID() != "" {
		extra = append(extra, attrSessionID.String(ss.ID()))
	}
	if s := headerValue(hdr, wire.HeaderRequestID); s != "" {
		extra = append(extra, attrRequestID.String(s))
	} else if id, ok := ctx.Value(requestIDKey{}).(jsonrpc.ID); ok {
		if s, ok := wire.IDString(id); ok {
			extra = append(extra, attrRequestID.String(s))
		}
	}
	if o.http {
		if host, port, err := net.SplitHostPort(headerValue(hdr, wire.HeaderClientAddr)); err == nil {
			extra = append(extra, attrClientAddress.String(host))
			if n, err := strconv.Atoi(port); err == nil {
				extra = append(extra, attrClientPort.Int(n))
			}
		}
	}
	return extra
}

// end records the request's outcome on its span and ends it: error.type
// and an error status on failure (with the host's kind for a tool error),
// the JSON-RPC code when there is one.
func (o *observer) end(span trace.Span, errType, code, message string, res mcp.Result) {
	if errType != "" {
		span.SetAttributes(attrErrorType.String(errType))
		if code != "" {
			span.SetAttributes(attrStatusCode.String(code))
		}
		if errType == errorTypeTool {
			if kind := toolErrorKind(res); kind != "" {
				span.SetAttributes(attrErrorKind.String(kind))
				message = kind
			}
		}
		span.SetStatus(codes.Error, message)
	}
	span.End()
}

// classify returns error.type of a request's outcome ("" when it
// succeeded): the JSON-RPC error code, or tool_error for a tool result
// with isError; and the code and message of a JSON-RPC error.
func classify(res mcp.Result, err error) (errType, code, message string) {
	if err != nil {
		if je, ok := err.(*jsonrpc.Error); ok {
			c := strconv.FormatInt(je.Code, 10)
			return c, c, je.Message
		}
		return "_OTHER", "", err.Error()
	}
	if r := toolResult(res); r != nil && r.IsError {
		return errorTypeTool, "", ""
	}
	return "", "", ""
}

// toolResult returns a tools/call result, as a handler returned it or as
// the host encodes it, or nil.
func toolResult(res mcp.Result) *mcp.CallToolResult {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r
	case *encodedResult:
		return r.CallToolResult
	}
	return nil
}

// toolErrorKind reads the kind of a failed call's ToolErrorReply.
func toolErrorKind(res mcp.Result) string {
	r := toolResult(res)
	if r == nil {
		return ""
	}
	raw, ok := r.StructuredContent.(json.RawMessage)
	if !ok {
		return ""
	}
	var reply struct {
		Error struct {
			Kind string `json:"kind"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &reply) != nil {
		return ""
	}
	return reply.Error.Kind
}

// protocolVersion is the MCP version of a request: the one its _meta
// names (2026-07-28, per request) or its session's; a version the SDK
// does not support is not recorded (a client's made-up value must not
// become a metric series).
func protocolVersion(req mcp.Request) string {
	if meta := paramsMeta(req); meta != nil {
		if v, ok := meta[mcp.MetaKeyProtocolVersion].(string); ok {
			if slices.Contains(supportedVersions(), v) {
				return v
			}
			return ""
		}
	}
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
		// Read before the session knows it: the version asked for, when
		// the server supports it (the one it then answers with).
		if slices.Contains(supportedVersions(), p.ProtocolVersion) {
			return p.ProtocolVersion
		}
		return ""
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if init := ss.InitializeParams(); init != nil {
			return init.ProtocolVersion
		}
	}
	return ""
}

// supportedVersions are the protocol versions the SDK serves.
var supportedVersions = sync.OnceValue(mcp.SupportedProtocolVersions)

// paramsMeta returns the request's params._meta, or nil (also for the
// typed nil params of a request without them).
func paramsMeta(req mcp.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}

// metaCarrier reads the W3C keys of params._meta (unprefixed, as SEP-414
// and the conventions say) for a propagator.
type metaCarrier map[string]any

func (c metaCarrier) Get(key string) string {
	v, _ := c[key].(string)
	return v
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// recordSession records a session's duration when it ends.
func (o *observer) recordSession(sess *Session) {
	if o == nil || o.session == nil {
		return
	}
	attrs := []attribute.KeyValue{o.transport}
	if init := sess.ss.InitializeParams(); init != nil && init.ProtocolVersion != "" {
		attrs = append(attrs, attrProtocolVersion.String(init.ProtocolVersion))
	}
	o.session.Record(context.Background(), time.Since(sess.start).Seconds(), metric.WithAttributes(attrs...))
}
