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
// child of the caller's span, with its outcome and whether the grant was
// cached (never the token), counted in mcpkit.oauth.token.checks: a
// valid token read from the store, then from the cache, then an unknown
// token.
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
			after := oteltest.Collect(t)
			kv := []attribute.KeyValue{attribute.String("outcome", c.outcome), attribute.Bool("mcpkit.oauth.cached", c.cached)}
			if n := oteltest.Count(after, oauth.ScopeName, oauth.MetricTokenChecks, kv...) - oteltest.Count(before, oauth.ScopeName, oauth.MetricTokenChecks, kv...); n != 1 {
				t.Errorf("%s%v: +%d, want +1", oauth.MetricTokenChecks, kv, n)
			}
		})
	}
}
