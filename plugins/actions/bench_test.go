package actions

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpkit/mcpkit/internal/benchpair"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/httpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoInputs struct {
	Message string `json:"message"`
}

type echoResult struct {
	Message string `json:"message"`
}

func echo(msg string) echoResult { return echoResult{Message: msg} }

// BenchmarkToolCallHTTP compares a trivial action's tools/call over
// streamable HTTP (legacy era, one session) through the framework (the
// plugin, App.Run's validation and decoding, the host, mcpkit's HTTP
// mount) with the same function registered directly on the SDK's
// streamable HTTP handler, alternating rounds; the ratio is the
// framework's cost.
func BenchmarkToolCallHTTP(b *testing.B) {
	app := action.NewApp("bench", "bench")
	app.MustAdd(action.Action{Name: "echo", Description: "Echo.", Inputs: (*echoInputs)(nil),
		Run: func(_ context.Context, _ *action.Conn, in any) (any, error) {
			return echo(in.(*echoInputs).Message), nil
		}})
	prefix := ""
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"actions": {Prefix: &prefix}}
	srv, err := mcpcore.NewServer(b.Context(), mcpcore.Options{Config: cfg, Instances: []mcpcore.Instance{{Name: "actions",
		Plugin: New(func(context.Context, Config, action.PubSub) (*action.App, io.Closer, error) { return app, nil, nil })}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close(context.Background()) })
	h, err := httpserve.NewHandler(httpserve.Options{Server: srv.MCP()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)

	sdk := mcp.NewServer(&mcp.Implementation{Name: "sdk"}, nil)
	mcp.AddTool(sdk, &mcp.Tool{Name: "echo", Description: "Echo."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoInputs) (*mcp.CallToolResult, echoResult, error) {
		return nil, echo(in.Message), nil
	})
	peer := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, nil)

	params := &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"ping"}`)}
	var ops [2]func()
	for i, handler := range []http.Handler{h, peer} {
		web := httptest.NewServer(handler)
		b.Cleanup(web.Close)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(b.Context(),
			&mcp.StreamableClientTransport{Endpoint: web.URL + "/mcp", DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		ops[i] = func() {
			if res, err := cs.CallTool(b.Context(), params); err != nil || res.IsError {
				b.Fatalf("call: %v %v", err, res)
			}
		}
	}
	benchpair.Compare(b, [2]string{"actions", "sdk"}, ops)
}
