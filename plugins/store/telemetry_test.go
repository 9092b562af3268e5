package store

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mcpkit/mcpkit/internal/oteltest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TestStoreTelemetry: a write, a search and a failed get each run under
// an INTERNAL span, the child of the request's span, named by the tool
// and collection, with the store's db attributes (error.type the kind of
// a failure), and count as operations by tool and outcome with a
// duration point, on a bbolt file and in memory.
func TestStoreTelemetry(t *testing.T) {
	for _, b := range []struct{ name, path string }{{"bbolt", filepath.Join(t.TempDir(), "store.db")}, {"memory", ""}} {
		t.Run(b.name, func(t *testing.T) {
			var reqs oteltest.Requests
			e := connectTraced(t, Config{Path: b.path}, &reqs)
			backend := attribute.String("mcpkit.docstore.backend", b.name)
			e.ok("create_text_index", `{"collection": "notes", "name": "body", "fields": ["body"]}`)
			for _, c := range []struct {
				tool, args, span, errType string
			}{
				{"write", `{"ops": [{"op": "store", "collection": "notes", "id": "n1", "doc": {"body": "solar panels"}}, {"op": "store", "collection": "notes", "id": "n2", "doc": {"body": "wind"}}]}`, "write", ""},
				{"search", `{"collection": "notes", "text": {"query": "solar"}}`, "search notes", ""},
				{"get", `{"collection": "notes", "id": "missing"}`, "get notes", "not_found"},
			} {
				before := oteltest.Collect(t)
				res := e.call(c.tool, c.args)
				if res.IsError != (c.errType != "") {
					t.Fatalf("%s: %s", c.tool, text(res))
				}
				kids := oteltest.Children(reqs.Last(t))
				if len(kids) != 1 {
					t.Fatalf("%s: %d child spans of the request, want 1", c.tool, len(kids))
				}
				sp := kids[0]
				if sp.Name() != c.span || sp.SpanKind() != trace.SpanKindInternal {
					t.Errorf("%s: span %q kind %v, want %q INTERNAL", c.tool, sp.Name(), sp.SpanKind(), c.span)
				}
				want := map[string]string{"db.system.name": dbSystem, "db.operation.name": c.tool, "mcpkit.docstore.backend": b.name}
				if c.tool != "write" {
					want["db.collection.name"] = "notes"
				}
				if c.errType != "" {
					want["error.type"] = c.errType
				}
				for k, v := range want {
					if got, ok := oteltest.Attr(sp, k); !ok || got.AsString() != v {
						t.Errorf("%s: span attribute %s = %q, want %q", c.tool, k, got.Emit(), v)
					}
				}
				if (sp.Status().Code == codes.Error) != (c.errType != "") {
					t.Errorf("%s: span status %v", c.tool, sp.Status())
				}

				after := oteltest.Collect(t)
				delta := func(name string, kv ...attribute.KeyValue) int64 {
					return oteltest.Count(after, ScopeName, name, kv...) - oteltest.Count(before, ScopeName, name, kv...)
				}
				op := attribute.String("db.operation.name", c.tool)
				outcome := attribute.String("outcome", "ok")
				if c.errType != "" {
					outcome = attribute.String("outcome", "error")
				}
				if n := delta(MetricOperations, op, backend, outcome); n != 1 {
					t.Errorf("%s: %s{%v}: +%d, want +1", c.tool, MetricOperations, outcome.Value.Emit(), n)
				}
				durAttrs := []attribute.KeyValue{op, backend, attribute.String("db.system.name", dbSystem)}
				if c.errType != "" {
					durAttrs = append(durAttrs, attribute.String("error.type", c.errType))
				}
				if n := delta(MetricOperationDuration, durAttrs...); n != 1 {
					t.Errorf("%s: %s points: +%d, want +1", c.tool, MetricOperationDuration, n)
				}
			}
		})
	}
}

// connectTraced is connect with reqs's middleware: each tools/call runs
// under a request span, as the core's tracing gives it.
func connectTraced(t *testing.T, cfg Config, reqs *oteltest.Requests) *env {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpcore.DefaultConfig()
	prefix := ""
	c.Plugins = map[string]mcpcore.PluginConfig{"store": {Prefix: &prefix, Config: raw}}
	p := new(Plugin)
	cs, srv, err := mcptest.Connect(t, mcpcore.Options{Config: c, Middleware: []mcp.Middleware{reqs.Middleware},
		Instances: []mcpcore.Instance{{Name: "store", Plugin: p, Limits: Limits()}}})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, srv: srv, plugin: p, cs: cs}
}
