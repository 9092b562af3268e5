package mcpcore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/jsonesc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bufRig is a server without Options.Middleware whose direct tools encode
// their results into ResultBuffer: fill returns {"v": c repeated n times};
// late takes its buffer, outlives its timeout and then scribbles over the
// buffer, as a handler that ignores ctx may.
type bufRig struct {
	srv *Server
	cs  *mcp.ClientSession

	mu   sync.Mutex
	seen map[uintptr]int // fill's buffers by address: how many calls got each
	// seenText: pair's text buffers by address.
	seenText map[uintptr]int
	enter    chan struct{} // late has its buffer
	go_      chan struct{} // late may scribble
	done     chan struct{} // late has scribbled
}

type fillArgs struct {
	C string `json:"c"`
	N int    `json:"n"`
}

type pairArgs struct {
	C     string `json:"c"`
	N     int    `json:"n"`
	Wrong bool   `json:"wrong"` // the text form of another result
}

func newBufRig(t *testing.T, middleware ...mcp.Middleware) *bufRig {
	t.Helper()
	r := &bufRig{seen: map[uintptr]int{}, seenText: map[uintptr]int{}, enter: make(chan struct{}), go_: make(chan struct{}), done: make(chan struct{})}
	attach := func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "fill"}, func(ctx context.Context, _ *mcp.CallToolRequest, in fillArgs) (any, error) {
			buf := fastpath.ResultBuffer(ctx, in.N+16)
			r.mu.Lock()
			r.seen[uintptr(unsafe.Pointer(unsafe.SliceData(buf[:1])))]++
			r.mu.Unlock()
			buf = append(buf, `{"v":"`...)
			buf = append(buf, strings.Repeat(in.C, in.N)...)
			return fastpath.EncodedJSON(append(buf, `"}`...)), nil
		}, ToolOptions{direct: true})
		AddTool(h, &mcp.Tool{Name: "pair"}, func(ctx context.Context, _ *mcp.CallToolRequest, in pairArgs) (any, error) {
			p := jsonesc.Pair{JSON: fastpath.ResultBuffer(ctx, in.N+16), Text: fastpath.ResultBuffer(ctx, in.N+32)}
			r.mu.Lock()
			r.seenText[uintptr(unsafe.Pointer(unsafe.SliceData(p.Text[:1])))]++
			r.mu.Unlock()
			p.Lit(jsonesc.Lit(`{"v":`))
			from := len(p.JSON)
			p.JSON = jsonesc.AppendQuoted(p.JSON, strings.Repeat(in.C, in.N))
			p.Mirror(from)
			p.Lit(jsonesc.Lit(`}`))
			if in.Wrong {
				p.Text = jsonesc.Append(p.Text[:0], `{"v":"wrong"}`)
			}
			return fastpath.EncodedJSONText{JSON: p.JSON, Text: p.Text}, nil
		}, ToolOptions{direct: true})
		AddTool(h, &mcp.Tool{Name: "late"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
			buf := append(fastpath.ResultBuffer(ctx, 4096), `{"v":"late"}`...)
			close(r.enter)
			<-r.go_ // ignores ctx: abandoned at its timeout
			for range 1000 {
				for i := range buf[:cap(buf)] {
					buf[:cap(buf)][i] = 'X'
				}
			}
			close(r.done)
			return fastpath.EncodedJSON(buf), nil
		}, ToolOptions{direct: true, Timeout: 20 * time.Millisecond})
	}
	lim := DefaultLimits()
	lim.InlineResultBytes = 1 << 10
	srv, err := NewServer(t.Context(), Options{Config: Config{Limits: lim}, Instances: []Instance{instance("rb", attach)}, Middleware: middleware})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	r.srv = srv
	r.cs = (&directRig{srv: srv}).connect(t, true, legacyEra, nil)
	return r
}

// fill calls rb_fill and checks that the result is exactly c repeated n
// times, in the structured content and in the text, or, when it is paged,
// returns the reference. It reports with t.Errorf: it runs on goroutines
// of the test too.
func (r *bufRig) fill(t *testing.T, c string, n int) (paged *pagedResult) {
	t.Helper()
	res, err := r.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "rb_fill", Arguments: fillArgs{C: c, N: n}})
	if err != nil || res.IsError {
		t.Errorf("fill %q×%d: %v %v", c, n, err, res)
		return nil
	}
	var ref pagedResult
	if json.Unmarshal([]byte(text(res)), &ref) == nil && ref.ResultID != "" {
		return &ref
	}
	want := `{"v":"` + strings.Repeat(c, n) + `"}`
	sc, _ := json.Marshal(res.StructuredContent)
	if text(res) != want || string(sc) != want {
		t.Errorf("fill %q×%d: text %.80s, structured %.80s", c, n, text(res), sc)
	}
	return nil
}

// TestResultBufferReused: a direct call's result encoded into
// ResultBuffer is served intact while the buffer is reused from call to
// call; a paged result encoded there is not reused (it reads back intact
// after later calls); concurrent calls each get a buffer of their own.
func TestResultBufferReused(t *testing.T) {
	r := newBufRig(t)
	for i := range 40 {
		r.fill(t, string(rune('a'+i%26)), 400-i%7*30)
	}
	r.mu.Lock()
	reused := len(r.seen) < 40
	r.mu.Unlock()
	if !reused {
		t.Errorf("40 calls in a row got 40 different buffers: none was reused")
	}

	ref := r.fill(t, "P", 3000)
	if ref == nil {
		t.Fatal("a 3 KB result was not paged (inline_result_bytes is 1 KiB)")
	}
	for i := range 20 {
		r.fill(t, "q", 900-i)
	}
	if got, want := string((&rig{srv: r.srv, cs: r.cs}).readPaged(t, "rb_result", *ref)), `{"v":"`+strings.Repeat("P", 3000)+`"}`; got != want {
		t.Errorf("the paged result reads back as %.80s..., want %.80s...", got, want)
	}

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				r.fill(t, fmt.Sprint(g), 50+i*40)
			}
		})
	}
	wg.Wait()
}

// TestResultBufferAbandoned: the buffer of a handler the host abandoned at
// its timeout is never handed to another call: the handler scribbling
// over it afterwards corrupts no later result.
func TestResultBufferAbandoned(t *testing.T) {
	r := newBufRig(t)
	lateDone := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := r.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "rb_late", Arguments: map[string]any{}})
		if err != nil {
			t.Errorf("late: %v", err)
		}
		lateDone <- res
	}()
	<-r.enter
	if res := <-lateDone; res == nil || !res.IsError || !strings.Contains(text(res), "timeout") {
		t.Fatalf("late: %v, want a timeout", res)
	}
	close(r.go_)
	for i := 0; ; i++ {
		r.fill(t, "z", 200+i%300)
		select {
		case <-r.done:
			for range 20 {
				r.fill(t, "y", 300)
			}
			return
		default:
		}
	}
}

// TestResultBufferElsewhere: with Options.Middleware, which may keep what
// it sees, results are not reused (and still correct); outside a direct
// call ResultBuffer is new memory with the room asked for.
func TestResultBufferElsewhere(t *testing.T) {
	seen := func(next mcp.MethodHandler) mcp.MethodHandler { return next }
	r := newBufRig(t, seen)
	if r.srv.reuseResults {
		t.Fatal("a server with Options.Middleware reuses direct calls' results")
	}
	for i := range 10 {
		r.fill(t, "m", 10+i)
	}
	if b := fastpath.ResultBuffer(t.Context(), 100); len(b) != 0 || cap(b) < 100 {
		t.Errorf("ResultBuffer outside a call: len %d cap %d, want 0 and at least 100", len(b), cap(b))
	}
}

// pair calls rb_pair and returns the result's text and structured content.
func (r *bufRig) pair(t *testing.T, in pairArgs) (text_, structured string) {
	t.Helper()
	res, err := r.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "rb_pair", Arguments: in})
	if err != nil || res.IsError {
		t.Fatalf("pair %+v: %v %v", in, err, res)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	return text(res), string(sc)
}

// TestResultBufferText: a direct call's EncodedJSONText is served with
// the handler's own text form, written as it is (a text that is not the
// JSON's shows it), both buffers reused from call to call; with
// Options.Middleware, which may replace the content, the host escapes the
// JSON itself.
func TestResultBufferText(t *testing.T) {
	r := newBufRig(t)
	for i, c := range []string{"a", `"`, `\`, "<&>", "é", "\u2028", "\x01", "日本"} {
		in := pairArgs{C: c, N: 10 + i*12} // inline: under 1 KiB escaped
		want, _ := json.Marshal(map[string]string{"v": strings.Repeat(c, in.N)})
		for range 4 {
			if text, structured := r.pair(t, in); text != string(want) || structured != string(want) {
				t.Errorf("pair %q×%d: text %.80s, structured %.80s, want %.80s", c, in.N, text, structured, want)
			}
		}
	}
	r.mu.Lock()
	if len(r.seenText) >= 32 {
		t.Errorf("32 calls got %d different text buffers: none was reused", len(r.seenText))
	}
	r.mu.Unlock()
	if text, structured := r.pair(t, pairArgs{C: "x", N: 3, Wrong: true}); text != `{"v":"wrong"}` || structured != `{"v":"xxx"}` {
		t.Errorf("a direct call's text form was not written as the handler wrote it: text %s, structured %s", text, structured)
	}

	// Over inline_result_bytes the JSON is paged, its text form unused.
	var ref pagedResult
	if text, _ := r.pair(t, pairArgs{C: "P", N: 3000}); json.Unmarshal([]byte(text), &ref) != nil || ref.ResultID == "" {
		t.Fatalf("a 3 KB result was not paged: %.80s", text)
	}
	r.pair(t, pairArgs{C: "q", N: 900})
	if got, want := string((&rig{srv: r.srv, cs: r.cs}).readPaged(t, "rb_result", ref)), `{"v":"`+strings.Repeat("P", 3000)+`"}`; got != want {
		t.Errorf("the paged result reads back as %.80s..., want %.80s...", got, want)
	}

	mw := newBufRig(t, func(next mcp.MethodHandler) mcp.MethodHandler { return next })
	if text, _ := mw.pair(t, pairArgs{C: "x", N: 3, Wrong: true}); text != `{"v":"xxx"}` {
		t.Errorf("with middleware the host served the handler's text form %s, want its own escaping of the JSON", text)
	}
}
