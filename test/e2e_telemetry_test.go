package test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpkit/mcpkit/plugins/diag"
)

// otlpReceiver is an OTLP/HTTP receiver (protobuf) that keeps the spans
// it is sent (but after discard); metrics are accepted and dropped.
type otlpReceiver struct {
	url       string
	mu        sync.Mutex
	spans     []*tracepb.Span
	discarded bool
	exports   atomic.Int64 // trace exports received, decoded or not
}

// discard makes r drop the spans it receives from now on: it reads each
// export's body and answers without decoding it. A benchmark's receiver
// lives in the benchmark's own process, the MCP client's, where decoding
// 512 spans an export (about 9 µs a call) and its garbage would be charged
// to the round trips of the server being measured; a real collector
// decodes in a process of its own. The e2e tests, which keep the spans,
// check what the exports carry.
func (r *otlpReceiver) discard() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.discarded = true
}

// discarding reports whether r drops what it receives.
func (r *otlpReceiver) discarding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.discarded
}

func startOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		r.exports.Add(1)
		if r.discarding() {
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/x-protobuf") // an empty ExportTraceServiceResponse: full success
			return
		}
		body, err := io.ReadAll(req.Body)
		var in coltrace.ExportTraceServiceRequest
		if err != nil || proto.Unmarshal(body, &in) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range in.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.url = "http://" + ln.Addr().String()
	return r
}

// env is the environment that points a process's exporters at r, with
// spans sent 50 ms after they end.
func (r *otlpReceiver) env() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_METRICS_EXPORTER=none", "OTEL_TRACES_SAMPLER=always_on"}
}

// span waits for the span named name in the trace traceID (hex).
func (r *otlpReceiver) span(t testing.TB, name, traceID string) *tracepb.Span {
	t.Helper()
	var found *tracepb.Span
	eventually(t, 10*time.Second, "span "+name+" in trace "+traceID, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.spans {
			if s.Name == name && hex.EncodeToString(s.TraceId) == traceID {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

// attrs returns a span's string and int attributes as strings.
func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		}
	}
	return m
}

// traceparent is a W3C traceparent of a fresh trace and the client's span.
type traceparent struct{ trace, span string }

func newTraceparent(n int) traceparent {
	return traceparent{trace: fmt.Sprintf("%032x", 0x4bf92f3577b34da6+n), span: fmt.Sprintf("%016x", 0x00f067aa0ba902b7+n)}
}

func (tp traceparent) String() string { return "00-" + tp.trace + "-" + tp.span + "-01" }

// callWithMeta calls a tool with _meta.traceparent set.
func callWithMeta(t testing.TB, cs *mcp.ClientSession, tp traceparent, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args,
		Meta: mcp.Meta{"traceparent": tp.String(), "tracestate": "e2e=1"}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// checkServerSpan checks a tools/call span: its name, kind, parent (the
// client's span) and attributes.
func checkServerSpan(t testing.TB, s *tracepb.Span, tp traceparent, tool, transport, era string) {
	t.Helper()
	a := attrs(s)
	if s.Kind != tracepb.Span_SPAN_KIND_SERVER || hex.EncodeToString(s.ParentSpanId) != tp.span || s.TraceState != "e2e=1" {
		t.Errorf("span %q: kind %v, parent %x (want %s), tracestate %q", s.Name, s.Kind, s.ParentSpanId, tp.span, s.TraceState)
	}
	want := map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool",
		"network.transport": transport, "mcp.protocol.version": era}
	if transport == "tcp" {
		want["network.protocol.name"], want["network.protocol.version"], want["client.address"] = "http", "1.1", "127.0.0.1"
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name, k, a[k], v, a)
		}
	}
	// The go-sdk client numbers its requests from 1.
	if id, err := strconv.Atoi(a["jsonrpc.request.id"]); err != nil || id < 1 {
		t.Errorf("span %q: jsonrpc.request.id %q, want the request's id (all: %v)", s.Name, a["jsonrpc.request.id"], a)
	}
	if port, err := strconv.Atoi(a["client.port"]); transport == "tcp" && (err != nil || port <= 0) {
		t.Errorf("span %q: client.port %q", s.Name, a["client.port"])
	}
	if era == legacyEra && transport == "tcp" && a["mcp.session.id"] == "" {
		t.Errorf("span %q: no mcp.session.id in a legacy HTTP session (all: %v)", s.Name, a)
	}
}

// TestTelemetryTracesStdio: over stdio, with OTEL_EXPORTER_OTLP_ENDPOINT
// set, each tools/call is a SERVER span named "tools/call {tool}" whose
// parent is the span the client sent in params._meta.traceparent, with the
// conventions' attributes; a failed call has error.type tool_error, the
// host's kind and an error status; the log lines of a traced call carry
// its trace_id.
func TestTelemetryTracesStdio(t *testing.T) {
	rcv := startOTLPReceiver(t)
	sp := startStdioEnv(t, rcv.env(), "--plugins", "diag", "--log-level", "debug", "--log-format", "json")
	cs := sp.connect(t, legacyEra)
	ok, failed := newTraceparent(1), newTraceparent(2)
	decode[diag.EchoReply](t, callWithMeta(t, cs, ok, "diag_echo", diag.EchoArgs{Message: "traced"}))
	if res := callWithMeta(t, cs, failed, "diag_fail", diag.FailArgs{Kind: "conflict", Message: "on purpose"}); !res.IsError {
		t.Fatal("diag_fail did not fail")
	}
	checkServerSpan(t, rcv.span(t, "tools/call diag_echo", ok.trace), ok, "diag_echo", "pipe", legacyEra)
	s := rcv.span(t, "tools/call diag_fail", failed.trace)
	checkServerSpan(t, s, failed, "diag_fail", "pipe", legacyEra)
	if a := attrs(s); a["error.type"] != "tool_error" || a["mcpkit.error.kind"] != "conflict" || s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed call's span: %v, status %v", a, s.Status)
	}
	if a := attrs(rcv.span(t, "tools/call diag_echo", ok.trace)); a["error.type"] != "" {
		t.Errorf("a successful call has error.type %q", a["error.type"])
	}

	panicked := newTraceparent(3)
	callWithMeta(t, cs, panicked, "diag_fail", diag.FailArgs{Panic: true, Message: "on purpose"})
	s = rcv.span(t, "tools/call diag_fail", panicked.trace)
	eventually(t, 5*time.Second, "the panic's log line with its trace", func() bool {
		for line := range strings.Lines(sp.stderr.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "tool handler panicked" {
				return m["trace_id"] == panicked.trace && m["span_id"] == hex.EncodeToString(s.SpanId)
			}
		}
		return false
	})
}

// TestTelemetryTracesHTTP: over streamable HTTP, in both eras, the span
// of a tools/call has the parent the client sent in _meta; without one,
// the traceparent HTTP header is the parent; with both, _meta's is the
// parent and the header's a link (the conventions' ambient context).
func TestTelemetryTracesHTTP(t *testing.T) {
	rcv := startOTLPReceiver(t)
	hp := startListeningEnv(t, rcv.env(), binary(t), "serve", "--http", "127.0.0.1:0", "--log-format", "json", "--plugins", "diag")
	for i, era := range eras {
		tp := newTraceparent(10 + i)
		cs := hp.connect(t, era, nil)
		decode[diag.EchoReply](t, callWithMeta(t, cs, tp, "diag_echo", diag.EchoArgs{Message: "traced"}))
		checkServerSpan(t, rcv.span(t, "tools/call diag_echo", tp.trace), tp, "diag_echo", "tcp", era)
		if a := attrs(rcv.span(t, "tools/call diag_echo", tp.trace)); a["network.protocol.name"] != "http" {
			t.Errorf("%s: network.protocol.name %q", era, a["network.protocol.name"])
		}

		hdr := newTraceparent(20 + i)
		// The request-info headers a client sends are its own invention: the
		// span has the server's.
		hcs := hp.connect(t, era, &http.Client{Transport: headerTransport{"traceparent": hdr.String(), "tracestate": "e2e=1",
			"Mcpkit-Client-Address": "203.0.113.9:1", "Mcpkit-Jsonrpc-Request-Id": "forged", "Mcpkit-Http-Version": "9"}})
		decode[diag.EchoReply](t, callTool(t, hcs, "diag_echo", diag.EchoArgs{Message: "traced by header"}))
		checkServerSpan(t, rcv.span(t, "tools/call diag_echo", hdr.trace), hdr, "diag_echo", "tcp", era)

		meta, ambient := newTraceparent(30+i), newTraceparent(40+i)
		bcs := hp.connect(t, era, &http.Client{Transport: headerTransport{"traceparent": ambient.String()}})
		decode[diag.EchoReply](t, callWithMeta(t, bcs, meta, "diag_echo", diag.EchoArgs{Message: "traced by both"}))
		s := rcv.span(t, "tools/call diag_echo", meta.trace)
		checkServerSpan(t, s, meta, "diag_echo", "tcp", era)
		if len(s.Links) != 1 || hex.EncodeToString(s.Links[0].TraceId) != ambient.trace || hex.EncodeToString(s.Links[0].SpanId) != ambient.span {
			t.Errorf("%s: links %v, want one to the HTTP request's %s", era, s.Links, ambient)
		}
		for _, s := range rcv.spansOf(ambient.trace) { // the session's initialize may be there: it had no _meta
			if strings.HasPrefix(s.Name, "tools/call") {
				t.Errorf("%s: the call's span is in the HTTP header's trace: the _meta traceparent must be its parent", era)
			}
		}
	}
	// A span without an ambient context has no link.
	if s := rcv.span(t, "tools/call diag_echo", newTraceparent(10).trace); len(s.Links) != 0 {
		t.Errorf("a call with _meta only has links %v", s.Links)
	}
}

// spansOf returns the spans received in the trace traceID (hex).
func (r *otlpReceiver) spansOf(traceID string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

// headerTransport adds headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// scrape reads /metrics with the Prometheus text parser.
func scrape(t testing.TB, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample returns the value of the sample of family name whose labels
// include want (a histogram's count), or -1 when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// TestTelemetryMetricsHTTP: /metrics on the HTTP listener needs the bearer
// token /mcp needs, and counts, after calls that succeed, fail, time out
// and are refused for the concurrency limit: the operation durations by
// tool and error.type, the rejected calls by reason (the refused scrape
// among the auth ones), the sessions and the calls in flight.
func TestTelemetryMetricsHTTP(t *testing.T) {
	const token = "e2e-metrics-token-5b1d"
	tokens := writeConfig(t, token+"\n")
	cfg := writeConfig(t, fmt.Sprintf(`{"http": {"bearer_tokens_file": %q}, "limits": {"concurrent_tool_calls": 1, "tool_timeout": "1s"}}`, tokens))
	hp := startHTTP(t, "--plugins", "diag", "--config", cfg)
	metrics := hp.base + "/metrics"

	resp, err := http.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without the token: HTTP %d, want 401", resp.StatusCode)
	}

	cs := hp.connect(t, legacyEra, &http.Client{Transport: bearer{token: token}})
	slept := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.WithoutCancel(t.Context()), &mcp.CallToolParams{Name: "diag_sleep", Arguments: diag.SleepArgs{Milliseconds: 5000}})
		slept <- res
	}()
	eventually(t, 5*time.Second, "the sleep call in flight", func() bool {
		return sample(scrape(t, metrics, token), "mcpkit_server_inflight_calls", nil) == 1
	})
	if d := toolError(t, callTool(t, cs, "diag_echo", diag.EchoArgs{Message: "refused"})); d.Kind != "limit" {
		t.Fatalf("echo while the only slot is taken: %+v", d)
	}
	if res := <-slept; res == nil || toolError(t, res).Kind != "timeout" {
		t.Fatalf("diag_sleep past tool_timeout: %+v", res)
	}
	eventually(t, 5*time.Second, "the slot freed", func() bool {
		return sample(scrape(t, metrics, token), "mcpkit_server_inflight_calls", nil) == 0
	})
	decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", diag.EchoArgs{Message: "ok"}))
	toolError(t, callTool(t, cs, "diag_fail", diag.FailArgs{Kind: "conflict", Message: "on purpose"}))
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "diag_no_such_tool"}); err == nil {
		t.Fatal("an unknown tool answered")
	}

	fams := scrape(t, metrics, token)
	base := map[string]string{"mcp_method_name": "tools/call", "network_transport": "tcp", "mcp_protocol_version": legacyEra,
		"gen_ai_operation_name": "execute_tool", "network_protocol_name": "http", "network_protocol_version": "1.1"}
	with := func(extra ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	const dur = "mcp_server_operation_duration_seconds"
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{with("gen_ai_tool_name", "diag_echo", "error_type", ""), 1},
		{with("gen_ai_tool_name", "diag_echo", "error_type", "tool_error"), 1},
		{with("gen_ai_tool_name", "diag_sleep", "error_type", "tool_error"), 1},
		{with("gen_ai_tool_name", "diag_fail", "error_type", "tool_error"), 1},
		{with("gen_ai_tool_name", "", "error_type", "-32602", "rpc_response_status_code", "-32602"), 1},
		{with("gen_ai_tool_name", "diag_fail", "error_type", "tool_error", "rpc_response_status_code", ""), 1},
	} {
		if got := sample(fams, dur, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", dur, c.labels, got, c.want)
		}
	}
	for reason, want := range map[[2]string]float64{{"limit", "concurrent_tool_calls"}: 1, {"timeout", "tool_timeout"}: 1, {"auth", ""}: 1} {
		labels := map[string]string{"reason": reason[0]}
		if reason[1] != "" {
			labels["limit"] = reason[1]
		}
		if got := sample(fams, "mcpkit_server_rejected_calls_total", labels); got != want {
			t.Errorf("rejected_calls%v = %v, want %v", labels, got, want)
		}
	}
	if got := sample(fams, "mcpkit_server_active_sessions", nil); got != 1 {
		t.Errorf("active_sessions = %v, want 1", got)
	}
	if f := fams[dur]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("%s is not a histogram: %v", dur, f)
	}
	cs.Close() // the session ends: its duration is recorded
	eventually(t, 5*time.Second, "the session's duration and no session left", func() bool {
		fams := scrape(t, metrics, token)
		return sample(fams, "mcp_server_session_duration_seconds", map[string]string{"network_transport": "tcp", "mcp_protocol_version": legacyEra}) == 1 &&
			sample(fams, "mcpkit_server_active_sessions", nil) == 0
	})
	if strings.Contains(hp.stderr.String(), token) {
		t.Fatal("the bearer token appears in the logs")
	}
}

// TestTelemetryMetricsAddr: --metrics-addr serves /metrics on a listener
// of its own, behind the same bearer token (and no longer on the MCP
// listener); it is refused with stdio, and beyond loopback without
// authentication, before anything is served (exit code 3).
func TestTelemetryMetricsAddr(t *testing.T) {
	const token = "e2e-metrics-addr-token-91c4"
	cfg := writeConfig(t, fmt.Sprintf(`{"http": {"bearer_tokens_file": %q}}`, writeConfig(t, token+"\n")))
	hp := startHTTP(t, "--plugins", "diag", "--config", cfg, "--metrics-addr", "127.0.0.1:0")
	var addr string
	eventually(t, 10*time.Second, "the metrics listener", func() bool {
		for line := range strings.Lines(hp.stderr.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "metrics listening" {
				addr, _ = m["addr"].(string)
			}
		}
		return addr != ""
	})
	cs := hp.connect(t, legacyEra, &http.Client{Transport: bearer{token: token}})
	decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", diag.EchoArgs{Message: "counted"}))
	fams := scrape(t, "http://"+addr+"/metrics", token)
	if got := sample(fams, "mcp_server_operation_duration_seconds", map[string]string{"gen_ai_tool_name": "diag_echo"}); got != 1 {
		t.Errorf("diag_echo's duration count on --metrics-addr: %v, want 1", got)
	}
	for _, c := range []struct {
		url, token string
		want       int
	}{
		{"http://" + addr + "/metrics", "", http.StatusUnauthorized},
		{hp.base + "/metrics", token, http.StatusNotFound},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, c.url, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s (token %v): HTTP %d, want %d", c.url, c.token != "", resp.StatusCode, c.want)
		}
	}

	for _, args := range [][]string{
		{"serve", "--stdio", "--plugins", "diag", "--metrics-addr", "127.0.0.1:0"},
		{"serve", "--http", "127.0.0.1:0", "--plugins", "diag", "--metrics-addr", "0.0.0.0:0"},
	} {
		out, err := exec.Command(binary(t), args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "metrics_addr") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}

// TestTelemetryConsoleStdio: the console exporters write to stderr, never
// to stdout, which over stdio carries JSON-RPC only (startStdio fails the
// test on any other stdout line).
func TestTelemetryConsoleStdio(t *testing.T) {
	sp := startStdioEnv(t, []string{"OTEL_TRACES_EXPORTER=console", "OTEL_METRICS_EXPORTER=console", "OTEL_BSP_SCHEDULE_DELAY=50"},
		"--plugins", "diag")
	cs := sp.connect(t, legacyEra)
	decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", diag.EchoArgs{Message: "to the console"}))
	eventually(t, 10*time.Second, "the span on stderr", func() bool {
		return strings.Contains(sp.stderr.String(), `"Name":"tools/call diag_echo"`)
	})
}
