package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// none is the input of a tool without arguments.
type none struct{}

// fixed returns a handler that always answers r.
func fixed(r func() *mcp.CallToolResult) mcpcore.ToolFunc[none] {
	return func(context.Context, *mcp.CallToolRequest, none) (any, error) { return r(), nil }
}

// addContentTools adds the tools whose results are content blocks of each
// kind, and the one that fails.
func addContentTools(h *mcpcore.Host) {
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_simple_text", Description: "Returns one text block."},
		fixed(func() *mcp.CallToolResult { return text("This is a simple text response for testing.") }))
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_image_content", Description: "Returns one image block (a 1×1 PNG)."},
		fixed(func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: pngData, MIMEType: "image/png"}}}
		}))
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_audio_content", Description: "Returns one audio block (a silent WAV)."},
		fixed(func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: wavData, MIMEType: "audio/wav"}}}
		}))
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_embedded_resource", Description: "Returns one embedded text resource."},
		fixed(func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{embedded("test://embedded-resource")}}
		}))
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_multiple_content_types", Description: "Returns a text, an image and an embedded resource block."},
		fixed(func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "This is text content"},
				&mcp.ImageContent{Data: pngData, MIMEType: "image/png"},
				embedded("test://embedded-in-multiple"),
			}}
		}))
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_error_handling", Description: "Always fails (an isError result)."},
		func(context.Context, *mcp.CallToolRequest, none) (any, error) {
			return nil, errors.New("this tool intentionally returns an error for testing")
		})
}

func embedded(uri string) *mcp.EmbeddedResource {
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "This is an embedded resource"}}
}

// addClientRequestTools adds the tools that talk back to the client while
// they run: log messages, progress, sampling, elicitation, and a response
// stream closed mid-call.
func addClientRequestTools(h *mcpcore.Host) {
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_tool_with_logging", Description: "Sends three info log messages while it runs."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (any, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg}); err != nil {
					return nil, err
				}
			}
			return text("Tool with logging executed successfully"), nil
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_tool_with_progress", Description: "Sends progress 0, 50 and 100 of 100, then returns the progress token."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (any, error) {
			token := req.Params.GetProgressToken()
			for _, done := range []float64{0, 50, 100} {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: done, Total: 100, Message: fmt.Sprintf("Completed step %.0f of 100", done),
				}); err != nil {
					return nil, err
				}
				time.Sleep(50 * time.Millisecond)
			}
			return text(fmt.Sprint(token)), nil
		})
	type samplingIn struct {
		Prompt string `json:"prompt" jsonschema:"the prompt to send to the client's model"`
	}
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_sampling", Description: "Asks the client's model to complete the prompt (sampling/createMessage) and returns its answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in samplingIn) (any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}, MaxTokens: 100,
			})
			if err != nil {
				return nil, fmt.Errorf("sampling failed: %w", err)
			}
			answer := "(non-text response)"
			if t, ok := res.Content.(*mcp.TextContent); ok {
				answer = t.Text
			}
			return text("LLM response: " + answer), nil
		})
	type elicitIn struct {
		Message string `json:"message" jsonschema:"the message to show the user"`
	}
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username (elicitation/create) and returns the answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in elicitIn) (any, error) {
			return elicit(ctx, req, in.Message, &jsonschema.Schema{Type: "object",
				Properties: map[string]*jsonschema.Schema{"username": {Type: "string", Description: "Your preferred username"}},
				Required:   []string{"username"}})
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits fields of every primitive type with defaults (SEP-1034)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (any, error) {
			return elicit(ctx, req, "Test defaults for primitives", json.RawMessage(`{"type": "object", "properties": {
				"name": {"type": "string", "description": "User name", "default": "John Doe"},
				"age": {"type": "integer", "description": "User age", "default": 30},
				"score": {"type": "number", "description": "User score", "default": 95.5},
				"status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
				"verified": {"type": "boolean", "description": "Verification status", "default": true}}}`))
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits every enum form: plain, titled, legacy enumNames, multi-select (SEP-1330)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (any, error) {
			titled := `[{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]`
			return elicit(ctx, req, "Test enum schemas", json.RawMessage(`{"type": "object", "properties": {
				"untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
				"titledSingle": {"type": "string", "oneOf": `+titled+`},
				"legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
				"untitledMulti": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
				"titledMulti": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"anyOf": `+titled+`}}}}`))
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_reconnection", Description: "Closes the response stream mid-call and answers after the client reconnects (SEP-1699)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (any, error) {
			if req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return text("Reconnection test completed successfully."), nil
		})
}

// elicit asks the user for input with schema and reports the answer.
func elicit(ctx context.Context, req *mcp.CallToolRequest, message string, schema any) (any, error) {
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: schema})
	if err != nil {
		return nil, fmt.Errorf("elicitation failed: %w", err)
	}
	return text(fmt.Sprintf("Elicitation result: action=%s, content=%v", res.Action, res.Content)), nil
}

// addSchemaTools adds the tools whose input schemas the suite inspects.
func addSchemaTools(h *mcpcore.Host) {
	mcpcore.AddTool(h, &mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Declares an input schema with JSON Schema 2020-12 features ($schema, $defs, $anchor, $ref, allOf/anyOf, if/then/else) that must survive tools/list as written (SEP-1613, SEP-2106).",
		InputSchema: json.RawMessage(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object",
			"$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
			"properties": {
				"name": {"type": "string"},
				"address": {"$ref": "#/$defs/address"},
				"contactMethod": {"type": "string", "enum": ["phone", "email"]},
				"phone": {"type": "string"},
				"email": {"type": "string"}
			},
			"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
			"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
			"then": {"required": ["phone"]},
			"else": {"required": ["email"]},
			"additionalProperties": false
		}`)},
		func(_ context.Context, _ *mcp.CallToolRequest, in json.RawMessage) (any, error) {
			return text(fmt.Sprintf("JSON Schema 2020-12 tool called with: %s", in)), nil
		})
	type headerIn struct {
		Region string `json:"region,omitempty"`
		Level  int    `json:"level,omitempty"`
	}
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_x_mcp_header", Description: "Mirrors its region argument into the Mcp-Param-Region header (SEP-2243).",
		InputSchema: json.RawMessage(`{"type": "object", "properties": {
			"region": {"type": "string", "description": "mirrored into Mcp-Param-Region", "x-mcp-header": "Region"},
			"level": {"type": "integer", "description": "non-mirrored argument"}}}`)},
		func(_ context.Context, _ *mcp.CallToolRequest, in headerIn) (any, error) {
			return text("region=" + in.Region), nil
		})
}

// addStatelessTools adds the diagnostic tools of the 2026-07-28
// server-stateless scenario (SEP-2575).
func addStatelessTools(h *mcpcore.Host) {
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_missing_capability", Description: "Needs the client's sampling capability; without it fails with -32021 naming it (SEP-2575)."},
		func(_ context.Context, req *mcp.CallToolRequest, _ none) (any, error) {
			if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
				return text("Client declared the sampling capability; tool executed."), nil
			}
			data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{
				RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
			})
			if err != nil {
				return nil, err
			}
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling capability required but not declared by client", Data: data}
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_streaming_elicitation", Description: "Returns a plain result: its response stream carries no independent requests (SEP-2575)."},
		fixed(func() *mcp.CallToolResult { return text("stream observed: result frames only, no top-level requests") }))
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_logging_tool", Description: "Attempts a log message, which is dropped unless the request set a log level (SEP-2575)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (any, error) {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "test_logging_tool executed"}); err != nil {
				return nil, err
			}
			return text("Log attempted; it is sent only when the client set a log level."), nil
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_trigger_tool_change", Description: "Adds (again) a transient tool while serving, so that clients are told the tool list changed (SEP-2575)."},
		func(context.Context, *mcp.CallToolRequest, none) (any, error) {
			mcpcore.AddTool(h, &mcp.Tool{Name: "transient_tool_for_list_changed", Description: "Exists to change the tool list."},
				fixed(func() *mcp.CallToolResult { return text("transient") }))
			return text("tools_list_changed published"), nil
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_trigger_prompt_change", Description: "Adds (again) a transient prompt while serving, so that clients are told the prompt list changed (SEP-2575)."},
		func(context.Context, *mcp.CallToolRequest, none) (any, error) {
			h.AddPrompt(&mcp.Prompt{Name: "transient_prompt_for_list_changed", Description: "Exists to change the prompt list."},
				func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{}, nil
				})
			return text("prompts_list_changed published"), nil
		})
}
