package mcpcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// instance serves attach as an embedded plugin named name.
func instance(name string, attach func(h *Host)) Instance {
	return Instance{Name: name, Plugin: &testPlugin{attach: attach}}
}

// connectWith connects an in-memory client with opts to srv, in the
// protocol era given (the SDK's latest by default).
func connectWith(t *testing.T, srv *Server, opts *mcp.ClientOptions, era ...string) *mcp.ClientSession {
	t.Helper()
	var sopts *mcp.ClientSessionOptions
	if len(era) > 0 {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: era[0]}
	}
	cs, ss := connectMemoryWith(t, srv.MCP(), opts, sopts)
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func newServer(t *testing.T, instances ...Instance) *Server {
	t.Helper()
	srv, err := NewServer(t.Context(), Options{Instances: instances, Version: "test", Transport: "memory"})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

func noPrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{}, nil
}

func noResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
}

// TestOptionalCapabilitiesDeclaredOnlyWhenServed: completions and resource
// subscriptions are declared when a plugin serves them, and not otherwise.
func TestOptionalCapabilitiesDeclaredOnlyWhenServed(t *testing.T) {
	plain := connectWith(t, newServer(t, instance("plain", func(h *Host) {
		h.AddPrompt(&mcp.Prompt{Name: "p"}, noPrompt)
		h.AddResource(&mcp.Resource{URI: "plain://r", Name: "r"}, noResource)
	})), nil)
	caps := plain.InitializeResult().Capabilities
	if caps.Completions != nil || caps.Resources == nil || caps.Resources.Subscribe {
		t.Fatalf("without a completer or subscriber: completions %v, resources %+v", caps.Completions, caps.Resources)
	}
	if _, err := plain.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "plain_p"},
		Argument: mcp.CompleteParamsArgument{Name: "a"}}); err == nil {
		t.Fatal("completion/complete answered by a server that declares no completions")
	}

	full := connectWith(t, newServer(t, instance("full", func(h *Host) {
		h.SetCompleter(func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) { return nil, nil })
		h.SetSubscriber(func(context.Context, string, bool) error { return nil })
	})), nil)
	caps = full.InitializeResult().Capabilities
	if caps.Completions == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		t.Fatalf("with a completer and a subscriber: completions %v, resources %+v", caps.Completions, caps.Resources)
	}
}

// TestCompletionRouting: a completion request reaches the completer of the
// plugin owning the prompt or template; another plugin's prompt gets no
// values; an unknown reference is an error naming it.
func TestCompletionRouting(t *testing.T) {
	srv := newServer(t,
		instance("a", func(h *Host) {
			h.AddPrompt(&mcp.Prompt{Name: "city", Arguments: []*mcp.PromptArgument{{Name: "name"}}}, noPrompt)
			h.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "a://cities/{name}", Name: "cities"}, noResource)
			h.SetCompleter(func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				ref := req.Params.Ref
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
					Values: []string{ref.Type + " " + ref.Name + ref.URI + " " + req.Params.Argument.Value + "ris"}}}, nil
			})
		}),
		instance("b", func(h *Host) { h.AddPrompt(&mcp.Prompt{Name: "other"}, noPrompt) }))
	cs := connectWith(t, srv, nil)
	complete := func(ref *mcp.CompleteReference) ([]string, error) {
		res, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "name", Value: "pa"}})
		if err != nil {
			return nil, err
		}
		return res.Completion.Values, nil
	}
	for ref, want := range map[*mcp.CompleteReference]string{
		{Type: "ref/prompt", Name: "a_city"}:             "ref/prompt a_city paris",
		{Type: "ref/resource", URI: "a://cities/{name}"}: "ref/resource a://cities/{name} paris",
	} {
		if got, err := complete(ref); err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("complete %+v = %q, %v; want [%q]", ref, got, err, want)
		}
	}
	if got, err := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "b_other"}); err != nil || got == nil || len(got) != 0 {
		t.Errorf("complete a prompt of a plugin without a completer = %q, %v; want no values", got, err)
	}
	if _, err := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}); err == nil || !strings.Contains(err.Error(), `no prompt named "nope"`) {
		t.Errorf("complete an unknown prompt: %v", err)
	}
}

// TestSubscriptionRouting: subscribe and unsubscribe reach the subscriber
// of the plugin serving the resource (or a template matching it), in both
// eras (resources/subscribe; subscriptions/listen); ResourceUpdated
// notifies the subscribed client; resources of a plugin without a
// subscriber, and unknown ones, refuse (checked in the legacy era, where
// the refusal is the subscribe request's answer; a 2026-07-28 client sees
// it on its listen stream).
func TestSubscriptionRouting(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) { testSubscriptionRouting(t, era) })
	}
}

func testSubscriptionRouting(t *testing.T, era string) {
	type call struct {
		uri       string
		subscribe bool
	}
	calls := make(chan call, 10)
	var host *Host
	srv := newServer(t,
		instance("a", func(h *Host) {
			host = h
			h.AddResource(&mcp.Resource{URI: "a://watched", Name: "watched"}, noResource)
			h.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "a://items/{id}", Name: "items"}, noResource)
			h.SetSubscriber(func(_ context.Context, uri string, subscribe bool) error {
				if uri == "a://items/forbidden" {
					return errors.New("not this one")
				}
				calls <- call{uri, subscribe}
				return nil
			})
		}),
		instance("b", func(h *Host) { h.AddResource(&mcp.Resource{URI: "b://r", Name: "r"}, noResource) }))
	updated := make(chan string, 10)
	cs := connectWith(t, srv, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}}, era)
	next := func(what string) call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("the subscriber was not called for %s", what)
			return call{}
		}
	}
	for _, uri := range []string{"a://watched", "a://items/7"} {
		if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
		if c := next("subscribe " + uri); c != (call{uri, true}) {
			t.Fatalf("subscriber saw %+v for subscribe %s", c, uri)
		}
	}
	// In the 2026-07-28 era Subscribe returns once its subscriptions/listen
	// request is sent, and the SDK registers the subscription only after
	// the subscriber has returned: the update is sent again until it
	// arrives (at once in the 2025-11-25 era, whose Subscribe waits).
	deadline := time.After(5 * time.Second)
	retry := time.NewTicker(20 * time.Millisecond)
	defer retry.Stop()
	for arrived := false; !arrived; {
		if err := host.ResourceUpdated(t.Context(), "a://watched"); err != nil {
			t.Fatal(err)
		}
		select {
		case uri := <-updated:
			if uri != "a://watched" {
				t.Fatalf("updated %s", uri)
			}
			arrived = true
		case <-retry.C:
		case <-deadline:
			t.Fatal("no resources/updated notification")
		}
	}
	if err := cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "a://watched"}); err != nil {
		t.Fatal(err)
	}
	if c := next("unsubscribe"); c != (call{"a://watched", false}) {
		t.Fatalf("subscriber saw %+v for unsubscribe", c)
	}
	if era != "2025-11-25" {
		return
	}
	for uri, want := range map[string]string{
		"b://r":               "does not support subscriptions",
		"a://nowhere":         "not found",
		"a://items/forbidden": "not this one",
	} {
		if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("subscribe %s: %v, want an error saying %q", uri, err, want)
		}
	}
}

// TestAddWhileServing: a plugin adds a tool and a prompt while serving;
// clients are told the lists changed and can call the new tool; adding a
// name the plugin owns again replaces it; another plugin's name is refused.
func TestAddWhileServing(t *testing.T) {
	var a *Host
	srv := newServer(t,
		instance("a", func(h *Host) { a = h }),
		instance("b", func(h *Host) {
			AddTool(h, &mcp.Tool{Name: "taken"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return Text("b's"), nil })
		}))
	changed := make(chan string, 10)
	cs := connectWith(t, srv, &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { changed <- "tools" },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- "prompts" },
	})
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-changed:
			if got != want {
				t.Fatalf("list changed: %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s/list_changed", want)
		}
	}
	for _, answer := range []string{"first", "second"} {
		AddTool(a, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return Text(answer), nil })
		wait("tools")
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "a_late"})
		if err != nil || text(res) != answer {
			t.Fatalf("a_late after adding it answering %q: %v %q", answer, err, text(res))
		}
	}
	a.AddPrompt(&mcp.Prompt{Name: "late"}, noPrompt)
	wait("prompts")
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "a_late"}); err != nil {
		t.Fatal(err)
	}
	// Another plugin's name: refused (logged), b's tool unchanged.
	a.prefix = "b"
	AddTool(a, &mcp.Tool{Name: "taken"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return Text("a's"), nil })
	a.prefix = "a"
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "b_taken"}); err != nil || text(res) != "b's" {
		t.Fatalf("b_taken after a's refused addition: %v %q", err, text(res))
	}
	if tools := srv.Info().Plugins[0].Tools; len(tools) != 1 || tools[0] != "a_late" {
		t.Fatalf("a's tools in mcpkit://info: %v", tools)
	}
}

// TestToolReturnsCallToolResult: a handler's own CallToolResult (content
// that is not JSON, input requests) is returned as it is, and one larger
// than inline_result_bytes is paged whole with format mcp_result.
func TestToolReturnsCallToolResult(t *testing.T) {
	png := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 8)
	big := &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: bytes.Repeat(png, 1024), MIMEType: "image/png"}, &mcp.TextContent{Text: "caption"}}}
	srv := newServer(t, instance("a", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "image"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}}, nil
		})
		AddTool(h, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return big, nil })
		AddTool(h, &mcp.Tool{Name: "nil"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) {
			return (*mcp.CallToolResult)(nil), nil
		})
	}))
	srv.limits.InlineResultBytes = 16 * KiB
	r := &rig{srv: srv, cs: connectWith(t, srv, nil)}

	res := r.call(t, "a_image", nil)
	if img, ok := res.Content[0].(*mcp.ImageContent); res.IsError || len(res.Content) != 1 || !ok || !bytes.Equal(img.Data, png) || img.MIMEType != "image/png" {
		t.Fatalf("image result = %+v", res)
	}

	res = r.call(t, "a_big", nil)
	var ref pagedResult
	if err := json.Unmarshal([]byte(text(res)), &ref); err != nil || ref.Format != "mcp_result" {
		t.Fatalf("big result = %q, want a paged reference of format mcp_result (%v)", text(res), err)
	}
	var back mcp.CallToolResult
	if err := json.Unmarshal(r.readPaged(t, "a_result", ref), &back); err != nil {
		t.Fatal(err)
	}
	if img, ok := back.Content[0].(*mcp.ImageContent); !ok || !bytes.Equal(img.Data, big.Content[0].(*mcp.ImageContent).Data) || text(&back) != "caption" {
		t.Fatalf("the paged result read back differs: %d blocks", len(back.Content))
	}

	if d := errorKind(t, r.call(t, "a_nil", nil)); d.Kind != KindInternal {
		t.Fatalf("a nil result: %+v", d)
	}
}
