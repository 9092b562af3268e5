package mcpcore

import (
	"context"
	"strings"
	"testing"
)

// TestSetTokenVerifierMetadata: the resource metadata is "", an absolute
// http(s) URL or a path, handed to the transport as given; anything else
// stops the start with an error naming the plugin and the value.
func TestSetTokenVerifierMetadata(t *testing.T) {
	for _, tc := range []struct {
		metadata string
		ok       bool
	}{
		{"", true},
		{"https://mcp.example/.well-known/oauth-protected-resource/mcp", true},
		{"http://127.0.0.1:8080/.well-known/oauth-protected-resource", true},
		{"/.well-known/oauth-protected-resource/mcp", true},
		{"//evil.example/x", false},
		{"ftp://mcp.example/x", false},
		{"https:///no-host", false},
		{"https://user@mcp.example/x", false},
		{"relative/path", false},
		{"/a#frag", false},
		{`/a"b`, false},
		{"/a b", false},
		{"/a\r\nSet-Cookie: x", false},
	} {
		srv, err := NewServer(t.Context(), Options{Instances: []Instance{
			{Name: "web", Plugin: httpPlugin{func(h *Host) { h.SetTokenVerifier(denyAll, tc.metadata) }}},
		}})
		if tc.ok {
			if err != nil {
				t.Errorf("%q: %v", tc.metadata, err)
				continue
			}
			if c := srv.HTTP(); c.ResourceMetadataURL != tc.metadata || c.Verifier == nil {
				t.Errorf("%q: contributions %+v", tc.metadata, c)
			}
			srv.Close(context.Background())
			continue
		}
		if err == nil {
			srv.Close(context.Background())
			t.Errorf("%q accepted", tc.metadata)
		} else if !strings.Contains(err.Error(), "plugins.web") || !strings.Contains(err.Error(), "resource metadata") {
			t.Errorf("%q: error %v names neither the plugin nor the metadata", tc.metadata, err)
		}
	}
}
