package hello_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/examples/hello-plugin/hello"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve assembles an mcpkit server with the hello plugin, as the example
// binary does, and connects an SDK client to it.
func serve(t *testing.T, config string) (*mcp.ClientSession, error) {
	t.Helper()
	cfg := mcpcore.DefaultConfig()
	if config != "" {
		cfg.Plugins = map[string]mcpcore.PluginConfig{"hello": {Config: []byte(config)}}
	}
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Config: cfg, Plugins: []string{"hello"}})
	return cs, err
}

func TestGreet(t *testing.T) {
	cs, err := serve(t, `{"greeting": "Bonjour"}`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "hello_greet", Arguments: hello.GreetArgs{Name: "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != `{"greeting":"Bonjour, Ada!"}` {
		t.Fatalf("greet = %s (isError %v)", got, res.IsError)
	}
}

func TestStrictConfiguration(t *testing.T) {
	if _, err := serve(t, `{"greting": "typo"}`); err == nil || !strings.Contains(err.Error(), `unknown field "greting"`) {
		t.Fatalf("a misspelt field was accepted: %v", err)
	}
	if _, err := serve(t, `{"greeting": ""}`); !errors.Is(err, mcpcore.ErrConfig) {
		t.Fatalf("an empty greeting: %v, want a configuration error", err)
	}
}
