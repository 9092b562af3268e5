package resp

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
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
	Detail string `json:"detail,omitempty" jsonschema:"compact (default): per command name, summary, syntax (the arguments by name), arity, flags, group, since, as plain JSON; full: the lossless COMMAND INFO entry and COMMAND DOCS map (key specs, tips, argument tree, history)"`
}

// The values of the commands tool's detail argument.
const (
	DetailCompact = "compact"
	DetailFull    = "full"
)

// The commands tool's results are the engine's.
type (
	CommandEntry         = respengine.CommandEntry
	CommandsReply        = respengine.CommandsReply
	CompactCommand       = respengine.CompactCommand
	CompactCommandsReply = respengine.CompactCommandsReply
)

func (p *Plugin) addCommands() error {
	schema, err := jsonschema.For[CommandsArgs](nil)
	if err != nil {
		return fmt.Errorf("commands schema: %w", err)
	}
	schema.Properties["detail"].Enum = []any{DetailCompact, DetailFull}
	mcpcore.AddTool(p.host, &mcp.Tool{Name: "commands", InputSchema: schema,
		Description: "The target's live command registry (COMMAND LIST, INFO and DOCS), subcommands (config|get) and module commands included: " +
			"a page of commands sorted by name, each by default as {name, summary, syntax, arity, flags, group, since} in plain JSON; " +
			"detail: \"full\" returns each command's lossless COMMAND INFO entry and COMMAND DOCS map instead. Filter by name prefix, follow next_cursor until null.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in CommandsArgs) (any, error) {
			return p.commandsPage(ctx, in)
		}, fastpath.Direct(mcpcore.ToolOptions{}))
	return nil
}

// commandsPage returns one page of a target's registry, in the form
// in.Detail names: a CompactCommandsReply by default, a CommandsReply for
// "full".
func (p *Plugin) commandsPage(ctx context.Context, in CommandsArgs) (any, error) {
	if in.Detail != "" && in.Detail != DetailCompact && in.Detail != DetailFull {
		return nil, &mcpcore.ParamError{Path: "/detail", Reason: fmt.Sprintf("%q is not %s or %s", in.Detail, DetailCompact, DetailFull)}
	}
	page, err := p.registryPage(ctx, in)
	if err != nil {
		return nil, err
	}
	if in.Detail == DetailFull {
		return page, nil
	}
	return page.Compact(), nil
}

// registryPage returns one page of a target's registry, in the lossless form.
func (p *Plugin) registryPage(ctx context.Context, in CommandsArgs) (CommandsReply, error) {
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
