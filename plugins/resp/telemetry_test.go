package resp

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/oteltest"
	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// TestExecuteTelemetry: each execute sends one pipeline, which is a
// CLIENT span (named by the DB conventions, child of the request's span)
// with its Redis attributes, a db.client.operation.duration point and
// counts of pipelines and commands by outcome, against a real
// redis-server: a single command, a pipeline with an error reply, a
// MULTI/EXEC transaction.
func TestExecuteTelemetry(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	host, portText, _ := net.SplitHostPort(s.Addr)
	port, _ := strconv.Atoi(portText)
	t.Setenv(EnvAuth, "")
	var reqs oteltest.Requests
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"resp": {Config: json.RawMessage(targetAt(s, ""))}}
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Config: cfg, Middleware: []mcp.Middleware{reqs.Middleware},
		Instances: []mcpcore.Instance{{Name: "resp", Plugin: new(Plugin), Limits: Limits()}}})
	if err != nil {
		t.Fatal(err)
	}
	redis := attribute.String("db.system.name", "redis")
	server := attribute.Int("server.port", port)
	for _, c := range []struct {
		name      string
		cmds      [][]any
		op        string
		batch     int // 0: not a batch
		errType   string
		ok, errs  int64
		isError   bool
		spanError bool
	}{
		{name: "one command", cmds: [][]any{{"SET", "k", "v"}}, op: "SET", ok: 1},
		{name: "pipeline with an error reply", cmds: [][]any{{"set", "k", "v"}, {"LPUSH", "k", "x"}, {"GET", "k"}},
			op: "PIPELINE", batch: 3, errType: "WRONGTYPE", ok: 2, errs: 1, isError: true, spanError: true},
		{name: "transaction", cmds: [][]any{{"MULTI"}, {"INCR", "n"}, {"EXEC"}}, op: "MULTI", batch: 3, ok: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := oteltest.Collect(t)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "resp_execute", Arguments: map[string]any{"commands": c.cmds}})
			if err != nil || res.IsError != c.isError {
				t.Fatalf("execute: %v, IsError %v", err, res != nil && res.IsError)
			}
			parent := reqs.Last(t)
			kids := oteltest.Children(parent)
			if len(kids) != 1 {
				t.Fatalf("%d child spans of the request, want 1 (the pipeline)", len(kids))
			}
			sp := kids[0]
			if sp.Name() != c.op+" "+s.Addr || sp.SpanKind() != trace.SpanKindClient {
				t.Errorf("span %q kind %v, want %q CLIENT", sp.Name(), sp.SpanKind(), c.op+" "+s.Addr)
			}
			want := map[string]attribute.Value{"db.system.name": attribute.StringValue("redis"), "db.operation.name": attribute.StringValue(c.op),
				"server.address": attribute.StringValue(host), "server.port": attribute.IntValue(port)}
			if c.batch > 0 {
				want["db.operation.batch.size"] = attribute.IntValue(c.batch)
			}
			if c.errType != "" {
				want["error.type"] = attribute.StringValue(c.errType)
				want["db.response.status_code"] = attribute.StringValue(c.errType)
			}
			for k, v := range want {
				if got, ok := oteltest.Attr(sp, k); !ok || got != v {
					t.Errorf("span attribute %s = %v (%v), want %v", k, got.Emit(), ok, v.Emit())
				}
			}
			if _, ok := oteltest.Attr(sp, "db.operation.batch.size"); ok && c.batch == 0 {
				t.Error("db.operation.batch.size set on a single command")
			}
			if (sp.Status().Code == codes.Error) != c.spanError {
				t.Errorf("span status %v, want error %v", sp.Status(), c.spanError)
			}

			after := oteltest.Collect(t)
			delta := func(name string, kv ...attribute.KeyValue) int64 {
				return oteltest.Count(after, ScopeName, name, kv...) - oteltest.Count(before, ScopeName, name, kv...)
			}
			durAttrs := []attribute.KeyValue{redis, server, attribute.String("db.operation.name", c.op)}
			if c.errType != "" {
				durAttrs = append(durAttrs, attribute.String("error.type", c.errType))
			}
			if n := delta(MetricOperationDuration, durAttrs...); n != 1 {
				t.Errorf("%s points with %v: +%d, want +1", MetricOperationDuration, durAttrs, n)
			}
			outcome := pipelineOK
			if c.errs > 0 {
				outcome = pipelineError
			}
			if n := delta(MetricPipelines, redis, attribute.String("outcome", outcome)); n != 1 {
				t.Errorf("%s{outcome=%s}: +%d, want +1", MetricPipelines, outcome, n)
			}
			if n := delta(MetricCommands, redis, attribute.String("outcome", commandOK)); n != c.ok {
				t.Errorf("%s{outcome=ok}: +%d, want +%d", MetricCommands, n, c.ok)
			}
			if n := delta(MetricCommands, redis, attribute.String("outcome", commandError)); n != c.errs {
				t.Errorf("%s{outcome=error}: +%d, want +%d", MetricCommands, n, c.errs)
			}
		})
	}
}

// TestExecuteTelemetryWithoutSpan: a call whose context carries no span
// (the stdio fast path's, or no tracing) starts none of its own but
// still counts its pipeline.
func TestExecuteTelemetryWithoutSpan(t *testing.T) {
	oteltest.Install()
	s := redistest.Start(t, redistest.Options{})
	_, portText, _ := net.SplitHostPort(s.Addr)
	port, _ := strconv.Atoi(portText)
	e := connect(t, targetAt(s, ""), "")
	before := oteltest.Collect(t)
	e.exec(cmd("PING"))
	after := oteltest.Collect(t)
	kv := []attribute.KeyValue{attribute.Int("server.port", port), attribute.String("db.operation.name", "PING")}
	if n := oteltest.Count(after, ScopeName, MetricOperationDuration, kv...) - oteltest.Count(before, ScopeName, MetricOperationDuration, kv...); n != 1 {
		t.Errorf("%s points: +%d, want +1", MetricOperationDuration, n)
	}
}

// TestExecuteTelemetryTimeout: a pipeline cut by the call's deadline
// counts as timeout, its commands as unknown, and its span is an error
// of type timeout.
func TestExecuteTelemetryTimeout(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	t.Setenv(EnvAuth, "")
	var reqs oteltest.Requests
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"resp": {Config: json.RawMessage(targetAt(s, ""))}}
	cfg.Limits.ToolTimeout = mcpcore.Duration(300 * time.Millisecond)
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Config: cfg, Middleware: []mcp.Middleware{reqs.Middleware},
		Instances: []mcpcore.Instance{{Name: "resp", Plugin: new(Plugin), Limits: Limits()}}})
	if err != nil {
		t.Fatal(err)
	}
	redis := attribute.String("db.system.name", "redis")
	before := oteltest.Collect(t)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "resp_execute",
		Arguments: map[string]any{"commands": [][]any{{"BLPOP", "nothing", "5"}, {"PING"}}}})
	if err != nil || !res.IsError {
		t.Fatalf("a blocked pipeline past the deadline: %v, %+v", err, res)
	}
	after := oteltest.Collect(t)
	if n := oteltest.Count(after, ScopeName, MetricPipelines, redis, attribute.String("outcome", pipelineTimeout)) -
		oteltest.Count(before, ScopeName, MetricPipelines, redis, attribute.String("outcome", pipelineTimeout)); n != 1 {
		t.Errorf("%s{outcome=timeout}: +%d, want +1", MetricPipelines, n)
	}
	if n := oteltest.Count(after, ScopeName, MetricCommands, redis, attribute.String("outcome", commandUnknown)) -
		oteltest.Count(before, ScopeName, MetricCommands, redis, attribute.String("outcome", commandUnknown)); n != 2 {
		t.Errorf("%s{outcome=unknown}: +%d, want +2", MetricCommands, n)
	}
	kids := oteltest.Children(reqs.Last(t))
	if len(kids) != 1 {
		t.Fatalf("%d child spans, want 1", len(kids))
	}
	if v, _ := oteltest.Attr(kids[0], "error.type"); v.AsString() != pipelineTimeout || kids[0].Status().Code != codes.Error {
		t.Errorf("span error.type %q status %v, want timeout, error", v.AsString(), kids[0].Status())
	}
}

// TestOperationName: the conventions' db.operation.name of a batch.
func TestOperationName(t *testing.T) {
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, x := range s {
			out[i] = []byte(x)
		}
		return out
	}
	for _, c := range []struct {
		cmds Commands
		want string
	}{
		{Commands{b("get", "k")}, "GET"},
		{Commands{b("CLIENT", "INFO")}, "CLIENT"},
		{Commands{b("GET", "a"), b("GET", "b")}, "PIPELINE"},
		{Commands{b("multi"), b("SET", "a", "1"), b("exec")}, "MULTI"},
		{Commands{b("MULTI"), b("SET", "a", "1")}, "PIPELINE"},
		{Commands{b("GET\x00x")}, "_OTHER"},
		{Commands{b("AVERYLONGCOMMANDNAMETHATISNOTREAL1")}, "_OTHER"},
	} {
		if got := operationName(c.cmds); got != c.want {
			t.Errorf("operationName(%q) = %q, want %q", c.cmds, got, c.want)
		}
	}
}

// TestPipelineTelemetryOff: with nothing configured (the global
// providers' state before the core sets any) and no span in the call's
// context, a pipeline's telemetry allocates nothing and reads no clock.
func TestPipelineTelemetryOff(t *testing.T) {
	off := newTelemetry(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider())
	cmds := Commands{{[]byte("GET"), []byte("k")}}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		_, ps := off.startPipeline(ctx, "127.0.0.1:6379", cmds)
		if ps.active() || !ps.start.IsZero() {
			t.Fatal("telemetry active with nothing configured")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per pipeline with telemetry off, want 0", allocs)
	}
}
