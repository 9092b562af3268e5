package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests of what flows through a connection with a real SDK server: request
// ids echoed exactly, responses to cancelled requests dropped, and reading
// paused while too many responses are unwritten.

// hooks observes the tools of a flowServer.
type hooks struct {
	echoes  atomic.Int64  // echo calls started
	started chan string   // a hold call started, with its tag
	done    chan string   // a hold call ended, with its tag
	release chan struct{} // closed: every hold call returns
}

func newHooks() *hooks {
	return &hooks{started: make(chan string, 100), done: make(chan string, 100), release: make(chan struct{})}
}

type tagIn struct {
	Tag string `json:"tag"`
}

// flowServer is an SDK server with an echo that counts its calls and a hold
// tool that waits for h.release or its context.
func flowServer(h *hooks) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio-flow", Version: "v0.0.1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			h.echoes.Add(1)
			return nil, echoOut{Text: in.Text}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hold"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
			h.started <- in.Tag
			defer func() { h.done <- in.Tag }()
			select {
			case <-h.release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Tag}}}, nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	return s
}

func toolCall(id, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args) + "\n"
}

func holdCall(id, tag string) string { return toolCall(id, "hold", fmt.Sprintf(`{"tag":%q}`, tag)) }

func cancelNote(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}` + "\n"
}

func (h *hooks) waitStarted(t *testing.T, want ...string) {
	t.Helper()
	for range want {
		select {
		case <-h.started:
		case <-time.After(waitTimeout):
			t.Fatalf("only some of the hold calls %v started: the SDK refused or never received one", want)
		}
	}
}

// TestIDsEchoedExactly: every request id comes back as sent, including ids
// the SDK would coerce through float64, and two requests in flight whose
// ids the SDK would coerce to the same value are both answered.
func TestIDsEchoedExactly(t *testing.T) {
	t.Parallel()
	h := newHooks()
	rs := startRawServerWith(t, flowServer(h), Options{})
	rs.initialize()
	// In flight together: 2^53+1 and 2^53 are one float64.
	rs.write(holdCall("9007199254740993", "a") + holdCall("9007199254740992", "b"))
	h.waitStarted(t, "a", "b")
	close(h.release)
	got := map[string]bool{}
	for range 2 {
		r := rs.recv()
		if r.Error != nil {
			t.Fatalf("id %s: error %+v", *r.ID, r.Error)
		}
		got[string(*r.ID)] = true
	}
	if !got["9007199254740993"] || !got["9007199254740992"] {
		t.Fatalf("response ids %v, want 9007199254740993 and 9007199254740992", got)
	}
	for _, id := range []string{"123456789012345678901234567890", "1.5", "-0", "1e3", "1.0", "-7", `"s"`, "0"} {
		rs.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n")
		if r := rs.recv(); string(*r.ID) != id || r.Error != nil {
			t.Errorf("ping %s answered with id %s, error %+v", id, *r.ID, r.Error)
		}
	}
}

// TestCancelledRequestNotAnswered: the response to a request the client
// cancelled is not written, the request's pending slot is released, and a
// later request is answered.
func TestCancelledRequestNotAnswered(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"7", "7.5", `"seven"`} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			h := newHooks()
			// One pending request at most: the ping below is read only once
			// the cancelled call's slot is released.
			rs := startRawServerWith(t, flowServer(h), Options{MaxPendingRequests: 1})
			rs.initialize()
			rs.write(holdCall(id, "x"))
			h.waitStarted(t, "x")
			rs.write(cancelNote(id))
			select {
			case <-h.done:
			case <-time.After(waitTimeout):
				t.Fatal("the cancellation did not reach the tool")
			}
			rs.write(`{"jsonrpc":"2.0","id":8,"method":"ping"}` + "\n")
			if r := rs.recv(); string(*r.ID) != "8" {
				t.Fatalf("first response after the cancellation has id %s, want 8", *r.ID)
			}
			for _, r := range rs.readAll() {
				t.Errorf("unexpected response id %s (error %+v)", *r.ID, r.Error)
			}
		})
	}
}

// quiescent waits until n has not changed for 400ms and returns it.
func quiescent(n func() int64) int64 {
	last := n()
	for stable := 0; stable < 10; {
		time.Sleep(40 * time.Millisecond)
		if v := n(); v != last {
			last, stable = v, 0
		} else {
			stable++
		}
	}
	return last
}

// TestReadingPausesAtPendingCap: a client that writes requests and never
// reads makes the transport stop reading at MaxPendingRequests unwritten
// responses (before, it read on and memory grew without bound); once the
// client reads, every request is answered.
func TestReadingPausesAtPendingCap(t *testing.T) {
	t.Parallel()
	const requests, maxPending = 300, 4
	h := newHooks()
	rs := startRawServerWith(t, flowServer(h), Options{MaxPendingRequests: maxPending})
	rs.initialize()
	var input strings.Builder
	for i := range requests {
		input.WriteString(toolCall(fmt.Sprint(i), "echo", `{"text":"hello"}`))
	}
	written := rs.send(input.String())
	if n := quiescent(h.echoes.Load); n != maxPending {
		t.Fatalf("%d requests handled while no response could be written, want %d (MaxPendingRequests)", n, maxPending)
	}
	seen := map[string]bool{}
	for range requests {
		r := rs.recv()
		if r.Error != nil {
			t.Fatalf("id %s: error %+v", *r.ID, r.Error)
		}
		seen[string(*r.ID)] = true
	}
	<-written
	if len(seen) != requests {
		t.Fatalf("%d distinct responses, want %d", len(seen), requests)
	}
}

// TestReadingPausesAtInflightBytes: reading pauses when the next request
// would take the unanswered requests beyond MaxInflightBytes, and a request
// larger than the budget is still served when nothing else is pending.
func TestReadingPausesAtInflightBytes(t *testing.T) {
	t.Parallel()
	const budget, size = 100_000, 30_000 // three fit, the fourth does not
	h := newHooks()
	rs := startRawServerWith(t, flowServer(h), Options{MaxInflightBytes: budget})
	rs.initialize()
	text := strings.Repeat("x", size-100)
	var input strings.Builder
	for i := range 10 {
		input.WriteString(toolCall(fmt.Sprint(i), "echo", fmt.Sprintf(`{"text":%q}`, text)))
	}
	written := rs.send(input.String())
	if n := quiescent(h.echoes.Load); n != 3 {
		t.Fatalf("%d requests of %d bytes handled with a budget of %d bytes, want 3", n, size, budget)
	}
	for range 10 {
		if r := rs.recv(); r.Error != nil {
			t.Fatalf("id %s: error %+v", *r.ID, r.Error)
		}
	}
	<-written
	big := strings.Repeat("y", 3*budget)
	rs.write(toolCall("100", "echo", fmt.Sprintf(`{"text":%q}`, big)))
	r := rs.recv()
	var res struct {
		StructuredContent echoOut `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || string(*r.ID) != "100" || res.StructuredContent.Text != big {
		t.Fatalf("a request over the budget with nothing pending: id %s, err %v, error %+v", *r.ID, err, r.Error)
	}
}

// TestNotificationsPassWhilePaused: with reading paused at the cap, a
// notification before the held request still reaches the server, and a
// cancellation of a pending request frees its slot.
func TestNotificationsPassWhilePaused(t *testing.T) {
	t.Parallel()
	h := newHooks()
	rs := startRawServerWith(t, flowServer(h), Options{MaxPendingRequests: 2})
	rs.initialize()
	rs.write(holdCall("1", "a") + holdCall("2", "b"))
	h.waitStarted(t, "a", "b")
	// At the cap: the cancellation is read (notifications do not count),
	// the third call is held until the cancelled call's slot is released.
	rs.write(cancelNote("1") + holdCall("3", "c"))
	h.waitStarted(t, "c")
	close(h.release)
	got := map[string]bool{}
	for range 2 {
		got[string(*rs.recv().ID)] = true
	}
	if !got["2"] || !got["3"] {
		t.Fatalf("response ids %v, want 2 and 3", got)
	}
	for _, r := range rs.readAll() {
		t.Errorf("unexpected response id %s (error %+v)", *r.ID, r.Error)
	}
}

// TestReusedIDCountedWhileReplyIsWritten: a client may reuse an id as soon
// as it reads the response; a request that reuses the id of a response
// still being written is a new request and waits for a slot like any other
// (it was once taken for a duplicate and not counted).
func TestReusedIDCountedWhileReplyIsWritten(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer outR.Close()
	mc, err := NewTransport(inR, outW, Options{MaxPendingRequests: 1}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	go io.WriteString(inW, ping(1)+"\n")
	first, err := mc.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*conn)
	wrote := make(chan error, 1)
	go func() { // blocks until the test reads the output
		wrote <- mc.Write(context.Background(), &jsonrpc.Response{ID: first.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)})
	}()
	// Send the same id again only once the reply has freed it (its slot is
	// still taken while the reply waits to be written); before that, the
	// reader would see a duplicate in-flight id, which the SDK refuses.
	for freed := false; !freed; time.Sleep(time.Millisecond) {
		c.pendMu.Lock()
		_, pending := c.pending[first.(*jsonrpc.Request).ID]
		c.pendMu.Unlock()
		freed = !pending
	}
	go io.WriteString(inW, ping(1)+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := mc.Read(ctx); err == nil {
		t.Fatal("the second request was read while the first one's response was still unwritten")
	}
	out := make([]byte, 256)
	if _, err := outR.Read(out); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	if c.pendingN != 1 {
		t.Fatalf("%d requests pending, want 1 (the reused id is counted)", c.pendingN)
	}
}
