package actions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the MCP name of an action (before the plugin's prefix):
// its name with ':' as '-' ("user:create" → "user-create").
func ToolName(actionName string) string { return strings.ReplaceAll(actionName, ":", "-") }

// rawArgs takes a tool call's arguments as they came: [action.App.Run]
// validates and decodes them against the same schema the tool advertises
// (once, on the one path every transport shares), and its refusals become
// the call's bad_params errors ([toolError]).
type rawArgs struct{ raw json.RawMessage }

var _ fastpath.ArgumentsDecoder = (*rawArgs)(nil)

// DecodeArguments implements fastpath.ArgumentsDecoder.
func (a *rawArgs) DecodeArguments(raw json.RawMessage) error {
	a.raw = raw
	return nil
}

// addTool serves act as a tool.
func (p *Plugin) addTool(act *action.Action) {
	name := act.Name
	markdown := act.MCP.ResponseFormat == action.FormatMarkdown
	tool := &mcp.Tool{Name: ToolName(name), Description: act.Description, InputSchema: act.InputSchema()}
	mcpcore.AddTool(p.host, tool, func(ctx context.Context, req *mcp.CallToolRequest, in rawArgs) (any, error) {
		out, err := p.app.Run(ctx, p.conn(req), name, in.raw)
		if err != nil {
			return nil, toolError(err)
		}
		if !markdown {
			return out, nil
		}
		data, err := json.Marshal(out)
		if err != nil {
			return nil, mcpcore.Errorf(mcpcore.KindInternal, "action %s: serialize the result: %w", name, err)
		}
		md, err := RenderMarkdown(data, p.cfg.MarkdownDepthLimit)
		if err != nil {
			return nil, mcpcore.Errorf(mcpcore.KindInternal, "action %s: %w", name, err)
		}
		return mcpcore.Text(md), nil // as is: no JSON quoting, no structuredContent
	}, mcpcore.ToolOptions{Timeout: min(act.EffectiveTimeout(), mcpcore.MaxToolTimeout)})
}

// conn is the connection an MCP request runs an action for.
func (p *Plugin) conn(req mcp.Request) *action.Conn {
	c := &action.Conn{Type: "mcp", Principal: mcpcore.Principal(req)}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		c.ID = ss.ID()
	}
	return c
}

// toolError turns an action's error into the host's: a missing or invalid
// param is bad_params with the param's JSON Pointer (the kind the host
// gives every argument error, so an agent handles one kind for all
// plugins), any other [*action.Error] keeps its kind (not_found, timeout,
// conflict, ...) and its message, never its cause.
func toolError(err error) error {
	var ae *action.Error
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Kind {
	case action.KindMissingParam, action.KindInvalidParam:
		pe := &mcpcore.ParamError{Reason: string(ae.Kind) + ": " + ae.Message}
		if ae.Field != "" {
			pe.Path = "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(ae.Field)
		}
		return pe
	}
	return &mcpcore.KindError{Kind: string(ae.Kind), Err: errors.New(ae.Message)}
}
