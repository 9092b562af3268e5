package action_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/mcpkit/mcpkit/internal/oteltest"
	"github.com/mcpkit/mcpkit/pkg/action"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// traceparent is the W3C traceparent header of sc (sampled).
func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
}

// TestActionTelemetryHTTP: an action run over HTTP is a SERVER span named
// after the action, the child of the traceparent the client sent, with
// its transport, method and route (error.type the kind of a failure),
// and counts in mcpkit.action.calls by action, transport and outcome
// with a duration point.
func TestActionTelemetryHTTP(t *testing.T) {
	oteltest.Install()
	base, _ := serve(t, action.HTTPOptions{})
	for _, c := range []struct {
		name, method, path, body, action, route, errType string
		status                                           int
	}{
		{"ok", "GET", "/api/status", "", "status", "/status", "", 200},
		{"conflict", "POST", "/api/user", `{"name": "taken", "password": "pw123456"}`, "user:create", "/user", "conflict", 409},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, parent := oteltest.Parent(t, "client")
			before := oteltest.Collect(t)
			ct := ""
			if c.body != "" {
				ct = "application/json"
			}
			r := do(t, c.method, base+c.path, ct, c.body, "traceparent", traceparent(parent.SpanContext()))
			if r.status != c.status {
				t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.raw)
			}
			kids := oteltest.Children(parent.SpanContext())
			if len(kids) != 1 {
				t.Fatalf("%d child spans of the client's span, want 1", len(kids))
			}
			sp := kids[0]
			if sp.Name() != "action "+c.action || sp.SpanKind() != trace.SpanKindServer {
				t.Errorf("span %q kind %v, want %q SERVER", sp.Name(), sp.SpanKind(), "action "+c.action)
			}
			want := map[string]string{"mcpkit.action.name": c.action, "mcpkit.action.transport": "http",
				"http.request.method": c.method, "http.route": c.route}
			if c.errType != "" {
				want["error.type"] = c.errType
			}
			for k, v := range want {
				if got, ok := oteltest.Attr(sp, k); !ok || got.AsString() != v {
					t.Errorf("span attribute %s = %q, want %q", k, got.Emit(), v)
				}
			}
			if (sp.Status().Code == codes.Error) != (c.errType != "") {
				t.Errorf("span status %v", sp.Status())
			}
			after := oteltest.Collect(t)
			kv := []attribute.KeyValue{attribute.String("mcpkit.action.name", c.action), attribute.String("mcpkit.action.transport", "http")}
			outcome := "ok"
			if c.errType != "" {
				outcome = "error"
				kv = append(kv, attribute.String("error.type", c.errType))
			}
			calls := append(kv, attribute.String("outcome", outcome))
			if n := oteltest.Count(after, action.ScopeName, action.MetricCalls, calls...) - oteltest.Count(before, action.ScopeName, action.MetricCalls, calls...); n != 1 {
				t.Errorf("%s%v: +%d, want +1", action.MetricCalls, calls, n)
			}
			if n := oteltest.Count(after, action.ScopeName, action.MetricDuration, kv...) - oteltest.Count(before, action.ScopeName, action.MetricDuration, kv...); n != 1 {
				t.Errorf("%s%v points: +%d, want +1", action.MetricDuration, kv, n)
			}
		})
	}
}

// TestActionTelemetryCLI: a run without a parent span (the cli
// transport) is the root of a trace of its own, INTERNAL, counted under
// its transport.
func TestActionTelemetryCLI(t *testing.T) {
	oteltest.Install()
	app, _ := testApp(t)
	kv := []attribute.KeyValue{attribute.String("mcpkit.action.name", "status"), attribute.String("mcpkit.action.transport", "cli"), attribute.String("outcome", "ok")}
	before, ended := oteltest.Collect(t), len(oteltest.Ended())
	if _, err := app.Run(t.Context(), &action.Conn{Type: "cli"}, "status", nil); err != nil {
		t.Fatal(err)
	}
	after, spans := oteltest.Collect(t), oteltest.Ended()[ended:]
	if len(spans) != 1 || spans[0].Name() != "action status" || spans[0].Parent().IsValid() || spans[0].SpanKind() != trace.SpanKindInternal {
		t.Errorf("spans %v, want one root INTERNAL span action status", spans)
	} else if v, _ := oteltest.Attr(spans[0], "mcpkit.action.transport"); v.AsString() != "cli" {
		t.Errorf("transport %q, want cli", v.Emit())
	}
	if n := oteltest.Count(after, action.ScopeName, action.MetricCalls, kv...) - oteltest.Count(before, action.ScopeName, action.MetricCalls, kv...); n != 1 {
		t.Errorf("%s%v: +%d, want +1", action.MetricCalls, kv, n)
	}
}

// TestActionTelemetryWebSocket: each action a WebSocket connection runs
// is a SERVER span, the child of the traceparent its upgrade request
// sent, counted under the websocket transport.
func TestActionTelemetryWebSocket(t *testing.T) {
	oteltest.Install()
	u := wsServe(t, action.NewLocalPubSub(), action.WebSocketOptions{})
	_, parent := oteltest.Parent(t, "client")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Traceparent": {traceparent(parent.SpanContext())}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	kv := []attribute.KeyValue{attribute.String("mcpkit.action.name", "status"), attribute.String("mcpkit.action.transport", "websocket"), attribute.String("outcome", "ok")}
	before := oteltest.Collect(t)
	for i := range 2 {
		if m := wsCall(t, c, `{"messageType":"action","action":"status","messageId":`+strconv.Itoa(i)+`}`); m["response"] == nil {
			t.Fatalf("status: %v", m)
		}
	}
	after := oteltest.Collect(t)
	kids := oteltest.Children(parent.SpanContext())
	if len(kids) != 2 {
		t.Fatalf("%d child spans of the client's span, want 2", len(kids))
	}
	for _, sp := range kids {
		if v, _ := oteltest.Attr(sp, "mcpkit.action.transport"); sp.Name() != "action status" || sp.SpanKind() != trace.SpanKindServer || v.AsString() != "websocket" {
			t.Errorf("span %q kind %v transport %q, want action status SERVER websocket", sp.Name(), sp.SpanKind(), v.Emit())
		}
	}
	if n := oteltest.Count(after, action.ScopeName, action.MetricCalls, kv...) - oteltest.Count(before, action.ScopeName, action.MetricCalls, kv...); n != 2 {
		t.Errorf("%s%v: +%d, want +2", action.MetricCalls, kv, n)
	}
}
