package oauth_test

import (
	"testing"

	"github.com/mcpkit/mcpkit/internal/oteltest"
	"github.com/mcpkit/mcpkit/pkg/action/oauth"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TestVerifyTelemetry: each access token check is an INTERNAL span, the
// child of the caller's span (none without one), with its outcome and
// whether the grant was cached (never the token), counted in
// mcpkit.oauth.token.checks: a valid token read from the store, then from
// the cache, then an unknown token.
func TestVerifyTelemetry(t *testing.T) {
	oteltest.Install()
	e := newEnv(t, oauth.Options{Store: oauth.NewMemoryStore()})
	client := e.register()
	p := newPKCE("a")
	u := e.authorize(authzQuery(client, p), "signup", "ann@example.com")
	_, tok := e.exchange(client, u.Query().Get("code"), p)
	access, _ := tok["access_token"].(string)
	if access == "" {
		t.Fatalf("no access token: %v", tok)
	}
	for _, c := range []struct {
		name, token, outcome string
		cached               bool
	}{
		{"from the store", access, "valid", false},
		{"from the cache", access, "valid", true},
		{"unknown", "not-a-token", "invalid", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, parent := oteltest.Parent(t, "request")
			before := oteltest.Collect(t)
			_, err := e.srv.Verify(ctx, c.token, e.resource())
			if (err == nil) != (c.outcome == "valid") {
				t.Fatalf("verify: %v", err)
			}
			kids := oteltest.Children(parent.SpanContext())
			if len(kids) != 1 || kids[0].Name() != "oauth.token.verify" || kids[0].SpanKind() != trace.SpanKindInternal {
				t.Fatalf("child spans %v, want one INTERNAL oauth.token.verify", kids)
			}
			sp := kids[0]
			if v, _ := oteltest.Attr(sp, "mcpkit.oauth.outcome"); v.AsString() != c.outcome {
				t.Errorf("outcome %q, want %q", v.Emit(), c.outcome)
			}
			if v, ok := oteltest.Attr(sp, "mcpkit.oauth.cached"); !ok || v.AsBool() != c.cached {
				t.Errorf("cached %v, want %v", v.Emit(), c.cached)
			}
			if (sp.Status().Code == codes.Error) != (c.outcome != "valid") {
				t.Errorf("status %v", sp.Status())
			}
			for _, kv := range sp.Attributes() {
				if kv.Value.Emit() == c.token {
					t.Errorf("the token is attribute %s", kv.Key)
				}
			}
			// Without a parent (no request span, no traceparent): no span
			// of its own, but counted.
			ended := len(oteltest.Ended())
			if _, err := e.srv.Verify(t.Context(), c.token, e.resource()); (err == nil) != (c.outcome == "valid") {
				t.Fatalf("verify without a parent: %v", err)
			}
			if spans := oteltest.Ended()[ended:]; len(spans) != 0 {
				t.Errorf("a check without a parent span started %v", spans)
			}
			after := oteltest.Collect(t)
			want := map[bool]int64{c.cached: 1}
			want[c.outcome == "valid"]++ // the second check: a valid grant is cached by then
			for _, cached := range []bool{false, true} {
				kv := []attribute.KeyValue{attribute.String("outcome", c.outcome), attribute.Bool("mcpkit.oauth.cached", cached)}
				if n := oteltest.Count(after, oauth.ScopeName, oauth.MetricTokenChecks, kv...) - oteltest.Count(before, oauth.ScopeName, oauth.MetricTokenChecks, kv...); n != want[cached] {
					t.Errorf("%s%v: +%d, want +%d", oauth.MetricTokenChecks, kv, n, want[cached])
				}
			}
		})
	}
}
