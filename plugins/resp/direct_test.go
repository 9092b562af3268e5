package resp

import (
	"context"
	"encoding/json"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsAnswerDirectlyAsThroughTheSDK: the resp tools are direct
// (mcpcore.ToolOptions.Direct): a client of either era served by
// mcpcore.Server.Run gets, call for call, the answers a client served
// through the SDK gets (replies, a server error, bad params, a refused
// command, the session tool), without the SDK's request path, and each
// legacy client keeps its own default session (a 2026-07-28 client's is
// its principal's).
func TestToolsAnswerDirectlyAsThroughTheSDK(t *testing.T) {
	for _, version := range []string{legacyVersion, "2026-07-28"} {
		t.Run(version, func(t *testing.T) { testToolsAnswerDirectly(t, version) })
	}
}

func testToolsAnswerDirectly(t *testing.T, version string) {
	s := redistest.Start(t, redistest.Options{})
	t.Setenv(EnvAuth, "")
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"resp": {Config: json.RawMessage(targetAt(s, ""))}}
	var viaSDK atomic.Int64
	srv, err := mcpcore.NewServer(t.Context(), mcpcore.Options{Config: cfg, Plugins: []string{"resp"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	srv.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				viaSDK.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	sdk := mcptest.Session(t, srv, nil, &mcp.ClientSessionOptions{ProtocolVersion: version})
	direct := mcptest.RunSession(t, srv, nil, &mcp.ClientSessionOptions{ProtocolVersion: version})

	calls := []map[string]any{
		{"commands": [][]any{{"SET", "k", "v"}, {"GET", "k"}, {"INCR", "k"}, {"SET", map[string]string{"base64": "AP8="}, 9007199254740991}}},
		{"commands": [][]any{{"GET", 5.5}}},        // bad_params
		{"commands": [][]any{{"subscribe", "ch"}}}, // refused
		{"commands": "GET k"},                      // bad_params
		{"format": "json", "commands": [][]any{{"SET", "k", "v"}, {"GET", "k"}, {"HGETALL", "none"}}},
		{"format": "text", "commands": [][]any{{"GET", "k"}}},
		{"format": "xml", "commands": [][]any{{"GET", "k"}}}, // bad_params
	}
	for _, args := range calls {
		want := resultOf(t, sdk, "resp_execute", args)
		before := viaSDK.Load()
		if got := resultOf(t, direct, "resp_execute", args); got != want {
			t.Errorf("execute %v:\ndirect %s\nSDK    %s", args, got, want)
		}
		if viaSDK.Load() != before {
			t.Errorf("execute %v went through the SDK's request path", args)
		}
	}
	list := map[string]any{"action": "list"}
	idle := regexp.MustCompile(`idle_ms\\?":[0-9]+`) // how long each has been idle differs
	got := idle.ReplaceAllString(resultOf(t, direct, "resp_session", list), "idle")
	if want := idle.ReplaceAllString(resultOf(t, sdk, "resp_session", list), "idle"); got != want {
		t.Errorf("session list:\ndirect %s\nSDK    %s", got, want)
	}
	clientID := func(cs *mcp.ClientSession) string {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "resp_execute", Arguments: map[string]any{"format": "json", "commands": [][]any{{"CLIENT", "ID"}}}})
		if err != nil || res.IsError {
			t.Fatalf("CLIENT ID: %v %v", err, res)
		}
		return string(decode[execReply](t, res).Replies[0].Value)
	}
	if version != legacyVersion {
		return
	}
	other := mcptest.RunSession(t, srv, nil, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if a, b, c := clientID(direct), clientID(other), clientID(sdk); a == b || a == c || a != clientID(direct) {
		t.Errorf("default sessions: direct %s, another direct %s, SDK %s: want one each, kept", a, b, c)
	}
}

// resultOf returns the JSON of a call's result, or of its error.
func resultOf(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
