package mcpcore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// adder is a plugin with one tool.
type adder struct{}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func (adder) Attach(_ context.Context, h *mcpcore.Host) error {
	mcpcore.AddTool(h, &mcp.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (any, error) {
			return map[string]int{"sum": in.A + in.B}, nil
		})
	return nil
}

func (adder) Close(context.Context) error { return nil }

// Assemble a server from a plugin instance (a registered plugin is served
// the same way by name) and call its tool with the SDK's client in memory:
// the host names the tool after the plugin, validates the arguments against
// the schema derived from addArgs and returns the result as structured
// content and text, or as a typed bad_params error.
func Example() {
	ctx := context.Background()
	srv, err := mcpcore.NewServer(ctx, mcpcore.Options{
		Config:    mcpcore.DefaultConfig(),
		Instances: []mcpcore.Instance{{Name: "math", Plugin: adder{}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close(ctx)

	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	go srv.Run(ctx, serverEnd)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for _, args := range []any{map[string]any{"a": 2, "b": 40}, map[string]any{"a": "two"}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "math_add", Arguments: args})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// false {"sum":42}
	// true invalid argument /a: got string "two", want integer
}
