package resp

import (
	"context"
	"fmt"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Page sizes of the commands tool.
const (
	DefaultCommandsLimit = 25
	MaxCommandsLimit     = 200
)

// CommandsArgs are the commands tool's arguments.
type CommandsArgs struct {
	Target string `json:"target,omitempty" jsonschema:"a configured target name (default: the default target)"`
	Prefix string `json:"prefix,omitempty" jsonschema:"only commands whose name starts with it, case-insensitive (subcommands are named like config|get)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
	Limit  int    `json:"limit,omitempty" jsonschema:"commands per page (default 25, at most 200)"`
}

// The commands tool's results are the engine's.
type (
	CommandEntry  = respengine.CommandEntry
	CommandsReply = respengine.CommandsReply
)

func (p *Plugin) addCommands() error {
	mcpcore.AddTool(p.host, &mcp.Tool{Name: "commands",
		Description: "The target's live command registry (COMMAND LIST, INFO and DOCS), subcommands (config|get) and module commands included: " +
			"a page of commands sorted by name, each with its COMMAND INFO entry and COMMAND DOCS map; filter by name prefix, follow next_cursor until null.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in CommandsArgs) (any, error) {
			return p.commandsPage(ctx, in)
		}, fastpath.Direct(mcpcore.ToolOptions{}))
	return nil
}

// commandsPage returns one page of a target's registry.
func (p *Plugin) commandsPage(ctx context.Context, in CommandsArgs) (CommandsReply, error) {
	name := in.Target
	if name == "" {
		name = p.cfg.defaultTarget
	}
	t := p.cfg.targets[name]
	if t == nil {
		return CommandsReply{}, &mcpcore.ParamError{Path: "/target", Reason: fmt.Sprintf("%q is not a configured target (configured: %v)", name, p.cfg.names())}
	}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultCommandsLimit
	}
	if limit < 1 || limit > MaxCommandsLimit {
		return CommandsReply{}, &mcpcore.ParamError{Path: "/limit", Reason: fmt.Sprintf("%d is outside [1, %d]", limit, MaxCommandsLimit)}
	}
	out, err := p.cmds.Page(ctx, t, in.Prefix, in.Cursor, limit)
	return out, engineError(err)
}
