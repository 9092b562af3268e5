// Package hello is a minimal third-party mcpkit plugin: one configurable
// greeting tool. It shows the whole plugin contract: registration at init
// with its own limit, strict configuration, tools added through the host,
// and Close; and, for a Go program that embeds mcpkit without the registry,
// [New] and [Limits] for an [mcpcore.Instance].
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
		New:         func() mcpcore.Plugin { return New("Hello") },
		Limits:      Limits(),
	})
}

// LimitNameBytes is the plugin's own limit: the longest name greet accepts.
// It is set under "plugins.hello.limits" in the configuration file.
const LimitNameBytes = "name_bytes"

// Limits declares the plugin's own limits.
func Limits() []mcpcore.LimitSpec {
	return []mcpcore.LimitSpec{{Name: LimitNameBytes, Kind: mcpcore.LimitBytes, Default: 256, Min: 1, Max: 64 * mcpcore.KiB,
		Meaning: "longest name greet accepts, in bytes; a longer one is refused"}}
}

// Plugin greets. Its configuration is {"greeting": "..."}.
type Plugin struct {
	Greeting string `json:"greeting"`
}

// New returns a plugin greeting with greeting, for the registry or for a
// program that embeds it as an [mcpcore.Instance] (with [Limits]).
func New(greeting string) *Plugin { return &Plugin{Greeting: greeting} }

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
			if max := h.Limit(LimitNameBytes); int64(len(in.Name)) > max {
				return nil, &mcpcore.LimitError{Limit: LimitNameBytes, Max: max, Actual: int64(len(in.Name)), Detail: "give a shorter name"}
			}
			return GreetReply{Greeting: fmt.Sprintf("%s, %s!", p.Greeting, in.Name)}, nil
		})
	return nil
}

// Close implements mcpcore.Plugin.
func (p *Plugin) Close(context.Context) error { return nil }
