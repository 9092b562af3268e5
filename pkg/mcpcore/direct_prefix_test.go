package mcpcore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/stdio"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// prefixArgs is an ArgumentsPrefixDecoder that records which way it was
// decoded.
type prefixArgs struct {
	S      string `json:"s"`
	asRead bool   // by DecodeArgumentsPrefix
}

func (a *prefixArgs) DecodeArguments(raw json.RawMessage) error {
	var w struct {
		S string `json:"s"`
	}
	if err := decodeArguments(raw, &w); err != nil {
		return err
	}
	a.S = w.S
	return nil
}

func (a *prefixArgs) DecodeArgumentsPrefix(b []byte) (int, bool) {
	end := jsonscan.SkipValue(b, 0)
	if end < 0 || b[0] != '{' || a.DecodeArguments(b[:end]) != nil {
		return 0, false
	}
	a.asRead = true
	return end, true
}

// TestDirectArgumentsDecodedAsRead: a direct tool whose argument type is
// an ArgumentsPrefixDecoder gets its arguments decoded as the params are
// read when they follow the name on a server without middleware, and
// decoded the usual way otherwise (arguments before the name, arguments
// the prefix decoder refuses, a server with middleware), with the same
// values and the same errors.
func TestDirectArgumentsDecodedAsRead(t *testing.T) {
	for _, mw := range []bool{false, true} {
		attach := func(h *Host) {
			AddTool(h, &mcp.Tool{Name: "p"}, func(_ context.Context, _ *mcp.CallToolRequest, in prefixArgs) (any, error) {
				return Text(fmt.Sprintf("%s %v", in.S, in.asRead)), nil
			}, ToolOptions{direct: true})
		}
		opts := Options{Instances: []Instance{instance("px", attach)}}
		if mw {
			opts.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler { return next }}
		}
		srv, err := NewServer(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		exchange, stop := runStdio(t, srv, func(st *stdio.Transport) mcp.Transport { return st })
		for _, c := range []struct{ params, want string }{
			{`{"name":"px_p","arguments":{"s":"a"}}`, `"a ` + fmt.Sprint(!mw) + `"`},
			{`{"name":"px_p","arguments": {"s":"b"} ,"_meta":{"k":1}}`, `"b ` + fmt.Sprint(!mw) + `"`},
			{`{"arguments":{"s":"c"},"name":"px_p"}`, `"c false"`},
			{`{"name":"px_p","arguments":{"s":5}}`, `bad_params`},
			{`{"name":"px_p","arguments":{"s":"d","x":1}}`, `bad_params`},
		} {
			got := exchange(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + c.params + `}`)
			if !strings.Contains(got, c.want) {
				t.Errorf("middleware %v, params %s: %s, want %s in it", mw, c.params, got, c.want)
			}
		}
		stop()
		srv.Close(context.Background())
	}
}

// doneRecorder is a stdio transport whose taken work reports, on done,
// whether it was done with its message (the transport then reuses the
// memory of its params).
type doneRecorder struct {
	*stdio.Transport
	done chan bool
}

func (r doneRecorder) ConnectTaking(ctx context.Context, take func(jsonrpc.Message, bool) func() bool) (mcp.Connection, error) {
	return r.Transport.ConnectTaking(ctx, func(msg jsonrpc.Message, checked bool) func() bool {
		run := take(msg, checked)
		if run == nil {
			return nil
		}
		return func() bool {
			done := run()
			r.done <- done
			return done
		}
	})
}

// TestDirectParamsMemoryReused: over stdio a direct call's params alias a
// buffer the transport reuses once the call is done with them: a call
// whose result was served inline is; a handler abandoned at its timeout,
// still running, and a paged result that aliases its arguments (which a
// direct tool must not return, but might) are not, and keep their bytes
// while later calls come and go.
func TestDirectParamsMemoryReused(t *testing.T) {
	entered, release, checked := make(chan struct{}), make(chan struct{}), make(chan string, 1)
	attach := func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "hold"}, func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (any, error) {
			want := string(req.Params.Arguments)
			close(entered)
			<-release // ignores ctx: abandoned at its timeout
			if got := string(req.Params.Arguments); got != want {
				checked <- fmt.Sprintf("the abandoned handler's arguments changed from %s to %s", want, got)
			} else {
				checked <- ""
			}
			return Text("late"), nil
		}, ToolOptions{direct: true, Timeout: 20 * time.Millisecond})
		AddTool(h, &mcp.Tool{Name: "raw"}, func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (any, error) {
			return json.RawMessage(req.Params.Arguments), nil // aliases the arguments
		}, ToolOptions{direct: true})
	}
	lim := DefaultLimits()
	lim.InlineResultBytes = 1 << 10
	srv, err := NewServer(t.Context(), Options{Config: Config{Limits: lim}, Instances: []Instance{instance("mr", attach)}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	rec := doneRecorder{done: make(chan bool, 100)}
	exchange, stop := runStdio(t, srv, func(st *stdio.Transport) mcp.Transport {
		rec.Transport = st
		return rec
	})
	defer stop()
	wantDone := func(what string, want bool) {
		t.Helper()
		if got := <-rec.done; got != want {
			t.Errorf("%s: done with its params %v, want %v", what, got, want)
		}
	}
	call := func(tool, args string) string {
		return exchange(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mr_` + tool + `","arguments":` + args + `}}`)
	}

	marked := func(mark string, n int) string { return `{"m":"` + strings.Repeat(mark, n) + `"}` }
	if got := call("hold", marked("held-", 60)); !strings.Contains(got, "timeout") {
		t.Fatalf("hold: %s, want a timeout", got)
	}
	<-entered
	wantDone("a call abandoned at its timeout", false)
	later := func() {
		t.Helper()
		for i := range 30 { // lines shorter than hold's: they fit its buffer, were it reused
			mark := strconv.Itoa(i%10) + "-later-"
			if got := call("raw", marked(mark, 20)); !strings.Contains(got, mark) {
				t.Fatalf("call %d: %s", i, got)
			}
			wantDone("a call served inline", true)
		}
	}
	later()
	close(release)
	if msg := <-checked; msg != "" {
		t.Error(msg)
	}
	paged := call("raw", marked("paged-", 400))
	var ref struct {
		Result struct {
			StructuredContent pagedResult `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(paged), &ref); err != nil || ref.Result.StructuredContent.ResultID == "" {
		t.Fatalf("a 2.4 KB result was not paged: %.200s (%v)", paged, err)
	}
	wantDone("a call whose result is paged", false)
	later()
	for range 3 { // as long as the paged line: it fits, were it reused
		call("raw", marked("other-", 400))
		wantDone("a call whose result is paged", false)
	}
	read := call("result", `{"result_id":"`+ref.Result.StructuredContent.ResultID+`","length":100000}`)
	<-rec.done // a read: whichever
	var chunk struct {
		Result struct {
			StructuredContent struct {
				Data []byte `json:"data_base64"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(read), &chunk); err != nil || string(chunk.Result.StructuredContent.Data) != marked("paged-", 400) {
		t.Errorf("the paged result reads back as %.300s (%v)", chunk.Result.StructuredContent.Data, err)
	}
}

// runStdio serves srv with Server.Run over the transport wrap makes of a
// stdio transport on pipes, opens a legacy-era session, and returns
// exchange (one line written, the next line read) and stop (EOF, then
// Run's end).
func runStdio(t *testing.T, srv *Server, wrap func(*stdio.Transport) mcp.Transport) (exchange func(string) string, stop func()) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	transport := wrap(stdio.NewTransport(inR, outW, stdio.Options{}))
	go func() { done <- srv.Run(context.Background(), transport) }()
	lines := bufio.NewReader(outR)
	exchange = func(line string) string {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + legacyEra + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return exchange, func() {
		inW.Close()
		<-done
		outW.Close()
	}
}
