package actions

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/mcpkit/mcpkit/internal/oteltest"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TestActionTelemetryMCP: an action called as a tool is an INTERNAL span,
// the child of the request's span, named after the action, with
// transport mcp (error.type the kind of a failure), counted in
// mcpkit.action.calls by action, transport and outcome.
func TestActionTelemetryMCP(t *testing.T) {
	var reqs oteltest.Requests
	p := New(func(context.Context, Config, action.PubSub) (*action.App, io.Closer, error) {
		return testApp(t), nil, nil
	})
	c := mcpcore.DefaultConfig()
	c.Plugins = map[string]mcpcore.PluginConfig{"actions": {Prefix: noPrefix(), Config: json.RawMessage(`{}`)}}
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Config: c, Instances: []mcpcore.Instance{{Name: "actions", Plugin: p}},
		Middleware: []mcp.Middleware{reqs.Middleware}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, args, action, errType string }{
		{"user-create", `{"name": "ann"}`, "user:create", ""},
		{"fail-notfound", `{}`, "fail:notfound", "not_found"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			before := oteltest.Collect(t)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
			if err != nil || res.IsError != (tc.errType != "") {
				t.Fatalf("%s: %v %+v", tc.tool, err, res)
			}
			kids := oteltest.Children(reqs.Last(t))
			if len(kids) != 1 {
				t.Fatalf("%d child spans of the request, want 1", len(kids))
			}
			sp := kids[0]
			if sp.Name() != "action "+tc.action || sp.SpanKind() != trace.SpanKindInternal {
				t.Errorf("span %q kind %v, want %q INTERNAL", sp.Name(), sp.SpanKind(), "action "+tc.action)
			}
			if v, _ := oteltest.Attr(sp, "mcpkit.action.transport"); v.AsString() != "mcp" {
				t.Errorf("transport %q, want mcp", v.Emit())
			}
			if v, _ := oteltest.Attr(sp, "error.type"); v.AsString() != tc.errType || (sp.Status().Code == codes.Error) != (tc.errType != "") {
				t.Errorf("error.type %q status %v, want %q", v.Emit(), sp.Status(), tc.errType)
			}
			after := oteltest.Collect(t)
			outcome := "ok"
			if tc.errType != "" {
				outcome = "error"
			}
			kv := []attribute.KeyValue{attribute.String("mcpkit.action.name", tc.action), attribute.String("mcpkit.action.transport", "mcp"), attribute.String("outcome", outcome)}
			if n := oteltest.Count(after, action.ScopeName, action.MetricCalls, kv...) - oteltest.Count(before, action.ScopeName, action.MetricCalls, kv...); n != 1 {
				t.Errorf("%s%v: +%d, want +1", action.MetricCalls, kv, n)
			}
		})
	}
}
