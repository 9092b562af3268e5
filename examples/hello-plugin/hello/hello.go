// Package hello is a minimal third-party mcpkit plugin: one configurable
// greeting tool. It shows the whole plugin contract: registration at init,
// strict configuration, tools added through the host, and Close.
package hello

import (
	"context"
	"fmt"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "hello",
		Description: "example third-party plugin: a greeting tool",
		Default:     true,
		New:         func() mcpcore.Plugin { return &Plugin{Greeting: "Hello"} },
	})
}

// Plugin greets. Its configuration is {"greeting": "..."}.
type Plugin struct {
	Greeting string `json:"greeting"`
}

var (
	_ mcpcore.Plugin     = (*Plugin)(nil)
	_ mcpcore.Configurer = (*Plugin)(nil)
)

// Configure implements mcpcore.Configurer.
func (p *Plugin) Configure(raw []byte) error {
	if err := mcpcore.DecodeStrict(raw, p); err != nil {
		return err
	}
	if p.Greeting == "" {
		return fmt.Errorf("greeting must not be empty")
	}
	return nil
}

// GreetArgs are greet's arguments.
type GreetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

// GreetReply is greet's result.
type GreetReply struct {
	Greeting string `json:"greeting"`
}

// Attach implements mcpcore.Plugin.
func (p *Plugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	mcpcore.AddTool(h, &mcp.Tool{Name: "greet", Description: "Greet someone by name."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in GreetArgs) (any, error) {
			return GreetReply{Greeting: fmt.Sprintf("%s, %s!", p.Greeting, in.Name)}, nil
		})
	return nil
}

// Close implements mcpcore.Plugin.
func (p *Plugin) Close(context.Context) error { return nil }
