package actions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// resourceResult is what a resource action returns: exactly
// one of text and blob (base64), and optionally a MIME type (default: the
// resource's).
type resourceResult struct {
	Text     *string `json:"text"`
	Blob     *string `json:"blob"`
	MIMEType string  `json:"mimeType"`
}

// addResource serves act as a resource (a fixed URI) or a resource
// template, whose variables are passed to the action as params.
func (p *Plugin) addResource(act *action.Action) error {
	r := act.MCP.Resource
	if r.URI != "" {
		p.host.AddResource(&mcp.Resource{URI: r.URI, Name: act.Name, Description: act.Description, MIMEType: r.MIMEType},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return p.readResource(ctx, req, act, r, json.RawMessage("{}"))
			})
		return nil
	}
	tmpl, err := uritemplate.New(r.URITemplate)
	if err != nil {
		return fmt.Errorf("action %s: resource template %q: %w", act.Name, r.URITemplate, err)
	}
	p.host.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: r.URITemplate, Name: act.Name, Description: act.Description, MIMEType: r.MIMEType},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			vars := tmpl.Match(req.Params.URI)
			if vars == nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			params := map[string]string{}
			for _, name := range tmpl.Varnames() {
				if v := vars.Get(name); v.Valid() {
					params[name] = v.String()
				}
			}
			raw, err := json.Marshal(params)
			if err != nil {
				return nil, err
			}
			return p.readResource(ctx, req, act, r, raw)
		})
	return nil
}

// readResource runs a resource action and shapes its result as the
// resource's contents. An action that finds nothing (not_found) answers
// the protocol's resource-not-found error.
func (p *Plugin) readResource(ctx context.Context, req *mcp.ReadResourceRequest, act *action.Action, r *action.Resource, params json.RawMessage) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	out, err := p.app.Run(ctx, p.conn(req), act.Name, params)
	if err != nil {
		var ae *action.Error
		if errors.As(err, &ae) && ae.Kind == action.KindNotFound {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, fmt.Errorf("resource %s: %w", uri, err)
	}
	var res resourceResult
	if err := roundTrip(out, &res); err != nil || (res.Text == nil) == (res.Blob == nil) {
		return nil, fmt.Errorf("resource %s: action %s must return {text, mimeType} or {blob (base64), mimeType}", uri, act.Name)
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: res.MIMEType}
	if c.MIMEType == "" {
		c.MIMEType = r.MIMEType
	}
	if res.Text != nil {
		c.Text = *res.Text
	} else if c.Blob, err = base64.StdEncoding.DecodeString(*res.Blob); err != nil {
		return nil, fmt.Errorf("resource %s: action %s returned a blob that is not base64: %w", uri, act.Name, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// addPrompt serves act as a prompt: its inputs are the prompt's arguments
// (passed to the action as strings), its result the prompt's messages.
func (p *Plugin) addPrompt(act *action.Action) {
	prompt := &mcp.Prompt{Name: ToolName(act.Name), Title: act.MCP.Prompt.Title, Description: act.Description, Arguments: promptArguments(act.InputSchema())}
	p.host.AddPrompt(prompt, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		raw, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		out, err := p.app.Run(ctx, p.conn(req), act.Name, raw)
		if err != nil {
			return nil, fmt.Errorf("prompt %s: %w", prompt.Name, err)
		}
		var res mcp.GetPromptResult
		if err := roundTrip(out, &res); err != nil || len(res.Messages) == 0 {
			return nil, fmt.Errorf("prompt %s: action %s must return {description, messages: [{role, content}]} with at least one message", prompt.Name, act.Name)
		}
		return &res, nil
	})
}

// promptArguments lists an input schema's properties as prompt arguments,
// in name order.
func promptArguments(s *jsonschema.Schema) []*mcp.PromptArgument {
	var out []*mcp.PromptArgument
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		out = append(out, &mcp.PromptArgument{Name: name, Description: s.Properties[name].Description, Required: slices.Contains(s.Required, name)})
	}
	return out
}

// roundTrip converts an action's result into v through its JSON.
func roundTrip(out any, v any) error {
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
