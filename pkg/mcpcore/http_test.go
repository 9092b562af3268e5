package mcpcore

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/sessionstore"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// httpPlugin contributes to the HTTP listener through its Host.
type httpPlugin struct{ attach func(h *Host) }

func (p httpPlugin) Attach(_ context.Context, h *Host) error { p.attach(h); return nil }
func (httpPlugin) Close(context.Context) error               { return nil }

func denyAll(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
	return nil, auth.ErrInvalidToken
}

// TestHTTPContributions: routes, a verifier and a session store reach
// Server.HTTP with their plugin, and the routes are listed in info.
func TestHTTPContributions(t *testing.T) {
	store := sessionstore.NewMemory()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	srv, err := NewServer(t.Context(), Options{Instances: []Instance{
		{Name: "web", Plugin: httpPlugin{func(h *Host) {
			h.HandleHTTP("GET /web/a", ok)
			h.HandleHTTP("/web/ws", ok)
			h.SetTokenVerifier(denyAll, "https://mcp.example/.well-known/oauth-protected-resource/mcp")
		}}},
		{Name: "shared", Plugin: httpPlugin{func(h *Host) { h.SetSessionStore(store) }}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	c := srv.HTTP()
	var got []string
	for _, r := range c.Routes {
		got = append(got, r.Plugin+" "+r.Pattern)
	}
	if !slices.Equal(got, []string{"web GET /web/a", "web /web/ws"}) {
		t.Errorf("routes %v", got)
	}
	if c.Verifier == nil || c.ResourceMetadataURL != "https://mcp.example/.well-known/oauth-protected-resource/mcp" || c.SessionStore != store {
		t.Errorf("contributions %+v", c)
	}
	if ps := srv.Info().Plugins; !slices.Equal(ps[0].HTTPRoutes, []string{"GET /web/a", "/web/ws"}) || ps[1].HTTPRoutes != nil {
		t.Errorf("info lists routes %v and %v", ps[0].HTTPRoutes, ps[1].HTTPRoutes)
	}
	c.Routes[0].Pattern = "changed"
	if srv.HTTP().Routes[0].Pattern != "GET /web/a" {
		t.Error("HTTP returned the server's own slice")
	}
}

// TestHTTPContributionErrors: bad contributions and a second verifier or
// store are startup configuration errors naming the plugins.
func TestHTTPContributionErrors(t *testing.T) {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	store := sessionstore.NewMemory()
	for _, tc := range []struct {
		name    string
		a, b    func(h *Host)
		wantAll []string
	}{
		{"empty pattern", func(h *Host) { h.HandleHTTP(" ", ok) }, nil, []string{"plugins.a", "empty pattern"}},
		{"nil handler", func(h *Host) { h.HandleHTTP("/x", nil) }, nil, []string{"plugins.a", `"/x" has a nil handler`}},
		{"nil verifier", func(h *Host) { h.SetTokenVerifier(nil, "") }, nil, []string{"nil token verifier"}},
		{"nil store", func(h *Host) { h.SetSessionStore(nil) }, nil, []string{"nil session store"}},
		{"two verifiers", func(h *Host) { h.SetTokenVerifier(denyAll, "") }, func(h *Host) { h.SetTokenVerifier(denyAll, "") },
			[]string{"plugins.b", `token verifier set by plugin "b", but plugin "a" already set one`}},
		{"two stores", func(h *Host) { h.SetSessionStore(store) }, func(h *Host) { h.SetSessionStore(store) },
			[]string{`session store set by plugin "b", but plugin "a" already set one`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			instances := []Instance{{Name: "a", Plugin: httpPlugin{tc.a}}}
			if tc.b != nil {
				instances = append(instances, Instance{Name: "b", Plugin: httpPlugin{tc.b}})
			}
			srv, err := NewServer(t.Context(), Options{Instances: instances})
			if err == nil {
				srv.Close(context.Background())
				t.Fatal("assembled")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("%v is not a configuration error", err)
			}
			for _, want := range tc.wantAll {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
