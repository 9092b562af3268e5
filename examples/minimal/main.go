// Command minimal is the smallest mcpkit plugin and the binary that serves it:
// one tool, registered at init, served by every mcpkit command.
//
//	go build -o minimal . && ./minimal serve --stdio --plugins minimal
package main

import (
	"context"
	"os"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/cli"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "minimal", // the tool prefix: the tool below is served as minimal_shout
		Description: "the smallest plugin: one tool",
		Default:     true,
		New:         func() mcpcore.Plugin { return shouter{} },
	})
}

type shouter struct{}

// ShoutArgs are the tool's arguments; the input schema is derived from them.
type ShoutArgs struct {
	Text string `json:"text" jsonschema:"what to shout"`
}

// ShoutReply is the tool's result, returned as structured content and text.
type ShoutReply struct {
	Shout string `json:"shout"`
}

func (shouter) Attach(_ context.Context, h *mcpcore.Host) error {
	mcpcore.AddTool(h, &mcp.Tool{Name: "shout", Description: "Upper-case a text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in ShoutArgs) (any, error) {
			return ShoutReply{Shout: strings.ToUpper(in.Text)}, nil
		})
	return nil
}

func (shouter) Close(context.Context) error { return nil }

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
