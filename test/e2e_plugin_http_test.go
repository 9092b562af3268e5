package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// TestDiagHTTPRoute: diag's own route is served on the listener beside /mcp,
// behind the same DNS-rebinding check, and listed in mcpkit://info.
func TestDiagHTTPRoute(t *testing.T) {
	hp := startHTTP(t, "--plugins", "diag")
	res, err := http.Get(hp.base + "/diag/state")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var st map[string]any
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &st) != nil || st["blob_bytes_in_flight"] != float64(0) {
		t.Fatalf("GET /diag/state: %d %s", res.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodGet, hp.base+"/diag/state", nil)
	req.Host = "attacker.example"
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a rebinding Host reached the plugin route: %d", res.StatusCode)
	}
	cs := hp.connect(t, legacyEra, nil)
	if routes := info(t, cs).Plugins[0].HTTPRoutes; len(routes) != 1 || routes[0] != "GET /diag/state" {
		t.Errorf("info lists routes %v", routes)
	}
}

// TestHelloTokenVerifier: the example plugin's own token verifier
// authenticates /mcp beside the core's static tokens, its user becomes the
// caller's principal, and a weak token in its users file stops the start
// naming the line, never the token.
func TestHelloTokenVerifier(t *testing.T) {
	bin := buildHello(t)
	const userToken, staticToken = "ada-secret-token-0001", "static-secret-token-0002"
	users := writeConfig(t, "# name:token\nada:"+userToken+"\n")
	tokens := writeConfig(t, staticToken+"\n")
	cfg := writeConfig(t, fmt.Sprintf(`{"plugins": {"hello": {"config": {"greeting": "Hello", "users_file": %q}}},
		"http": {"bearer_tokens_file": %q}}`, users, tokens))
	hp := startHTTPBinary(t, bin, "--plugins", "hello", "--config", cfg)

	res, err := http.Post(hp.base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: HTTP %d", res.StatusCode)
	}
	for _, era := range eras {
		cs := hp.connect(t, era, &http.Client{Transport: bearer{token: userToken}})
		if got := decode[map[string]string](t, callTool(t, cs, "hello_greet", map[string]any{})); got["greeting"] != "Hello, ada!" {
			t.Errorf("%s: greet as ada = %v", era, got)
		}
		static := hp.connect(t, era, &http.Client{Transport: bearer{token: staticToken}})
		if got := decode[map[string]string](t, callTool(t, static, "hello_greet", map[string]any{"name": "Bob"})); got["greeting"] != "Hello, Bob!" {
			t.Errorf("%s: greet with a static token = %v", era, got)
		}
	}
	if strings.Contains(hp.stderr.String(), userToken) || strings.Contains(hp.stderr.String(), staticToken) {
		t.Fatal("a token appears in the logs")
	}

	weak := writeConfig(t, "ada:"+userToken+"\nbob:short\n")
	out, err := exec.Command(bin, "serve", "--stdio", "--plugins", "hello", "--config",
		writeConfig(t, fmt.Sprintf(`{"plugins": {"hello": {"config": {"greeting": "Hi", "users_file": %q}}}}`, weak))).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "line 2") || strings.Contains(string(out), "short") {
		t.Errorf("weak token: %v\n%s", err, out)
	}
}
