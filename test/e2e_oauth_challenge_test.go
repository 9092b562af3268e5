package test

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// challenge posts to /mcp at base without a token, with host as the Host
// header, and returns the status and WWW-Authenticate.
func challenge(t *testing.T, base, host string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestOAuthChallengeOrigin: `mcpkit actions start` with OAuth and no
// issuer answers /mcp's 401 with the protected-resource metadata on the
// origin the client used — 127.0.0.1 or localhost — and the go-sdk's OAuth
// client, reaching it as localhost, follows that challenge through the
// whole flow. Served on a non-loopback address, the same configuration
// names no metadata, whatever Host the request claims.
func TestOAuthChallengeOrigin(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"oauth": {}}}}}`)
	hp := startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", "127.0.0.1:0", "--config", cfg)
	hostport := strings.TrimPrefix(hp.base, "http://")
	_, port, _ := net.SplitHostPort(hostport)
	for _, host := range []string{hostport, "localhost:" + port} {
		code, got := challenge(t, hp.base, host)
		if want := `Bearer resource_metadata="http://` + host + `/.well-known/oauth-protected-resource/mcp"`; code != http.StatusUnauthorized || got != want {
			t.Fatalf("Host %s: %d %q, want 401 %q", host, code, got, want)
		}
	}

	h := sdkOAuthHandler(t, "signup", "cleo@example.com", "http://localhost:"+port+"/oauth/authorize")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: "http://localhost:" + port + "/mcp", OAuthHandler: h, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: legacyEra})
	if err != nil {
		t.Fatalf("go-sdk OAuth client via localhost: %v\n%s", err, hp.stderr.String())
	}
	defer cs.Close()
	if author, user := postAs(t, cs, "via localhost"); author != "Ann" || user == 0 {
		t.Fatalf("posted as %q (user %d)", author, user)
	}

	ip := publicIPv4(t)
	if ip == "" {
		t.Log("no non-loopback IPv4 address here: the beyond-loopback half is not run")
		return
	}
	public := startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", ip+":0", "--config", cfg)
	for _, host := range []string{strings.TrimPrefix(public.base, "http://"), "evil.example", "localhost"} {
		if code, got := challenge(t, public.base, host); code != http.StatusUnauthorized || got != "Bearer" {
			t.Errorf("beyond loopback, Host %s: %d %q, want 401 \"Bearer\" (Host is not trusted there)", host, code, got)
		}
	}
}

// publicIPv4 is an IPv4 address of this machine that is not loopback, or
// "" when it has none.
func publicIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
