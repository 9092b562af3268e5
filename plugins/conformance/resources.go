package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addResources adds a text resource, a binary one, a template and the
// watched resource (announced as updated every watchedEvery).
func addResources(h *mcpcore.Host) {
	contents := func(c *mcp.ResourceContents) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}
	}
	h.AddResource(&mcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource.", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return contents(&mcp.ResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "This is the content of the static text resource."}), nil
		})
	h.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource (a PNG).", MIMEType: "image/png"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return contents(&mcp.ResourceContents{URI: req.Params.URI, MIMEType: "image/png", Blob: pngData}), nil
		})
	h.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", Description: "A JSON document per id.", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			id, ok := strings.CutPrefix(uri, "test://template/")
			if id, ok = strings.CutSuffix(id, "/data"); !ok || id == "" || strings.Contains(id, "/") {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			data, err := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": fmt.Sprintf("Data for ID: %s", id)})
			if err != nil {
				return nil, err
			}
			return contents(&mcp.ResourceContents{URI: uri, MIMEType: "application/json", Text: string(data)}), nil
		})
	h.AddResource(&mcp.Resource{URI: watchedURI, Name: "watched-resource", Description: "A resource announced as updated every 3 seconds (subscribe to it).", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return contents(&mcp.ResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "Watched resource content"}), nil
		})
}

// addPrompts adds prompts without and with arguments, with an embedded
// resource, with an image, and one that asks for input first (SEP-2322).
func addPrompts(h *mcpcore.Host) {
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	h.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A prompt without arguments."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A simple test prompt",
				Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
		})
	h.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with two required arguments.",
		Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := req.Params.Arguments
			return &mcp.GetPromptResult{Description: "A prompt with arguments",
				Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])})}}, nil
		})
	h.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt embedding the resource named by its argument.",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an embedded resource", Messages: []*mcp.PromptMessage{
				user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}),
				user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
			}}, nil
		})
	h.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt with an image."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an image", Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: pngData, MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."}),
			}}, nil
		})
	h.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "Asks for context through an input request (SEP-2322), then returns it as a message."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if ctxText, ok := accepted(req.Params.InputResponses, "user_context")["context"].(string); ok {
				return &mcp.GetPromptResult{Description: "A prompt with elicited context",
					Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "Context: " + ctxText})}}, nil
			}
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": &mcp.ElicitParams{
				Message: "Please provide context for the prompt", RequestedSchema: objectSchema("context", "string"),
			}}}, nil
		})
}
