package mcpcore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logBuffer collects a server's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

type item struct {
	Name  string `json:"name"`
	Count int    `json:"count,omitempty"`
}

type itemsArgs struct {
	Items []item `json:"items"`
	Mode  string `json:"mode,omitempty"`
}

// TestBadParams: arguments that break the input schema fail the call with
// kind bad_params and the offending argument's path, before the handler
// runs, for every way they can be wrong.
func TestBadParams(t *testing.T) {
	registerTestPlugins()
	var ran sync.WaitGroup
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "items"}, func(ctx context.Context, _ *mcp.CallToolRequest, in itemsArgs) (any, error) {
			ran.Add(1) // the test fails on any call that reaches here but should not
			defer ran.Done()
			return map[string]int{"items": len(in.Items)}, nil
		})
	})
	r := newRig(t, DefaultLimits(), "ta")
	for _, tc := range []struct {
		name, args, path, reason string
	}{
		{"wrong type deep", `{"items":[{"name":"a"},{"name":"b"},{"name":3}]}`, "/items/2/name", "got integer 3, want string"},
		{"unknown field deep", `{"items":[{"name":"a","extra":1}]}`, "/items/0/extra", "unexpected argument"},
		{"unknown field", `{"items":[],"colour":"red"}`, "/colour", "unexpected argument"},
		{"field in another case", `{"Items":[]}`, "/Items", "unexpected argument"},
		{"missing required", `{}`, "/items", "missing required argument"},
		{"missing required deep", `{"items":[{"count":1}]}`, "/items/0/name", "missing required argument"},
		{"wrong container", `{"items":"x"}`, "/items", `got string "x", want null or array`},
		{"not an object", `[1,2]`, "", "must be a JSON object"},
		{"overflow", `{"items":[{"name":"a","count":1e30}]}`, "/items/0/count", `1e30 is out of range: an integer from -9223372036854775808 to 9223372036854775807`},
		{"key with slash", `{"items":[],"a/b~c":1}`, "/a~1b~0c", "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.call(t, "ta_items", json.RawMessage(tc.args))
			d := errorKind(t, res)
			if d.Kind != KindBadParams || d.Path != tc.path || !strings.Contains(d.Message, tc.reason) {
				t.Fatalf("%s: error %+v, want kind bad_params at %q saying %q", tc.args, d, tc.path, tc.reason)
			}
		})
	}
	ran.Wait()
	if res := r.call(t, "ta_items", json.RawMessage(`{"items":[{"name":"a","count":2}],"mode":"x"}`)); res.IsError || text(res) != `{"items":1}` {
		t.Fatalf("valid arguments: %s", text(res))
	}
	if got := r.srv.Info().Calls; got.Failed != 10 {
		t.Fatalf("calls = %+v, want the 10 bad calls counted as failed", got)
	}
}

// selfDecoded decodes its own arguments: "n" must be a positive integer.
// Its schema allows any integer, so a call reaching the handler with n < 1
// would show the host's generic path in use.
type selfDecoded struct {
	N int `json:"n"`
}

func (a *selfDecoded) DecodeArguments(raw json.RawMessage) error {
	if err := decodeArguments(raw, a); err != nil {
		return err
	}
	switch {
	case a.N == -1:
		return errors.New("minus one is right out")
	case a.N < 1:
		return &ParamError{Path: "/n", Reason: "want a positive integer"}
	}
	return nil
}

// TestArgumentsDecoder: a type that decodes its own arguments gets them
// raw; its ParamError is the call's bad_params, any other error one
// without a path, and decodeArguments names an unknown member's path.
func TestArgumentsDecoder(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "self"}, func(ctx context.Context, _ *mcp.CallToolRequest, in selfDecoded) (any, error) {
			return in, nil
		})
	})
	r := newRig(t, DefaultLimits(), "ta")
	for _, tc := range []struct{ args, path, reason string }{
		{`{"n":0}`, "/n", "want a positive integer"},
		{`{"n":-1}`, "", "minus one is right out"},
		{`{"n":1,"m":2}`, "/m", "unexpected argument"},
		{`{"n":"1"}`, "/n", "got string, want integer"},
		{`{"n":1.5}`, "/n", "1.5 is not an integer"},
		{`{"n":1e30}`, "/n", "1e30 is out of range: an integer from -9223372036854775808 to 9223372036854775807"},
		{`[1]`, "", "must be a JSON object"},
	} {
		d := errorKind(t, r.call(t, "ta_self", json.RawMessage(tc.args)))
		if d.Kind != KindBadParams || d.Path != tc.path || !strings.Contains(d.Message, tc.reason) {
			t.Errorf("%s: error %+v, want kind bad_params at %q saying %q", tc.args, d, tc.path, tc.reason)
		}
	}
	if res := r.call(t, "ta_self", json.RawMessage(`{"n":3}`)); res.IsError || text(res) != `{"n":3}` {
		t.Fatalf("valid arguments: %s", text(res))
	}
}

// TestSchemaDefaults: a default in a declared input schema reaches the
// handler.
func TestSchemaDefaults(t *testing.T) {
	registerTestPlugins()
	type args struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	setAttach("ta", func(h *Host) {
		schema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
			"n": {Type: "integer", Default: json.RawMessage("7")},
			"s": {Type: "string"},
		}, Required: []string{"s"}}
		AddTool(h, &mcp.Tool{Name: "d", InputSchema: schema}, func(ctx context.Context, _ *mcp.CallToolRequest, in args) (any, error) {
			return in, nil
		})
	})
	r := newRig(t, DefaultLimits(), "ta")
	if res := r.call(t, "ta_d", map[string]any{"s": "x"}); text(res) != `{"n":7,"s":"x"}` {
		t.Fatalf("defaults: %s", text(res))
	}
	if res := r.call(t, "ta_d", map[string]any{"s": "x", "n": 2}); text(res) != `{"n":2,"s":"x"}` {
		t.Fatalf("given value: %s", text(res))
	}
}

type codedError struct{ code string }

func (e codedError) Error() string     { return "coded " + e.code }
func (e codedError) ErrorKind() string { return e.code }

// TestErrorKinds: a plugin's error carries its own kind into
// structuredContent.error.kind, found through wrapping.
func TestErrorKinds(t *testing.T) {
	registerTestPlugins()
	errs := map[string]error{
		"kinded":  Errorf("not_found", "key %q does not exist", "k"),
		"wrapped": fmt.Errorf("lookup: %w", codedError{"conflict"}),
		"param":   &ParamError{Path: "/key", Reason: "must not be empty"},
		"limit":   fmt.Errorf("batch: %w", &LimitError{Limit: "batch_commands", Max: 3, Actual: 4}),
		"plain":   errors.New("boom"),
	}
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "fail"}, func(ctx context.Context, _ *mcp.CallToolRequest, in blockArgs) (any, error) {
			return nil, errs[in.ID]
		})
	})
	r := newRig(t, DefaultLimits(), "ta")
	for id, want := range map[string]ToolErrorDetail{
		"kinded":  {Kind: "not_found", Message: `key "k" does not exist`},
		"wrapped": {Kind: "conflict", Message: "lookup: coded conflict"},
		"param":   {Kind: KindBadParams, Message: "invalid argument /key: must not be empty", Path: "/key"},
		"limit":   {Kind: KindLimit, Message: "batch: limit batch_commands (3) exceeded: needed 4", Limit: "batch_commands", Max: 3},
		"plain":   {Kind: KindOther, Message: "boom"},
	} {
		if got := errorKind(t, r.call(t, "ta_fail", blockArgs{ID: id})); got != want {
			t.Errorf("%s: %+v, want %+v", id, got, want)
		}
	}
}

// TestPanicIsRecovered: a panicking handler fails its call with kind
// internal, logs its stack, counts in mcpkit://info, and every other call
// and session carries on.
func TestPanicIsRecovered(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "boom"}, func(ctx context.Context, _ *mcp.CallToolRequest, in blockArgs) (any, error) {
			if in.ID == "panic" {
				var m map[string]int
				m["x"] = 1 // a nil-map write: a runtime panic, as a real bug would be
			}
			return map[string]string{"id": in.ID}, nil
		})
	})
	logs := &logBuffer{}
	cfg := DefaultConfig()
	r := newRigOpts(t, Options{Config: cfg, Plugins: []string{"ta"}, Logger: logs.logger()})
	res := r.call(t, "ta_boom", blockArgs{ID: "panic"})
	if d := errorKind(t, res); d.Kind != KindInternal || strings.Contains(d.Message, "nil map") {
		t.Fatalf("panic reported as %+v, want kind internal without the panic's text", d)
	}
	if !strings.Contains(logs.String(), "assignment to entry in nil map") || !strings.Contains(logs.String(), "tool_test.go") {
		t.Fatalf("the log lacks the panic and its stack:\n%s", logs)
	}
	if res := r.call(t, "ta_boom", blockArgs{ID: "after"}); res.IsError {
		t.Fatalf("a call after the panic: %s", text(res))
	}
	other, ss := connectMemory(t, r.srv.MCP())
	defer func() { other.Close(); ss.Wait() }()
	if res, err := other.CallTool(t.Context(), &mcp.CallToolParams{Name: "ta_boom", Arguments: blockArgs{ID: "other"}}); err != nil || res.IsError {
		t.Fatalf("another session after the panic: %v %v", err, res)
	}
	if c := r.srv.Info().Calls; c.Panicked != 1 || c.Failed != 1 || c.InFlight != 0 {
		t.Fatalf("calls = %+v, want 1 panicked and failed, none in flight", c)
	}
}

// TestInvalidToolDefinitions: every tool definition the SDK would refuse
// with a panic, or that breaks MCP's rules, is a startup error naming the
// plugin and the tool.
func TestInvalidToolDefinitions(t *testing.T) {
	registerTestPlugins()
	ok := func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return nil, nil }
	for _, tc := range []struct {
		name   string
		attach func(h *Host)
		want   string
	}{
		{"argument type any", func(h *Host) {
			AddTool(h, &mcp.Tool{Name: "x"}, func(context.Context, *mcp.CallToolRequest, any) (any, error) { return nil, nil })
		}, "tool ta_x: input schema: the arguments must be an object"},
		{"argument type slice", func(h *Host) {
			AddTool(h, &mcp.Tool{Name: "x"}, func(context.Context, *mcp.CallToolRequest, []string) (any, error) { return nil, nil })
		}, `"array"`},
		{"declared non-object schema", func(h *Host) {
			AddTool(h, &mcp.Tool{Name: "x", InputSchema: map[string]any{"type": "string"}}, ok)
		}, `not type "string"`},
		{"unresolvable schema", func(h *Host) {
			AddTool(h, &mcp.Tool{Name: "x", InputSchema: map[string]any{"type": "object", "$ref": "#/nowhere"}}, ok)
		}, "input schema"},
		{"invalid name", func(h *Host) { AddTool(h, &mcp.Tool{Name: "x y"}, ok) }, `tool "ta_x y"`},
		{"long timeout", func(h *Host) { AddTool(h, &mcp.Tool{Name: "x"}, ok, ToolOptions{Timeout: 6 * time.Minute}) }, "timeout 6m0s is outside"},
		{"two options", func(h *Host) { AddTool(h, &mcp.Tool{Name: "x"}, ok, ToolOptions{}, ToolOptions{}) }, "more than one ToolOptions"},
		{"non-object output", func(h *Host) {
			AddTool(h, &mcp.Tool{Name: "x", OutputSchema: map[string]any{"type": "array"}}, ok)
		}, "tool ta_x: output schema: must describe an object"},
		{"nil handler", func(h *Host) { AddTool[struct{}](h, &mcp.Tool{Name: "x"}, nil) }, "nil definition or handler"},
		{"resource without scheme", func(h *Host) {
			h.AddResource(&mcp.Resource{URI: "state", Name: "s"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
		}, `resource "state": the URI must be absolute`},
		{"resource the SDK refuses", func(h *Host) {
			h.AddResource(&mcp.Resource{URI: "ta://%zz", Name: "s"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
		}, `resource "ta://%zz": refused by the MCP SDK`},
		{"resource without a name", func(h *Host) {
			h.AddResource(&mcp.Resource{URI: "ta://x"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
		}, "no name"},
		{"template the SDK refuses", func(h *Host) {
			h.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "ta://{bad", Name: "t"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
		}, `resource template "ta://{bad": refused by the MCP SDK`},
		{"prompt without handler", func(h *Host) { h.AddPrompt(&mcp.Prompt{Name: "p"}, nil) }, `prompt "p": nil handler`},
		{"session hook nil", func(h *Host) { h.OnSessionEnd(nil) }, "OnSessionEnd: nil hook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			closed := setAttach("ta", tc.attach)
			_, err := NewServer(t.Context(), Options{Plugins: []string{"ta"}})
			if err == nil || !strings.Contains(err.Error(), "plugin ta: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming plugin ta and saying %q", err, tc.want)
			}
			if !*closed {
				t.Fatal("the plugin was not closed after the failed start")
			}
		})
	}
}

// TestCancelledAndTimedOutKinds: a call whose context ended is reported as
// cancelled or timed out, whatever error its handler returned.
func TestCancelledAndTimedOutKinds(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {})
	r := newRig(t, DefaultLimits(), "ta")
	h := r.srv.hosts[0]
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "ta_x"}}
	ownError := func(ctx context.Context) (any, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("read reply: connection interrupted (%v)", ctx.Err()) // does not wrap ctx.Err()
	}

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	res, err := toolCall{host: h, tool: "ta_x", timeout: time.Minute}.run(ctx, req, ownError)
	if err != nil {
		t.Fatal(err)
	}
	if d := errorKind(t, res); d.Kind != KindCancelled || !strings.Contains(d.Message, "connection interrupted") {
		t.Fatalf("cancelled call reported as %+v", d)
	}
	res, err = toolCall{host: h, tool: "ta_x", timeout: 20 * time.Millisecond}.run(t.Context(), req, ownError)
	if err != nil {
		t.Fatal(err)
	}
	if d := errorKind(t, res); d.Kind != KindTimeout || !strings.Contains(d.Message, "timed out after 20ms") {
		t.Fatalf("timed-out call reported as %+v", d)
	}
	if c := r.srv.Info().Calls; c.Cancelled != 1 || c.TimedOut != 1 || c.Failed != 0 {
		t.Fatalf("calls = %+v, want 1 cancelled, 1 timed out, none failed", c)
	}
}

// TestToolOwnTimeout: a tool's own timeout replaces tool_timeout, longer or
// shorter.
func TestToolOwnTimeout(t *testing.T) {
	registerTestPlugins()
	wait := func(ctx context.Context, _ *mcp.CallToolRequest, in sizeArgs) (any, error) {
		select {
		case <-time.After(time.Duration(in.Size) * time.Millisecond):
			return map[string]int{"slept": in.Size}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "long"}, wait, ToolOptions{Timeout: 2 * time.Second})
		AddTool(h, &mcp.Tool{Name: "short"}, wait, ToolOptions{Timeout: 30 * time.Millisecond})
		AddTool(h, &mcp.Tool{Name: "plain"}, wait)
	})
	lim := DefaultLimits()
	lim.ToolTimeout = Duration(100 * time.Millisecond)
	r := newRig(t, lim, "ta")
	if res := r.call(t, "ta_long", sizeArgs{Size: 300}); res.IsError {
		t.Fatalf("a 300ms call under a 2s own timeout: %s", text(res))
	}
	if res := r.call(t, "ta_plain", sizeArgs{Size: 300}); !strings.Contains(text(res), "timed out after 100ms (limit tool_timeout)") {
		t.Fatalf("a 300ms call under tool_timeout 100ms: %s", text(res))
	}
	if res := r.call(t, "ta_short", sizeArgs{Size: 80}); !strings.Contains(text(res), "timed out after 30ms (this tool's own timeout)") {
		t.Fatalf("an 80ms call under a 30ms own timeout: %s", text(res))
	}
}

// TestOutputSchema: a tool that declares an output schema lists the union
// of it, the paged reference and the error reply, and each of its replies
// (inline, paged, error) validates against what it lists.
func TestOutputSchema(t *testing.T) {
	registerTestPlugins()
	type out struct {
		Data string `json:"data"`
	}
	own, err := jsonschema.For[out](nil)
	if err != nil {
		t.Fatal(err)
	}
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "make", OutputSchema: own}, func(ctx context.Context, _ *mcp.CallToolRequest, in sizeArgs) (any, error) {
			if in.Size < 0 {
				return nil, Errorf("negative", "size %d", in.Size)
			}
			return out{Data: strings.Repeat("x", in.Size)}, nil
		})
	})
	lim := DefaultLimits()
	lim.InlineResultBytes = KiB
	r := newRig(t, lim, "ta")
	tools, err := r.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed *jsonschema.Schema
	for _, tool := range tools.Tools {
		if tool.Name == "ta_make" {
			listed, err = toSchema(tool.OutputSchema)
		}
	}
	if err != nil || listed == nil || listed.Type != "object" || len(listed.AnyOf) != 3 {
		t.Fatalf("listed output schema %+v (%v), want an object anyOf of 3", listed, err)
	}
	resolved, err := listed.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{10, 5000, -1} {
		res := r.call(t, "ta_make", sizeArgs{Size: size})
		sc, _ := json.Marshal(res.StructuredContent)
		var v any
		if err := json.Unmarshal(sc, &v); err != nil {
			t.Fatal(err)
		}
		if err := resolved.Validate(v); err != nil {
			t.Errorf("reply to size %d does not validate against the listed schema: %v\n%s", size, err, sc)
		}
		for i, branch := range listed.AnyOf {
			br, err := branch.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int]int{10: 0, 5000: 1, -1: 2}[size]
			if valid := br.Validate(v) == nil; valid != (i == want) {
				t.Errorf("reply to size %d: branch %d valid=%v, want only branch %d", size, i, valid, want)
			}
		}
	}
}

// TestReadToolDescribesChunkSize: the read tool states the configured
// default length, not a fixed 65536.
func TestReadToolDescribesChunkSize(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "one"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return nil, nil })
	})
	lim := DefaultLimits()
	lim.ResultChunkBytes = 8192
	r := newRig(t, lim, "ta")
	tools, err := r.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != "ta_result" {
			continue
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(tool.Description, "8192") || !strings.Contains(string(schema), "default 8192") ||
			strings.Contains(tool.Description+string(schema), "65536") {
			t.Fatalf("read tool: description %q, schema %s", tool.Description, schema)
		}
		return
	}
	t.Fatal("no ta_result tool")
}

// TestRawJSONResult: a handler's json.RawMessage is served as it is; an
// invalid one fails with kind internal.
func TestRawJSONResult(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "raw"}, func(ctx context.Context, _ *mcp.CallToolRequest, in blockArgs) (any, error) {
			return json.RawMessage(in.ID), nil
		})
	})
	r := newRig(t, DefaultLimits(), "ta")
	if res := r.call(t, "ta_raw", blockArgs{ID: `{"b": 1, "a": [2]}`}); res.IsError || text(res) != `{"b": 1, "a": [2]}` {
		t.Fatalf("raw result: %s", text(res))
	}
	if d := errorKind(t, r.call(t, "ta_raw", blockArgs{ID: `{"b":`})); d.Kind != KindInternal {
		t.Fatalf("invalid raw result: %+v", d)
	}
}

// TestEncodedJSONResult: a handler's EncodedJSON is served as it is, as
// structured content and text, without being validated again; a large one
// is paged with format "json" and reads back byte for byte.
func TestEncodedJSONResult(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "enc"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sizeArgs) (any, error) {
			if in.Size == 0 {
				return fastpath.EncodedJSON(`{"b":1,"a":[2]}`), nil
			}
			return fastpath.EncodedJSON(`{"x":"` + strings.Repeat("y", in.Size) + `"}`), nil
		})
	})
	lim := DefaultLimits()
	lim.InlineResultBytes = 4 * KiB
	r := newRig(t, lim, "ta")
	res := r.call(t, "ta_enc", sizeArgs{})
	if sc, _ := json.Marshal(res.StructuredContent); res.IsError || text(res) != `{"b":1,"a":[2]}` || string(sc) != `{"a":[2],"b":1}` {
		t.Fatalf("encoded result: %s, structured %s", text(res), sc)
	}
	var ref pagedResult
	if err := json.Unmarshal([]byte(text(r.call(t, "ta_enc", sizeArgs{Size: 10 * KiB}))), &ref); err != nil || ref.Format != "json" || ref.TotalBytes != 10*KiB+8 {
		t.Fatalf("paged reference %+v (%v)", ref, err)
	}
	// Inside another value (a timed-out call's partial result) it is the
	// JSON it holds, not base64.
	if b, err := json.Marshal(ToolErrorReply{Partial: fastpath.EncodedJSON(`{"b":1}`)}); err != nil || !strings.Contains(string(b), `"partial":{"b":1}`) {
		t.Errorf("an EncodedJSON partial marshals to %s (%v)", b, err)
	}
}

// TestEncodedJSONPartsResult: a handler's EncodedJSONParts is served as
// the concatenation of its parts: inline when small, else retained as the
// parts (here in a ResultMemory, outside the heap) and read back byte for
// byte across their boundaries, by chunks that copy out of that memory.
func TestEncodedJSONPartsResult(t *testing.T) {
	registerTestPlugins()
	whole := func(size int) string { return `{"x":"` + strings.Repeat("y", size) + `","z":[1,2]}` }
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "parts"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sizeArgs) (any, error) {
			mem := fastpath.NewResultMemory()
			var parts [][]byte
			for rest := whole(in.Size); rest != ""; {
				n := min(len(rest), 1000+len(parts)) // parts of uneven sizes
				parts = append(parts, append(mem.Buffer(n), rest[:n]...))
				rest = rest[n:]
			}
			return fastpath.EncodedJSONParts{Parts: parts, Memory: mem}, nil
		})
	})
	lim := DefaultLimits()
	lim.InlineResultBytes = 4 * KiB
	r := newRig(t, lim, "ta")
	if res := r.call(t, "ta_parts", sizeArgs{Size: 2500}); res.IsError || text(res) != whole(2500) {
		t.Fatalf("inline parts: %.100s", text(res))
	}
	var ref pagedResult
	if err := json.Unmarshal([]byte(text(r.call(t, "ta_parts", sizeArgs{Size: 10 * KiB}))), &ref); err != nil || ref.Format != "json" || ref.TotalBytes != int64(len(whole(10*KiB))) {
		t.Fatalf("paged reference %+v (%v)", ref, err)
	}
	runtime.GC() // nothing but the retained entry keeps the memory
	if got := r.readPaged(t, "ta_result", ref); string(got) != whole(10*KiB) {
		t.Fatalf("paged parts read back as %d bytes: %.100s", len(got), got)
	}
	if b, err := json.Marshal(ToolErrorReply{Partial: fastpath.EncodedJSONParts{Parts: [][]byte{[]byte(`{"b":`), []byte(`1}`)}}}); err != nil || !strings.Contains(string(b), `"partial":{"b":1}`) {
		t.Errorf("an EncodedJSONParts partial marshals to %s (%v)", b, err)
	}
}

// TestTextResult: a Text result is served as its text, as it is, with no
// structuredContent; a large one is paged with format "text" and reads
// back byte for byte; a JSON result's reference says format "json".
func TestTextResult(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "md"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sizeArgs) (any, error) {
			if in.Size == 0 {
				return Text("# Title\n\n- **a**: \"1\"\n{not json"), nil
			}
			return Text(strings.Repeat("line\n", in.Size/5)), nil
		})
		AddTool(h, &mcp.Tool{Name: "big"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sizeArgs) (any, error) {
			return strings.Repeat("x", in.Size), nil
		})
	})
	lim := DefaultLimits()
	lim.InlineResultBytes = 4 * KiB
	r := newRig(t, lim, "ta")
	res := r.call(t, "ta_md", sizeArgs{})
	if res.IsError || text(res) != "# Title\n\n- **a**: \"1\"\n{not json" || res.StructuredContent != nil {
		t.Fatalf("text result: %q, structured %v", text(res), res.StructuredContent)
	}
	for tool, format := range map[string]string{"ta_md": "text", "ta_big": "json"} {
		var ref pagedResult
		if err := json.Unmarshal([]byte(text(r.call(t, tool, sizeArgs{Size: 10 * KiB}))), &ref); err != nil || ref.Format != format {
			t.Fatalf("%s: paged reference %+v (%v), want format %s", tool, ref, err, format)
		}
		if tool != "ta_md" {
			continue
		}
		chunk := r.call(t, "ta_result", ResultReadArgs{ResultID: ref.ResultID, Length: 100_000})
		var c ResultReadReply
		if err := json.Unmarshal([]byte(text(chunk)), &c); err != nil {
			t.Fatal(err)
		}
		if data, _ := base64.StdEncoding.DecodeString(c.DataBase64); string(data) != strings.Repeat("line\n", 2048) {
			t.Fatalf("paged text read back as %d bytes", len(data))
		}
	}
}
