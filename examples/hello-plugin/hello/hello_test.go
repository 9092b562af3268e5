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

// TestNameLimit: the plugin's own limit is configurable and fails with a
// typed limit error.
func TestNameLimit(t *testing.T) {
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"hello": {Limits: []byte(`{"name_bytes": 3}`)}}
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Config: cfg, Plugins: []string{"hello"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "hello_greet", Arguments: hello.GreetArgs{Name: "Ada"}})
	if err != nil || res.IsError {
		t.Fatalf("a 3-byte name: %v %v", err, res)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "hello_greet", Arguments: hello.GreetArgs{Name: "Adam"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "limit name_bytes (3) exceeded") {
		t.Fatalf("a 4-byte name: %v %v", err, res)
	}
}

// TestEmbedded: a Go program serves the plugin without the registry, the
// way sql.OpenDB takes a connector.
func TestEmbedded(t *testing.T) {
	cs, srv, err := mcptest.Connect(t, mcpcore.Options{Instances: []mcpcore.Instance{{Name: "greeter", Plugin: hello.New("Hi"), Limits: hello.Limits()}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "greeter_greet", Arguments: hello.GreetArgs{Name: "Ada"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != `{"greeting":"Hi, Ada!"}` {
		t.Fatalf("greeter_greet: %v %v", err, res)
	}
	if in := srv.Info(); len(in.Plugins) != 1 || in.Plugins[0].Name != "greeter" {
		t.Fatalf("the embedding program serves %+v, want only its instance", in.Plugins)
	}
}
