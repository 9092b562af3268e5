package test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/plugins/diag"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolError decodes a failed call's structured error.
func toolError(t testing.TB, res *mcp.CallToolResult) mcpcore.ToolErrorDetail {
	t.Helper()
	var r mcpcore.ToolErrorReply
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || json.Unmarshal(b, &r) != nil || r.Error.Message != resultText(res) {
		t.Fatalf("not a host error result: %s (text %q)", b, resultText(res))
	}
	return r.Error
}

// TestCoreErrorsThroughTheBinary: over every transport and era, a panicking
// handler fails only its call (kind internal, stack in the log, counted),
// invalid arguments fail with kind bad_params and their path, and a
// plugin's own error kind reaches the client.
func TestCoreErrorsThroughTheBinary(t *testing.T) {
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs, p := c.connect(t, "--plugins", "diag")
			if d := toolError(t, callTool(t, cs, "diag_fail", diag.FailArgs{Panic: true, Message: "on purpose"})); d.Kind != mcpcore.KindInternal {
				t.Fatalf("panic reported as %+v", d)
			}
			if got := decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", diag.EchoArgs{Message: "alive"})); got.Message != "alive" {
				t.Fatalf("echo after the panic: %+v", got)
			}
			if in := info(t, cs); in.Calls.Panicked != 1 {
				t.Fatalf("calls = %+v, want one panic", in.Calls)
			}
			eventually(t, 5*time.Second, "the panic's stack in the log", func() bool {
				return strings.Contains(p.stderr.String(), "diag_fail: panic on request: on purpose") && strings.Contains(p.stderr.String(), "diag.go")
			})
			for _, tc := range []struct {
				args any
				path string
			}{
				{map[string]any{"message": 3}, "/message"},
				{map[string]any{"message": "x", "extra": true}, "/extra"},
				{map[string]any{}, "/message"},
			} {
				if d := toolError(t, callTool(t, cs, "diag_echo", tc.args)); d.Kind != mcpcore.KindBadParams || d.Path != tc.path {
					t.Errorf("diag_echo %v: %+v, want bad_params at %s", tc.args, d, tc.path)
				}
			}
			if d := toolError(t, callTool(t, cs, "diag_fail", diag.FailArgs{Kind: "conflict", Message: "taken"})); d.Kind != "conflict" || d.Message != "taken" {
				t.Fatalf("a plugin's own kind: %+v", d)
			}
		})
	}
}

// TestCorePluginLimits: a plugin's own limit is set in the configuration
// file, listed in mcpkit://info with its meaning, and enforced with a typed
// error; an unknown one stops the start, naming it.
func TestCorePluginLimits(t *testing.T) {
	cfg := writeConfig(t, `{"plugins": {"diag": {"limits": {"blob_bytes_in_flight": 1048576}}}, "limits": {"inflight_request_bytes": 134217728}}`)
	cs := startStdio(t, "--plugins", "diag", "--config", cfg).connect(t, legacyEra)
	in := info(t, cs)
	if l := in.Plugins[0].Limits; len(l) != 1 || l[0].Name != diag.LimitBlobBytesInFlight || l[0].Value != "1048576" || l[0].Meaning == "" {
		t.Fatalf("diag's limits in mcpkit://info: %+v", l)
	}
	found := false
	for _, l := range in.Limits {
		found = found || l.Name == "inflight_request_bytes" && l.Value == "134217728" && l.Meaning != ""
	}
	if !found {
		t.Fatalf("core limits lack inflight_request_bytes 134217728: %+v", in.Limits)
	}
	if d := toolError(t, callTool(t, cs, "diag_blob", diag.BlobArgs{Bytes: 2 * mcpcore.MiB})); d.Kind != mcpcore.KindLimit || d.Limit != diag.LimitBlobBytesInFlight || d.Max != mcpcore.MiB {
		t.Fatalf("a blob beyond blob_bytes_in_flight: %+v", d)
	}

	bad := writeConfig(t, `{"plugins": {"diag": {"limits": {"blob_bytes": 1}}}}`)
	out, err := exec.Command(binary(t), "serve", "--stdio", "--config", bad).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "plugins.diag.limits.blob_bytes") {
		t.Fatalf("an unknown plugin limit: %v\n%s", err, out)
	}
}

// TestCoreWeakBearerTokens: a tokens file holding an unusable token stops
// `serve --http` with exit code 3 and the token's line, never the token.
func TestCoreWeakBearerTokens(t *testing.T) {
	const weak = "half one"
	tokens := writeConfig(t, "# tokens\ne2e-token-long-enough-0001\n"+weak+"\n")
	cfg := writeConfig(t, `{"http": {"bearer_tokens_file": "`+tokens+`"}}`)
	out, err := exec.Command(binary(t), "serve", "--http", "127.0.0.1:0", "--config", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "line 3") {
		t.Fatalf("a weak token: %v\n%s", err, out)
	}
	if strings.Contains(string(out), weak) || strings.Contains(string(out), "e2e-token-long-enough-0001") {
		t.Fatalf("the output reveals a token:\n%s", out)
	}
}

// TestCoreSessionsOverHTTP: with bearer tokens, a session's principal is
// the token's identity, notify reaches every session of that principal
// that set a log level (and no other principal's), and per-session state is
// freed when a session ends (DELETE).
func TestCoreSessionsOverHTTP(t *testing.T) {
	const tokenA, tokenB = "e2e-session-token-aaaa", "e2e-session-token-bbbb"
	tokens := writeConfig(t, tokenA+"\n"+tokenB+"\n")
	hp := startHTTP(t, "--plugins", "diag", "--config", writeConfig(t, `{"http": {"bearer_tokens_file": "`+tokens+`"}}`))
	got := make(chan string, 10)
	listen := &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		if req.Params.Logger == "diag" && req.Params.Level == "notice" {
			got <- req.Params.Data.(string)
		}
	}}
	// a1 and b keep the standalone SSE stream open: notifications sent
	// outside a request of theirs travel on it.
	listener := func(token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, listen).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: hp.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token: token}}}, &mcp.ClientSessionOptions{ProtocolVersion: legacyEra})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	a1 := listener(tokenA)
	a2 := hp.connect(t, legacyEra, &http.Client{Transport: bearer{token: tokenA}})
	b := listener(tokenB)
	w1 := decode[diag.WhoamiReply](t, callTool(t, a1, "diag_whoami", struct{}{}))
	w2 := decode[diag.WhoamiReply](t, callTool(t, a2, "diag_whoami", struct{}{}))
	wb := decode[diag.WhoamiReply](t, callTool(t, b, "diag_whoami", struct{}{}))
	if w1.Principal == "" || w1.Principal != w2.Principal || wb.Principal == w1.Principal || w1.SessionID != a1.ID() || w1.PrincipalSessions != 2 {
		t.Fatalf("whoami: a1 %+v, a2 %+v, b %+v", w1, w2, wb)
	}
	if strings.Contains(w1.Principal, tokenA) {
		t.Fatalf("the principal %q reveals the token", w1.Principal)
	}
	if r := decode[diag.NotifyReply](t, callTool(t, a2, "diag_notify", diag.NotifyArgs{Message: "for a"})); r.Sessions != 2 {
		t.Fatalf("notify: %+v, want both of a's sessions", r)
	}
	select {
	case msg := <-got:
		if msg != "for a" {
			t.Fatalf("received %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a1 did not receive the notification")
	}
	select {
	case msg := <-got:
		t.Fatalf("a second delivery (to b?): %q", msg)
	case <-time.After(200 * time.Millisecond):
	}
	state := func() diag.State { return readResource[diag.State](t, b, "diag://state") }
	if st := state(); st.SessionsTracked != 3 {
		t.Fatalf("state %+v, want 3 sessions tracked", st)
	}
	a1.Close()
	a2.Close()
	eventually(t, 5*time.Second, "the closed sessions' state to be freed", func() bool { return state().SessionsTracked == 1 })
}
