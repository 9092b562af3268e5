package main

import (
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestShout serves the registered plugin as the binary does and calls its
// tool through the SDK's client.
func TestShout(t *testing.T) {
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Config: mcpcore.DefaultConfig(), Plugins: []string{"minimal"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "minimal_shout", Arguments: ShoutArgs{Text: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != `{"shout":"HI"}` {
		t.Fatalf("shout = %s (isError %v)", got, res.IsError)
	}
}
