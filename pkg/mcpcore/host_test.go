package mcpcore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testPlugin serves tools defined by the test through its attach function.
type testPlugin struct {
	attach  func(h *Host)
	closed  *bool
	onClose func() // set by a test after NewServer, run by Close
}

func (p *testPlugin) Attach(_ context.Context, h *Host) error {
	if p.attach != nil {
		p.attach(h)
	}
	return nil
}

func (p *testPlugin) Close(context.Context) error {
	if p.closed != nil {
		*p.closed = true
	}
	if p.onClose != nil {
		p.onClose()
	}
	return nil
}

var (
	testMu      sync.Mutex
	testAttach  = map[string]func(h *Host){}
	testClosed  = map[string]*bool{}
	registerOne sync.Once
)

type sizeArgs struct {
	Size int `json:"size"`
}

type blockArgs struct {
	ID string `json:"id"`
}

// registerTestPlugins registers plugins "ta" and "tb" whose tools each test
// sets through setAttach.
func registerTestPlugins() {
	registerOne.Do(func() {
		for _, name := range []string{"ta", "tb"} {
			Register(PluginInfo{Name: name, New: func() Plugin {
				testMu.Lock()
				defer testMu.Unlock()
				return &testPlugin{attach: testAttach[name], closed: testClosed[name]}
			}})
		}
	})
}

func setAttach(name string, fn func(h *Host)) *bool {
	testMu.Lock()
	defer testMu.Unlock()
	closed := new(bool)
	testAttach[name], testClosed[name] = fn, closed
	return closed
}

type rig struct {
	srv *Server
	cs  *mcp.ClientSession
}

func newRig(t *testing.T, lim Limits, plugins ...string) *rig {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Limits = lim
	return newRigOpts(t, Options{Config: cfg, Plugins: plugins, Version: "test", Transport: "memory"})
}

// newRigOpts assembles a server from opts and connects one in-memory client.
func newRigOpts(t *testing.T, opts Options) *rig {
	t.Helper()
	srv, err := NewServer(t.Context(), opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	cs, ss := connectMemory(t, srv.MCP())
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		if err := srv.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return &rig{srv: srv, cs: cs}
}

func (r *rig) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := r.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// readPaged reads a paged result whole through readTool.
func (r *rig) readPaged(t *testing.T, readTool string, ref pagedResult) []byte {
	t.Helper()
	var got []byte
	offset := int64(0)
	for {
		res := r.call(t, readTool, ResultReadArgs{ResultID: ref.ResultID, Offset: offset, Length: 100_000})
		if res.IsError {
			t.Fatalf("read: %s", text(res))
		}
		var chunk ResultReadReply
		if err := json.Unmarshal([]byte(text(res)), &chunk); err != nil {
			t.Fatal(err)
		}
		data, _ := base64.StdEncoding.DecodeString(chunk.DataBase64)
		if int64(len(data)) != chunk.Bytes || chunk.Offset != offset {
			t.Fatalf("chunk at %d: %d bytes, says %d at %d", offset, len(data), chunk.Bytes, chunk.Offset)
		}
		got = append(got, data...)
		if chunk.NextOffset == nil {
			return got
		}
		offset = *chunk.NextOffset
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// errorKind returns the kind of a host-reported tool error.
func errorKind(t *testing.T, res *mcp.CallToolResult) ToolErrorDetail {
	t.Helper()
	var r ToolErrorReply
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || json.Unmarshal(b, &r) != nil || r.Error.Message != text(res) {
		t.Fatalf("not a host error result: %s (text %q)", b, text(res))
	}
	return r.Error
}

func payload(size int) map[string]any {
	return map[string]any{"data": strings.Repeat("é", size/2), "size": size}
}

func TestInlineAndPagedResults(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "make"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sizeArgs) (any, error) {
			return payload(in.Size), nil
		})
	})
	lim := DefaultLimits()
	lim.InlineResultBytes = 4 * KiB
	r := newRig(t, lim, "ta")

	small := r.call(t, "ta_make", sizeArgs{Size: 100})
	want, _ := json.Marshal(payload(100))
	if small.IsError || text(small) != string(want) {
		t.Fatalf("inline result = %q (isError %v), want %q", text(small), small.IsError, want)
	}
	if sc, _ := json.Marshal(small.StructuredContent); !bytes.Equal(sc, want) {
		t.Fatalf("structuredContent = %s, want %s", sc, want)
	}

	big := r.call(t, "ta_make", sizeArgs{Size: 300 * KiB})
	var ref pagedResult
	if err := json.Unmarshal([]byte(text(big)), &ref); err != nil || ref.ResultID == "" {
		t.Fatalf("paged reply %q: %v", text(big), err)
	}
	want, _ = json.Marshal(payload(300 * KiB))
	if ref.TotalBytes != int64(len(want)) || ref.ReadTool != "ta_result" {
		t.Fatalf("ref = %+v, want total %d read_tool ta_result", ref, len(want))
	}
	got := r.readPaged(t, "ta_result", ref)
	if !bytes.Equal(got, want) {
		t.Fatalf("reassembled %d bytes differ from the %d-byte result", len(got), len(want))
	}
	// An offset beyond the result is a bad parameter, named.
	if d := errorKind(t, r.call(t, "ta_result", ResultReadArgs{ResultID: ref.ResultID, Offset: ref.TotalBytes + 1})); d.Kind != KindBadParams || d.Path != "/offset" {
		t.Fatalf("offset beyond the end: %+v", d)
	}
	// A page larger than the maximum is refused, not truncated.
	res := r.call(t, "ta_result", ResultReadArgs{ResultID: ref.ResultID, Length: MaxResultChunkBytes + 1})
	if !res.IsError || !strings.Contains(text(res), "result_chunk_bytes") {
		t.Fatalf("oversized read = %q, want a result_chunk_bytes limit error", text(res))
	}
	if d := errorKind(t, res); d.Kind != "limit" || d.Limit != "result_chunk_bytes" || d.Max != MaxResultChunkBytes {
		t.Fatalf("oversized read error = %+v", d)
	}
	if res := r.call(t, "ta_result", ResultReadArgs{ResultID: ref.ResultID, Release: true}); res.IsError {
		t.Fatalf("release: %s", text(res))
	}
	res = r.call(t, "ta_result", ResultReadArgs{ResultID: ref.ResultID})
	if !res.IsError || !strings.Contains(text(res), "unknown, expired or released") {
		t.Fatalf("read after release = %q, want not found", text(res))
	}
	if d := errorKind(t, res); d.Kind != "result_not_found" {
		t.Fatalf("read after release error = %+v", d)
	}
	if st := r.srv.Info().Results; st.Retained != 0 || st.Bytes != 0 {
		t.Fatalf("after release the store holds %+v", st)
	}
}

func TestRetentionFullFailsExplicitly(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "make"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sizeArgs) (any, error) {
			return payload(in.Size), nil
		})
	})
	lim := DefaultLimits()
	lim.InlineResultBytes = 1 * KiB
	lim.RetainedResultBytes = 1 * MiB
	r := newRig(t, lim, "ta")
	if res := r.call(t, "ta_make", sizeArgs{Size: 600 * KiB}); res.IsError {
		t.Fatalf("first: %s", text(res))
	}
	res := r.call(t, "ta_make", sizeArgs{Size: 600 * KiB})
	if !res.IsError || !strings.Contains(text(res), "retained_result_bytes") {
		t.Fatalf("second = %q, want a retained_result_bytes limit error", text(res))
	}
	if d := errorKind(t, res); d.Kind != "limit" || d.Limit != "retained_result_bytes" || d.Max != MiB {
		t.Fatalf("retention error = %+v", d)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	registerTestPlugins()
	started := make(chan string, 4)
	release := make(chan struct{})
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, in blockArgs) (any, error) {
			started <- in.ID
			<-release
			return map[string]string{"id": in.ID}, nil
		})
	})
	lim := DefaultLimits()
	lim.ConcurrentToolCalls = 2
	r := newRig(t, lim, "ta")
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		wg.Go(func() {
			if res := r.call(t, "ta_block", blockArgs{ID: id}); res.IsError {
				t.Errorf("blocked call %s: %s", id, text(res))
			}
		})
	}
	<-started
	<-started
	res := r.call(t, "ta_block", blockArgs{ID: "c"})
	if !res.IsError || !strings.Contains(text(res), "concurrent_tool_calls (2)") {
		t.Fatalf("third call = %q, want a concurrent_tool_calls limit error", text(res))
	}
	if d := errorKind(t, res); d.Kind != "limit" || d.Limit != "concurrent_tool_calls" || d.Max != 2 {
		t.Fatalf("third call error = %+v", d)
	}
	close(release)
	wg.Wait()
	if res := r.call(t, "ta_block", blockArgs{ID: "d"}); res.IsError {
		t.Fatalf("after the others finished: %s", text(res))
	}
	if got := r.srv.Info().Calls; got.Rejected != 1 || got.InFlight != 0 {
		t.Fatalf("calls = %+v, want 1 rejected and none in flight", got)
	}
}

func TestTimeoutAndCancellation(t *testing.T) {
	registerTestPlugins()
	cancelled := make(chan error, 1)
	entered := make(chan struct{}, 1)
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			entered <- struct{}{}
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return nil, ctx.Err()
		})
		AddTool(h, &mcp.Tool{Name: "partial"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			<-ctx.Done()
			return nil, ErrorResult(map[string]any{"outcome": "timeout", "replies": []int{1, 2}})
		})
		AddTool(h, &mcp.Tool{Name: "stubborn"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			time.Sleep(time.Second) // ignores ctx
			return map[string]bool{"done": true}, nil
		})
	})
	lim := DefaultLimits()
	lim.ToolTimeout = Duration(100 * time.Millisecond)
	r := newRig(t, lim, "ta")

	res := r.call(t, "ta_wait", struct{}{})
	if !res.IsError || !strings.Contains(text(res), "timed out after 100ms") {
		t.Fatalf("timeout result = %q", text(res))
	}
	if d := errorKind(t, res); d.Kind != "timeout" {
		t.Fatalf("timeout error = %+v", d)
	}
	if cause := <-cancelled; !errors.Is(cause, ErrTimeout) {
		t.Fatalf("handler saw cause %v, want ErrTimeout", cause)
	}
	<-entered

	// A handler that returns what it has when ctx ends gets it delivered,
	// and the call still counts, and is reported, as timed out.
	before := r.srv.Info().Calls
	res = r.call(t, "ta_partial", struct{}{})
	var reply struct {
		Error   ToolErrorDetail `json:"error"`
		Partial json.RawMessage `json:"partial"`
	}
	if !res.IsError || json.Unmarshal([]byte(text(res)), &reply) != nil || reply.Error.Kind != KindTimeout ||
		!strings.Contains(reply.Error.Message, "timed out after 100ms") || string(reply.Partial) != `{"outcome":"timeout","replies":[1,2]}` {
		t.Fatalf("partial result = %q (isError %v)", text(res), res.IsError)
	}
	if after := r.srv.Info().Calls; after.TimedOut != before.TimedOut+1 || after.Failed != before.Failed {
		t.Fatalf("calls %+v -> %+v: want one more timed out and no more failed", before, after)
	}

	start := time.Now()
	res = r.call(t, "ta_stubborn", struct{}{})
	if !res.IsError || time.Since(start) > 100*time.Millisecond+cancelGrace+200*time.Millisecond {
		t.Fatalf("a handler ignoring ctx held the call %v (result %q)", time.Since(start), text(res))
	}

	// notifications/cancelled reaches the handler's context.
	lim.ToolTimeout = Duration(time.Minute)
	r2 := newRig(t, lim, "ta")
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := r2.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ta_wait", Arguments: struct{}{}})
		errc <- err
	}()
	<-entered
	cancel()
	if cause := <-cancelled; !errors.Is(cause, context.Canceled) {
		t.Fatalf("handler saw %v, want context.Canceled", cause)
	}
	<-errc
	deadline := time.Now().Add(2 * time.Second)
	for r2.srv.Info().Calls.Cancelled != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("calls = %+v, want 1 cancelled", r2.srv.Info().Calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestErrorResults(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "mixed"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			return nil, ErrorResult(map[string]string{"outcome": "error"})
		})
		AddTool(h, &mcp.Tool{Name: "fail"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			return nil, errors.New("boom")
		})
		AddTool(h, &mcp.Tool{Name: "protocol"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			return nil, fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: -32021, Message: "sampling capability required"})
		})
	})
	r := newRig(t, DefaultLimits(), "ta")
	res := r.call(t, "ta_mixed", struct{}{})
	if !res.IsError || text(res) != `{"outcome":"error"}` {
		t.Fatalf("error result = %q (isError %v)", text(res), res.IsError)
	}
	res = r.call(t, "ta_fail", struct{}{})
	if !res.IsError || text(res) != "boom" {
		t.Fatalf("failure = %q (isError %v)", text(res), res.IsError)
	}
	if d := errorKind(t, res); d.Kind != "error" {
		t.Fatalf("failure kind = %+v", d)
	}
	// A *jsonrpc.Error is answered as a protocol error, as the SDK does.
	_, err := r.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ta_protocol", Arguments: struct{}{}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32021 {
		t.Fatalf("protocol error = %v, want JSON-RPC error -32021", err)
	}
	// Bad arguments are refused by schema validation before the handler runs.
	res = r.call(t, "ta_fail", map[string]any{"unexpected": 1})
	if !res.IsError {
		t.Fatalf("unknown argument accepted")
	}
}

func TestCollisionNamesBothPlugins(t *testing.T) {
	registerTestPlugins()
	closedA := setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "x_y"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return nil, nil })
	})
	setAttach("tb", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "y"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return nil, nil })
	})
	cfg := DefaultConfig()
	a, b := "p", "p_x"
	cfg.Plugins = map[string]PluginConfig{"ta": {Prefix: &a}, "tb": {Prefix: &b}}
	_, err := NewServer(t.Context(), Options{Config: cfg, Plugins: []string{"ta", "tb"}})
	if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"tb"`) || !strings.Contains(err.Error(), `"ta"`) || !strings.Contains(err.Error(), `"p_x_y"`) {
		t.Fatalf("err = %v, want a collision naming ta, tb and p_x_y", err)
	}
	if !*closedA {
		t.Fatal("plugin ta was not closed after the failed start")
	}
	if _, err := NewServer(t.Context(), Options{Plugins: []string{"nope"}}); !errors.Is(err, ErrConfig) {
		t.Fatalf("unknown plugin: %v", err)
	}
}

func TestInfoResource(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "one"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return nil, nil })
	})
	r := newRig(t, DefaultLimits(), "ta")
	res, err := r.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: InfoURI})
	if err != nil {
		t.Fatal(err)
	}
	var info Info
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &info); err != nil {
		t.Fatal(err)
	}
	if info.Version != "test" || info.Transport != "memory" || len(info.Plugins) != 1 ||
		strings.Join(info.Plugins[0].Tools, ",") != "ta_one,ta_result" || info.Plugins[0].ReadTool != "ta_result" {
		t.Fatalf("info = %+v", info)
	}
	found := false
	for _, l := range info.Limits {
		if l.Name == "tool_timeout" && l.Value == "10s" && l.Max == "5m0s" {
			found = true
		}
	}
	if !found {
		t.Fatalf("limits = %+v, want tool_timeout 10s max 5m0s", info.Limits)
	}
}

// TestInstructions: clients read the core's instructions followed by each
// plugin's paragraph, from initialize.
func TestInstructions(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) { h.SetInstructions("  Plugin ta: call ta_x first.\n") })
	r := newRig(t, DefaultLimits(), "ta")
	got := r.cs.InitializeResult().Instructions
	if want := coreInstructions + "\n\nPlugin ta: call ta_x first."; got != want {
		t.Fatalf("instructions %q, want %q", got, want)
	}
}
