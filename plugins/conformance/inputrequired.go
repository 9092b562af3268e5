package conformance

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The 2026-07-28 multi-round-trip tools (SEP-2322): instead of calling the
// client while it runs, a tool answers with input requests (elicitation,
// sampling, roots) and an opaque request state; the client calls it again
// with the responses and the state. The state is the server's memory
// between rounds, so it is signed: a state the client altered is refused.

// stateKey signs request states; it lives as long as the process.
var stateKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// seal returns payload with its signature.
func seal(payload string) string {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte(payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// open returns the payload of a state seal made, or false when the state
// is not one (altered, or from another process).
func open(state string) (string, bool) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 {
		return "", false
	}
	payload := state[:i]
	return payload, hmac.Equal([]byte(seal(payload)), []byte(state))
}

// badState is the error for a request state that fails verification.
var badState = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState: it fails integrity verification"}

// accepted returns the content of the elicitation response under key when
// the user accepted it.
func accepted(responses mcp.InputResponseMap, key string) map[string]any {
	if r, ok := responses[key].(*mcp.ElicitResult); ok && r != nil && r.Action == "accept" {
		return r.Content
	}
	return nil
}

// sampled returns the text of the sampling response under key.
func sampled(responses mcp.InputResponseMap, key string) (string, bool) {
	r, ok := responses[key].(*mcp.CreateMessageWithToolsResult)
	if !ok || r == nil {
		return "", false
	}
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text, true
		}
	}
	return "(non-text response)", true
}

func objectSchema(field, typ string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{field: {Type: typ}}, Required: []string{field}}
}

func askName(message string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: message, RequestedSchema: objectSchema("name", "string")}
}

func askSample(prompt string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}}, MaxTokens: maxTokens}
}

func askConfirm() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "Please confirm", RequestedSchema: objectSchema("ok", "boolean")}
}

func inputRequired(reqs mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
}

func addInputRequiredTools(h *mcpcore.Host) {
	tool := func(name, description string, fn func(p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error)) {
		mcpcore.AddTool(h, &mcp.Tool{Name: name, Description: description},
			func(_ context.Context, req *mcp.CallToolRequest, _ none) (any, error) { return fn(req.Params) })
	}
	tool("test_input_required_result_elicitation", "Asks for the caller's name through an input request (elicitation), then greets them.",
		func(p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
			if name, _ := accepted(p.InputResponses, "user_name")["name"].(string); name != "" {
				return text("Hello, " + name + "!"), nil
			}
			return inputRequired(mcp.InputRequestMap{"user_name": askName("What is your name?")}, ""), nil
		})
	tool("test_input_required_result_sampling", "Asks the client's model a question through an input request (sampling).",
		func(p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
			if answer, ok := sampled(p.InputResponses, "capital_question"); ok {
				return text("Sampling response: " + answer), nil
			}
			return inputRequired(mcp.InputRequestMap{"capital_question": askSample("What is the capital of France?", 100)}, ""), nil
		})
	tool("test_input_required_result_list_roots", "Asks for the client's roots through an input request (roots/list).",
		func(p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
			if r, ok := p.InputResponses["client_roots"].(*mcp.ListRootsResult); ok && r != nil {
				uris := make([]string, len(r.Roots))
				for i, root := range r.Roots {
					uris[i] = root.URI
				}
				return text(fmt.Sprintf("Client exposed %d root(s): %s", len(r.Roots), strings.Join(uris, ", "))), nil
			}
			return inputRequired(mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, ""), nil
		})
	confirmWithState := func(payload string) func(p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
		return func(p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
			if p.RequestState != "" {
				if got, ok := open(p.RequestState); !ok || got != payload {
					return nil, badState
				}
				if accepted(p.InputResponses, "confirm") != nil {
					return text("state-ok: requestState received and confirmation accepted"), nil
				}
			}
			return inputRequired(mcp.InputRequestMap{"confirm": askConfirm()}, seal(payload)), nil
		}
	}
	tool("test_input_required_result_request_state", "Round-trips a signed request state beside a confirmation request.", confirmWithState("request_state"))
	tool("test_input_required_result_tampered_state", "Refuses a retry whose request state was altered (it is signed).", confirmWithState("tampered_state"))
	tool("test_input_required_result_multiple_inputs", "Asks for a name, a model's greeting and the roots in one round.",
		func(p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
			name, _ := accepted(p.InputResponses, "user_name")["name"].(string)
			greeting, sampledOK := sampled(p.InputResponses, "greeting")
			roots, rootsOK := p.InputResponses["client_roots"].(*mcp.ListRootsResult)
			if name != "" && sampledOK && rootsOK && roots != nil {
				return text(fmt.Sprintf("%s %s — %d root(s) visible", greeting, name, len(roots.Roots))), nil
			}
			return inputRequired(mcp.InputRequestMap{
				"user_name":    askName("What is your name?"),
				"greeting":     askSample("Generate a greeting", 50),
				"client_roots": &mcp.ListRootsParams{},
			}, seal("multiple_inputs")), nil
		})
	tool("test_input_required_result_multi_round", "Two rounds of elicitation, the first answer carried in the signed request state.",
		func(p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
			if p.RequestState == "" {
				return inputRequired(mcp.InputRequestMap{"step1": askName("Step 1: What is your name?")}, seal("round=1")), nil
			}
			state, ok := open(p.RequestState)
			if !ok {
				return nil, badState
			}
			if state == "round=1" {
				name, _ := accepted(p.InputResponses, "step1")["name"].(string)
				if name == "" {
					name = "unknown"
				}
				return inputRequired(mcp.InputRequestMap{"step2": &mcp.ElicitParams{
					Message: "Step 2: What is your favorite color?", RequestedSchema: objectSchema("color", "string"),
				}}, seal("round=2;name="+name)), nil
			}
			name, ok := strings.CutPrefix(state, "round=2;name=")
			if !ok {
				return nil, badState
			}
			color, _ := accepted(p.InputResponses, "step2")["color"].(string)
			if color == "" {
				color = "unknown"
			}
			return text(fmt.Sprintf("Multi-round complete: %s likes %s", name, color)), nil
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "test_input_required_result_capabilities", Description: "Asks only for the kinds of input the client's declared capabilities cover."},
		func(_ context.Context, req *mcp.CallToolRequest, _ none) (any, error) {
			if len(req.Params.InputResponses) > 0 {
				return text("Capability-aware input requests fulfilled"), nil
			}
			caps := req.ClientCapabilities()
			reqs := mcp.InputRequestMap{}
			if caps != nil && caps.Elicitation != nil {
				reqs["user_name"] = askName("What is your name?")
			}
			if caps != nil && caps.Sampling != nil {
				reqs["greeting"] = askSample("Generate a short greeting", 50)
			}
			if caps != nil && (caps.RootsV2 != nil || caps.Roots.ListChanged) {
				reqs["client_roots"] = &mcp.ListRootsParams{}
			}
			if len(reqs) == 0 {
				return text("No declared client capability supports an in-band input request"), nil
			}
			return inputRequired(reqs, ""), nil
		})
}
