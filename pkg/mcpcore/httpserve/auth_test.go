package httpserve

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestResourceMetadataPerRequest: a ResourceMetadataURL that is a path is
// named on the origin each loopback request reached (its Host, whichever
// loopback name the client used), never on a request that reached another
// address, whose Host the core does not trust; an absolute URL is named
// as it is everywhere.
func TestResourceMetadataPerRequest(t *testing.T) {
	const path = "/.well-known/oauth-protected-resource/mcp"
	rel := start(t, Options{Verifier: oauthVerifier, ResourceMetadataURL: path})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(rel.base, "http://"))
	for _, host := range []string{"", "localhost:" + port, "[::1]:" + port} {
		hdr := map[string]string{}
		want := rel.base + path
		if host != "" {
			hdr["Host"] = host
			want = "http://" + host + path
		}
		resp, _ := rel.do(t, http.MethodPost, MCPPath, initBody, hdr)
		if got, wantH := resp.Header.Get("WWW-Authenticate"), `Bearer resource_metadata="`+want+`"`; resp.StatusCode != http.StatusUnauthorized || got != wantH {
			t.Errorf("Host %q: %d, WWW-Authenticate %q, want 401 %q", host, resp.StatusCode, got, wantH)
		}
	}

	// Beyond loopback (a request that reached a public address), the Host
	// header is the client's to choose: a path names nothing.
	abs := "https://mcp.example/.well-known/oauth-protected-resource/mcp"
	for _, tc := range []struct {
		metadata, host, want string
	}{
		{path, "evil.example", "Bearer"},
		{path, "localhost", "Bearer"},
		{abs, "evil.example", `Bearer resource_metadata="` + abs + `"`},
	} {
		h, err := NewHandler(Options{Server: newTestServer(), Verifier: oauthVerifier, ResourceMetadataURL: tc.metadata})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "http://"+tc.host+MCPPath, strings.NewReader(initBody))
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8080}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("WWW-Authenticate"); rec.Code != http.StatusUnauthorized || got != tc.want {
			t.Errorf("%s via public address, Host %s: %d, WWW-Authenticate %q, want 401 %q", tc.metadata, tc.host, rec.Code, got, tc.want)
		}
		h.Close()
	}

	// Static tokens alone still name their scope beside the metadata.
	both := start(t, Options{BearerTokens: []string{"static-token-0123456789"}, ResourceMetadataURL: path})
	resp, _ := both.do(t, http.MethodPost, MCPPath, initBody, nil)
	if want := `Bearer resource_metadata="` + both.base + path + `", scope="mcp"`; resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("static tokens: WWW-Authenticate %q, want %q", resp.Header.Get("WWW-Authenticate"), want)
	}
	rel.h.Close()
	both.h.Close()
}
