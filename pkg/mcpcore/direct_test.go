package mcpcore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/stdio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// directRig is a server whose plugin "dx" serves direct tools (echo, wait,
// hold, notify, fail, res) and one that is not (plain), with counters of the
// tools/call requests that Options.Middleware sees and that the SDK's own
// request path sees.
type directRig struct {
	srv       *Server
	viaMW     atomic.Int64 // tools/call seen by Options.Middleware (every call)
	viaSDK    atomic.Int64 // tools/call seen by the SDK's request path
	cancelled chan error   // the cause a wait call's handler saw
	entered   chan struct{}
	release   chan struct{} // a hold call returns when it receives from it
}

type directArgs struct {
	Text string `json:"text"`
	N    int    `json:"n,omitempty"`
}

// The protocol eras: the legacy one, and the 2026-07-28 one, whose calls
// carry the client's identity in _meta (direct too, when the SDK would
// take them as they are: modernDirect).
const (
	legacyEra = "2025-11-25"
	modernEra = modernProtocol
)

func newDirectRig(t *testing.T) *directRig {
	t.Helper()
	r := &directRig{cancelled: make(chan error, 1), entered: make(chan struct{}, 1), release: make(chan struct{})}
	direct := ToolOptions{direct: true}
	attach := func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in directArgs) (any, error) {
			return map[string]any{"text": in.Text, "n": in.N, "html": "<&>", "line": "a\nb"}, nil
		}, direct)
		AddTool(h, &mcp.Tool{Name: "plain"}, func(_ context.Context, _ *mcp.CallToolRequest, in directArgs) (any, error) {
			return map[string]any{"text": in.Text, "n": in.N, "html": "<&>", "line": "a\nb"}, nil
		})
		AddTool(h, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			r.entered <- struct{}{}
			<-ctx.Done()
			r.cancelled <- context.Cause(ctx)
			return nil, ctx.Err()
		}, direct)
		AddTool(h, &mcp.Tool{Name: "hold"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			r.entered <- struct{}{}
			select {
			case <-r.release:
				return Text("released"), nil
			case <-ctx.Done():
				r.cancelled <- context.Cause(ctx)
				return nil, ctx.Err()
			}
		}, direct)
		AddTool(h, &mcp.Tool{Name: "notify"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (any, error) {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2}); err != nil {
				return nil, err
			}
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "hello"}); err != nil {
				return nil, err
			}
			return Text("notified"), nil
		}, direct)
		AddTool(h, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) {
			panic("boom")
		}, direct)
		AddTool(h, &mcp.Tool{Name: "res"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}}, nil
		}, direct)
	}
	count := func(n *atomic.Int64) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/call" {
					n.Add(1)
				}
				return next(ctx, method, req)
			}
		}
	}
	lim := DefaultLimits()
	lim.InlineResultBytes = 1 << 10
	srv, err := NewServer(t.Context(), Options{Config: Config{Limits: lim}, Instances: []Instance{instance("dx", attach)},
		Middleware: []mcp.Middleware{count(&r.viaMW)}})
	if err != nil {
		t.Fatal(err)
	}
	srv.MCP().AddReceivingMiddleware(count(&r.viaSDK))
	t.Cleanup(func() { srv.Close(context.Background()) })
	r.srv = srv
	return r
}

// connect connects a client in era through Server.Run (direct) or the
// SDK's Connect; the session is closed, and Run awaited, at cleanup.
func (r *directRig) connect(t *testing.T, direct bool, era string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	if direct {
		go func() { done <- r.srv.Run(context.Background(), st) }()
	} else {
		ss, err := r.srv.MCP().Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- ss.Wait() }()
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the session did not end")
		}
	})
	return cs
}

func resultJSON(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		return "error: " + err.Error()
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		t.Fatal(merr)
	}
	return string(b)
}

// TestDirectCallsAnswerAsTheSDK: every kind of call answered directly
// (inline, paged and read back, a plugin's own result, bad params, a
// panic, a JSON-RPC error) gets the answer the SDK's path gives, and
// only the direct tools' calls skip the SDK's path, in either era (a
// 2026-07-28 call only when the SDK would take it as it is).
func TestDirectCallsAnswerAsTheSDK(t *testing.T) {
	r := newDirectRig(t)
	for _, era := range []string{legacyEra, modernEra} {
		direct := r.connect(t, true, era, nil)
		viaSDK := r.connect(t, false, era, nil)
		t.Run(era, func(t *testing.T) { compareDirectCalls(t, direct, viaSDK, r) })
	}
	direct := r.connect(t, true, legacyEra, nil)
	sdkBefore := r.viaSDK.Load()
	if res, err := direct.CallTool(t.Context(), &mcp.CallToolParams{Name: "dx_echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
		t.Fatalf("echo: %v %v", err, res)
	}
	if res, err := direct.CallTool(t.Context(), &mcp.CallToolParams{Name: "dx_plain", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
		t.Fatalf("plain: %v %v", err, res)
	}
	if got := r.viaSDK.Load() - sdkBefore; got != 1 {
		t.Errorf("the SDK's path saw %d of a direct and a plain call, want 1 (the plain one)", got)
	}
	// A 2026-07-28 client's calls of a direct tool are direct, but for one
	// that asks for log messages (the SDK keeps its level where a direct
	// call cannot).
	modern := r.connect(t, true, modernEra, nil)
	sdkBefore = r.viaSDK.Load()
	if res, err := modern.CallTool(t.Context(), &mcp.CallToolParams{Name: "dx_echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
		t.Fatalf("modern echo: %v %v", err, res)
	}
	if got := r.viaSDK.Load() - sdkBefore; got != 0 {
		t.Errorf("the SDK's path saw %d modern-era calls of a direct tool, want 0", got)
	}
	if res, err := modern.CallTool(t.Context(), &mcp.CallToolParams{Name: "dx_echo", Arguments: map[string]any{"text": "x"}, Meta: mcp.Meta{mcp.MetaKeyLogLevel: "debug"}}); err != nil || res.IsError {
		t.Fatalf("modern echo with a log level: %v %v", err, res)
	}
	if got := r.viaSDK.Load() - sdkBefore; got != 1 {
		t.Errorf("the SDK's path saw %d modern-era calls, one with a log level, want 1", got)
	}
	// Options.Middleware saw every call, direct or not: 7 kinds twice in
	// each era, the paged reads, echo, plain and the modern ones.
	if got, calls := r.viaMW.Load(), r.srv.Info().Calls.Started; got < calls {
		t.Errorf("Options.Middleware saw %d calls, fewer than the %d the host ran", got, calls)
	}
}

// compareDirectCalls makes every kind of call through direct (served by
// Run) and viaSDK (served by the SDK) and compares the answers.
func compareDirectCalls(t *testing.T, direct, viaSDK *mcp.ClientSession, r *directRig) {
	calls := []*mcp.CallToolParams{
		{Name: "dx_echo", Arguments: map[string]any{"text": "héllo \u2028 \"q\"", "n": 3}},
		{Name: "dx_echo", Arguments: map[string]any{"text": strings.Repeat("x", 2000)}}, // paged: over 1 KiB
		{Name: "dx_echo", Arguments: map[string]any{"text": 5}},                         // bad_params
		{Name: "dx_echo", Arguments: map[string]any{"text": "a", "extra": true}},        // bad_params: unknown
		{Name: "dx_fail", Arguments: map[string]any{}},                                  // internal (a panic)
		{Name: "dx_res", Arguments: map[string]any{}},                                   // a plugin's own result
		{Name: "dx_nope", Arguments: map[string]any{}},                                  // unknown: a JSON-RPC error
	}
	for _, p := range calls {
		a, errA := direct.CallTool(t.Context(), p)
		b, errB := viaSDK.CallTool(t.Context(), p)
		ja, jb := resultJSON(t, a, errA), resultJSON(t, b, errB)
		if a != nil && b != nil {
			// A paged result's id and expiry differ between two calls.
			var ra, rb pagedResult
			if json.Unmarshal([]byte(text(a)), &ra) == nil && ra.ResultID != "" && json.Unmarshal([]byte(text(b)), &rb) == nil {
				ja = strings.ReplaceAll(strings.ReplaceAll(ja, ra.ResultID, "ID"), ra.ExpiresAt, "T")
				jb = strings.ReplaceAll(strings.ReplaceAll(jb, rb.ResultID, "ID"), rb.ExpiresAt, "T")
				got := (&rig{srv: r.srv, cs: direct}).readPaged(t, "dx_result", ra)
				want := (&rig{srv: r.srv, cs: viaSDK}).readPaged(t, "dx_result", rb)
				if string(got) != string(want) {
					t.Errorf("%s: paged %s, want %s", p.Name, got, want)
				}
			}
		}
		if ja != jb {
			t.Errorf("%s %v:\ndirect %s\nSDK    %s", p.Name, p.Arguments, ja, jb)
		}
	}
}

// TestDirectCallNotificationsAndCancellation: a direct call's progress and
// log notifications reach the client, and notifications/cancelled cancels
// its context.
func TestDirectCallNotificationsAndCancellation(t *testing.T) {
	r := newDirectRig(t)
	progress, logs := make(chan float64, 1), make(chan any, 1)
	cs := r.connect(t, true, legacyEra, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Progress
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params.Data },
	})
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "dx_notify", Arguments: map[string]any{}}
	p.SetProgressToken("tok")
	res, err := cs.CallTool(t.Context(), p)
	if err != nil || text(res) != "notified" {
		t.Fatalf("notify: %v %v", err, res)
	}
	if got := <-progress; got != 1 {
		t.Errorf("progress %v, want 1", got)
	}
	if got := <-logs; got != "hello" {
		t.Errorf("log %v, want hello", got)
	}

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "dx_wait", Arguments: map[string]any{}})
		errc <- err
	}()
	<-r.entered
	cancel()
	if cause := <-r.cancelled; !errors.Is(cause, context.Canceled) {
		t.Fatalf("the handler saw %v, want context.Canceled", cause)
	}
	<-errc
	waitFor(t, func() bool { return r.srv.Info().Calls.Cancelled == 1 })
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 2s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDirectCallsOverStdio: over the stdio transport, a direct call's
// response is one compact line with the request's id as sent (a big
// integer kept exact), a request whose id is a direct call's in flight is
// refused without an answer (as the SDK refuses one of its own), a
// cancelled direct call is not answered, and at EOF a call in flight is
// not cancelled: it is answered, and Run returns after.
func TestDirectCallsOverStdio(t *testing.T) {
	r := newDirectRig(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.srv.Run(context.Background(), stdio.NewTransport(inR, outW, stdio.Options{})) }()
	lines := bufio.NewReader(outR)
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	call := func(id, tool, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + legacyEra + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	read()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	sdkBefore := r.viaSDK.Load()

	send(call("9007199254740993", "dx_echo", `{"text":"x"}`))
	want := `{"jsonrpc":"2.0","id":9007199254740993,"result":{"content":[{"type":"text","text":"{\"html\":\"\\u003c\\u0026\\u003e\",\"line\":\"a\\nb\",\"n\":0,\"text\":\"x\"}"}],"structuredContent":{"html":"\u003c\u0026\u003e","line":"a\nb","n":0,"text":"x"}}}` + "\n"
	if got := read(); got != want {
		t.Fatalf("echo response\n%s\nwant\n%s", got, want)
	}
	send(call(`"w"`, "dx_wait", `{}`))
	<-r.entered
	send(call(`"w"`, "dx_echo", `{"text":"dup"}`)) // refused: "w" is in flight
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`)
	if cause := <-r.cancelled; !errors.Is(cause, context.Canceled) {
		t.Fatalf("the handler saw %v, want context.Canceled", cause)
	}
	send(call("2", "dx_echo", `{"text":"after"}`))
	if got := read(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":2,"result":`) || !strings.Contains(got, `"text":"after"`) {
		t.Fatalf("after the cancelled call and the duplicate, the next line is %s", got)
	}
	if got := r.viaSDK.Load() - sdkBefore; got != 0 {
		t.Errorf("the SDK's path saw %d calls, want none", got)
	}
	send(call("3", "dx_hold", `{}`))
	<-r.entered
	inW.Close()
	select {
	case cause := <-r.cancelled:
		t.Fatalf("at EOF the call in flight was cancelled (%v), want it answered", cause)
	case err := <-done:
		t.Fatalf("Run returned (%v) at EOF with a call in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	r.release <- struct{}{}
	if got := read(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":3,"result":`) || !strings.Contains(got, "released") {
		t.Fatalf("the call in flight at EOF was answered with %s", got)
	}
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return at EOF")
	}
	outW.Close()
	if rest, _ := io.ReadAll(lines); len(rest) > 0 {
		t.Errorf("unexpected output after the last response: %s", rest)
	}
}

// TestDirectModernCallOverStdio: over stdio, a 2026-07-28 call of a
// direct tool is answered directly, byte for byte as the SDK answers the
// same call of a tool that is not direct (the server's identity in _meta,
// the result type last), errors and isError included.
func TestDirectModernCallOverStdio(t *testing.T) {
	r := newDirectRig(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go r.srv.Run(context.Background(), stdio.NewTransport(inR, outW, stdio.Options{}))
	t.Cleanup(func() { inW.Close() })
	lines := bufio.NewReader(outR)
	exchange := func(s string) string {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernEra + `","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if got := exchange(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{` + meta + `}}`); !strings.Contains(got, `"result"`) {
		t.Fatalf("discover: %s", got)
	}
	for _, args := range []string{`{"text":"héllo"}`, `{"text":5}`, `{"text":"` + strings.Repeat("x", 2000) + `"}`} {
		sdkBefore := r.viaSDK.Load()
		call := func(tool string) string {
			return exchange(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, tool, args, meta))
		}
		got, want := call("dx_echo"), call("dx_plain")
		if n := r.viaSDK.Load() - sdkBefore; n != 1 {
			t.Errorf("%s: the SDK's path saw %d calls, want 1 (dx_plain's)", args, n)
		}
		if !strings.Contains(want, `"resultType":"complete"}}`) || !strings.Contains(want, `"io.modelcontextprotocol/serverInfo"`) {
			t.Fatalf("the SDK's answer is not what this test expects: %s", want)
		}
		paged := regexp.MustCompile(`(result_id|expires_at)\\?":\\?"[^"\\]*`)
		if got, want = paged.ReplaceAllString(got, "$1"), paged.ReplaceAllString(want, "$1"); got != want {
			t.Errorf("%s:\ndirect %s\nSDK    %s", args, got, want)
		}
	}
}

// TestEOFAnswersRequestsRead: every request read before stdin's EOF is
// answered before Run returns, whether the SDK answers it (initialize,
// tools/list, ping, a tool that is not direct) or the host does (a direct
// call), although the whole input, EOF included, is there at once. The
// race it guards against was lost most of the time, so it runs 20 times.
func TestEOFAnswersRequestsRead(t *testing.T) {
	r := newDirectRig(t)
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyEra + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"dx_echo","arguments":{"text":"direct"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"dx_plain","arguments":{"text":"sdk"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
	}, "\n") + "\n"
	for i := range 20 {
		var out bytes.Buffer // the transport serializes its writes
		err := r.srv.Run(t.Context(), stdio.NewTransport(strings.NewReader(input), &out, stdio.Options{}))
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("run %d: Run: %v", i, err)
		}
		answered := map[int]string{}
		for line := range strings.Lines(out.String()) {
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.Result == nil {
				t.Fatalf("run %d: unexpected line %q (%v)", i, line, err)
			}
			answered[m.ID] = line
		}
		for id := 1; id <= 5; id++ {
			if answered[id] == "" {
				t.Fatalf("run %d: request %d not answered; output:\n%s", i, id, out.String())
			}
		}
		if !strings.Contains(answered[3], "direct") || !strings.Contains(answered[4], "sdk") {
			t.Fatalf("run %d: tool answers %s / %s", i, answered[3], answered[4])
		}
	}
}

// TestClientMistakesOverStdio: a second initialize and a 2026-07-28 ping
// are answered with errors, the session goes on, and the SDK's records of
// them reach the log at Info, not at ERROR (before: the second initialize
// crashed the process with a nil dereference in the instructions
// middleware, and any client could fill the error log).
func TestClientMistakesOverStdio(t *testing.T) {
	registerTestPlugins()
	logs := &logBuffer{}
	srv, err := NewServer(t.Context(), Options{Plugins: []string{"ta"}, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	initialize := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`, id, legacyEra)
	}
	input := strings.Join([]string{
		initialize(1),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		initialize(2),
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := srv.Run(t.Context(), stdio.NewTransport(strings.NewReader(input), &out, stdio.Options{})); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("Run: %v", err)
	}
	got := out.String()
	for _, want := range []string{`"id":1,"result":`, `"id":2,"error":`, `"id":3,"error":`, `"id":4,"result":{}`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	l := logs.String()
	if strings.Contains(l, "level=ERROR") {
		t.Errorf("a client's mistake was logged at ERROR:\n%s", l)
	}
	for _, want := range []string{`level=INFO msg="duplicate initialize request"`, `level=INFO msg="method removed in the new protocol"`} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %s:\n%s", want, l)
		}
	}
}

// TestEOFDrainIsBounded: a request that nothing answers (a resource read
// whose handler waits until it is cancelled) does not hold the session
// open past drainTimeout after EOF: the session then ends, the handler is
// cancelled, and Run returns, saying so in the log.
func TestEOFDrainIsBounded(t *testing.T) {
	lim := DefaultLimits()
	lim.ToolTimeout = Duration(10 * time.Millisecond)
	entered := make(chan struct{}, 1)
	attach := func(h *Host) {
		h.AddResource(&mcp.Resource{URI: "test://stuck", Name: "stuck"}, func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	logs := &logBuffer{}
	srv, err := NewServer(t.Context(), Options{Config: Config{Limits: lim}, Instances: []Instance{instance("st", attach)}, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	if got, want := srv.drainTimeout(), 10*time.Millisecond+drainMargin; got != want {
		t.Fatalf("drainTimeout = %v, want %v", got, want)
	}
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyEra + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://stuck"}}`,
	}, "\n") + "\n"
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(t.Context(), stdio.NewTransport(strings.NewReader(input), io.Discard, stdio.Options{}))
	}()
	<-entered
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return 10s after EOF with a request nothing answers")
	}
	if d := time.Since(start); d < drainMargin {
		t.Errorf("Run returned %v after EOF, before drainTimeout", d)
	}
	if !strings.Contains(logs.String(), "input ended with calls unanswered") {
		t.Errorf("the log does not say calls were left unanswered:\n%s", logs.String())
	}
}
