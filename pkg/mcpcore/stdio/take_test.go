package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// takeRig is a connection made by ConnectTaking over pipes whose take
// claims the calls of method "take": their work reports its request on
// ran and waits for hold before answering.
type takeRig struct {
	conn    mcp.Connection
	in      *io.PipeWriter
	lines   chan string // the lines written, read as they come
	offered chan string // the method of every message offered to take
	ran     chan *jsonrpc.Request
	gids    chan string // the goroutine each work ran on
	hold    chan struct{}
	done    bool      // what each work reports: done with its message
	checked chan bool // whether each message offered had its params checked
}

func newTakeRig(t *testing.T, opts Options) *takeRig {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &takeRig{in: inW, lines: make(chan string, 10), offered: make(chan string, 10), ran: make(chan *jsonrpc.Request, 10), gids: make(chan string, 10), hold: make(chan struct{}), checked: make(chan bool, 100)}
	take := func(msg jsonrpc.Message, checked bool) func() bool {
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return nil
		}
		r.offered <- req.Method
		r.checked <- checked
		if req.Method != "take" || !checked && !json.Valid(req.Params) { // a taker checks what it takes
			return nil
		}
		return func() bool {
			r.gids <- goroutineID()
			r.ran <- req
			<-r.hold
			if err := r.conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: []byte(`"taken"`)}); err != nil {
				t.Errorf("writing the taken call's response: %v", err)
			}
			return r.done
		}
	}
	conn, err := NewTransport(inR, outW, opts).ConnectTaking(t.Context(), take)
	if err != nil {
		t.Fatal(err)
	}
	r.conn = conn
	go func() {
		defer close(r.lines)
		out := bufio.NewReader(outR)
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				return
			}
			r.lines <- line
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		conn.Close()
		outW.Close()
	})
	return r
}

// goroutineID returns the id of the calling goroutine.
func goroutineID() string {
	buf := make([]byte, 64)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
	return id
}

func (r *takeRig) send(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(r.in, s); err != nil {
		t.Fatal(err)
	}
}

func (r *takeRig) line(t *testing.T) string {
	t.Helper()
	select {
	case line := <-r.lines:
		return line
	case <-time.After(5 * time.Second):
		t.Fatal("no line written")
		return ""
	}
}

func (r *takeRig) offeredNext(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-r.offered:
		if got != want {
			t.Fatalf("offered %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%q was not offered to take", want)
	}
}

// TestConnectTaking: every message is offered to take in the order read; a
// claimed call is not returned by Read and its work runs while reading goes
// on; its response is written and frees its pending slot (reading stays
// paused at the pending limit until then); a claimed last line without a
// newline runs, and Read then reports EOF.
func TestConnectTaking(t *testing.T) {
	r := newTakeRig(t, Options{MaxPendingRequests: 1})
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"take"}`+"\n")
	r.offeredNext(t, "take")
	if req := <-r.ran; req.ID != mustID(float64(1)) {
		t.Fatalf("the work ran for id %v, want 1", req.ID)
	}
	// The work holds its call: a notification is read and returned, a call
	// waits for the pending slot.
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/progress"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	r.offeredNext(t, "notifications/progress")
	msg, err := r.conn.Read(t.Context())
	if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || req.Method != "notifications/progress" {
		t.Fatalf("Read: %v %v, want the notification", msg, err)
	}
	select {
	case m := <-r.offered:
		t.Fatalf("%q was read while the taken call held the only pending slot", m)
	case <-time.After(50 * time.Millisecond):
	}
	close(r.hold)
	if line := r.line(t); line != `{"jsonrpc":"2.0","id":1,"result":"taken"}`+"\n" {
		t.Fatalf("the taken call's response: %q", line)
	}
	r.offeredNext(t, "ping")
	msg, err = r.conn.Read(t.Context())
	if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || req.ID != mustID(float64(2)) {
		t.Fatalf("Read: %v %v, want the ping", msg, err)
	}
	if err := r.conn.Write(t.Context(), &jsonrpc.Response{ID: mustID(float64(2)), Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	r.line(t)

	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"take"}`) // no newline: the last line
	r.in.Close()
	r.offeredNext(t, "take")
	if req := <-r.ran; req.ID != mustID(float64(3)) {
		t.Fatalf("the work ran for id %v, want 3", req.ID)
	}
	if line := r.line(t); !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":3,`) {
		t.Fatalf("the last call's response: %q", line)
	}
	if msg, err := r.conn.Read(t.Context()); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the last line: %v %v, want EOF", msg, err)
	}
}

// TestTakingReusesReaders: the goroutines that ran taken work read again
// rather than new ones starting (whose stacks would grow anew), and at most
// maxIdleReaders of them wait idle.
func TestTakingReusesReaders(t *testing.T) {
	r := newTakeRig(t, Options{})
	c := r.conn.(*conn)
	close(r.hold)
	gids := map[string]bool{}
	for i := range 10 {
		r.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"take"}`+"\n")
		r.offeredNext(t, "take")
		gids[<-r.gids] = true
		<-r.ran
		r.line(t)
		waitIdle(t, c, 1)
	}
	if len(gids) != 2 {
		t.Errorf("10 calls one after another ran on %d goroutines, want 2 (the reader and the one that took over)", len(gids))
	}

	r2 := newTakeRig(t, Options{})
	c2 := r2.conn.(*conn)
	for i := range 2 * maxIdleReaders {
		r2.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"take"}`+"\n")
		r2.offeredNext(t, "take")
		<-r2.ran
	}
	close(r2.hold)
	for range 2 * maxIdleReaders {
		r2.line(t)
	}
	waitIdle(t, c2, maxIdleReaders)
	time.Sleep(20 * time.Millisecond) // the other readers have finished by now: none of them may idle
	waitIdle(t, c2, maxIdleReaders)
}

// waitIdle waits until n reader goroutines of c are idle.
func waitIdle(t *testing.T, c *conn, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.idleMu.Lock()
		got := len(c.idle)
		c.idleMu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle readers, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTakenLineReused: a taken call's params alias a buffer that is reused
// for a later line once the work reports it done with the message, and
// only then; its method and id never alias it.
func TestTakenLineReused(t *testing.T) {
	// One processor, as the sidecar runs: a buffer put back on one
	// processor's private slot of the pool is not found from another.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, done := range []bool{false, true} {
		r := newTakeRig(t, Options{})
		r.done = done
		close(r.hold)
		var reqs []*jsonrpc.Request
		var sent []string // the params of each call, as sent
		overwritten := 0  // calls whose params a later line overwrote
		for i := range 20 {
			params := `{"p":"` + strings.Repeat(strconv.Itoa(i%10), 40) + `"}`
			r.send(t, `{"jsonrpc":"2.0","id":"id-`+strconv.Itoa(i)+`","method":"take","params":`+params+"}\n")
			r.offeredNext(t, "take")
			<-r.gids
			req := <-r.ran
			r.line(t)
			if string(req.Params) != params {
				t.Fatalf("call %d: params %s, want %s", i, req.Params, params)
			}
			reqs, sent = append(reqs, req), append(sent, params)
			waitIdle(t, r.conn.(*conn), 1) // the work has returned
			overwritten = 0
			for j, earlier := range reqs {
				if earlier.Method != "take" || earlier.ID != mustID("id-"+strconv.Itoa(j)) {
					t.Fatalf("after call %d, call %d's method %q and id %v changed", i, j, earlier.Method, earlier.ID.Raw())
				}
				if string(earlier.Params) != sent[j] {
					overwritten++
				}
			}
		}
		if !done && overwritten > 0 {
			t.Errorf("the params of %d calls whose work is not done with them were overwritten", overwritten)
		}
		// The race detector's sync.Pool drops a quarter of what is put
		// back, at random: over 19 reuses, some still happen.
		if done && overwritten == 0 {
			t.Errorf("20 taken calls in a row, each done with its message, never reused a buffer")
		}
	}
}

// TestTakeUnchecked: a plain request is offered with its params unchecked
// (decodeCall), any other message checked; a request whose unchecked
// params are not JSON, declined by the taker, is answered as the line
// always is (a parse error), and the connection reads on.
func TestTakeUnchecked(t *testing.T) {
	r := newTakeRig(t, Options{MaxPendingRequests: 1}) // a request left pending would stop reading
	close(r.hold)
	offer := func(line, method string, wantChecked bool) {
		t.Helper()
		r.send(t, line+"\n")
		r.offeredNext(t, method)
		if checked := <-r.checked; checked != wantChecked {
			t.Fatalf("%s: offered with params checked %v, want %v", line, checked, wantChecked)
		}
	}
	offer(`{"jsonrpc":"2.0","id":1,"method":"take","params":{"a":[1,"x"]}}`, "take", false)
	<-r.gids
	<-r.ran
	if line := r.line(t); line != `{"jsonrpc":"2.0","id":1,"result":"taken"}`+"\n" {
		t.Fatalf("the plain call's response: %q", line)
	}
	offer(`{"jsonrpc":"2.0","method":"take","id":-2,"params":{"a":1}}`, "take", true) // a negative id: not plain
	<-r.gids
	<-r.ran
	r.line(t)

	// Not JSON, though it begins as a plain request: declined, then
	// answered with the parse error a line that is not JSON gets.
	for range 3 {
		offer(`{"jsonrpc":"2.0","id":3,"method":"take","params":{"a":[1,}}`, "take", false)
		if line := r.line(t); !strings.Contains(line, `"code":-32700`) {
			t.Fatalf("a line that is not JSON: %q, want a parse error", line)
		}
	}
	// Params that are not the last member: declined, then read whole.
	offer(`{"jsonrpc":"2.0","id":4,"method":"other","params":{"a":1},"x":null}`, "other", false)
	if msg, err := r.conn.Read(t.Context()); err != nil || msg.(*jsonrpc.Request).ID != mustID(float64(4)) || string(msg.(*jsonrpc.Request).Params) != `{"a":1}` {
		t.Fatalf("Read: %v %v, want request 4 with params {\"a\":1}", msg, err)
	}
	if err := r.conn.Write(t.Context(), &jsonrpc.Response{ID: mustID(float64(4)), Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	r.line(t)
	offer(`{"jsonrpc":"2.0","id":5,"method":"take","params":{}}`, "take", false)
	<-r.gids
	if req := <-r.ran; req.ID != mustID(float64(5)) {
		t.Fatalf("the work ran for id %v, want 5", req.ID)
	}
	r.line(t)
}

// FuzzDecodeCall: what decodeCall takes is a plain request whose
// envelope the full decoder reads alike; with params that are JSON, the
// whole line is the message the full decoder gives.
func FuzzDecodeCall(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"m","params":{"a":[1,}}`,
		`{"jsonrpc":"2.0","id":10,"method":"m","params":{"a":1},"x":2}`,
		`{ "jsonrpc" : "2.0" , "id" : 0 , "method" : "m" , "params" : { } }`,
		`{"jsonrpc":"2.0","id":01,"method":"m","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"notifications/cancelled","params":{}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		msg := []byte(strings.TrimSpace(line))
		req, ok := decodeCall(msg, wire.NewTable())
		if !ok {
			return
		}
		if !segjson.Valid(req.Params) {
			return // the connection validates them before going on
		}
		full, ok := decodeMessage(msg, false)
		if !ok {
			t.Fatalf("decodeCall took %q, with params that are JSON, which the full decoder refuses", line)
		}
		want, isReq := full.(*jsonrpc.Request)
		if !isReq || want.Method != req.Method || want.ID != req.ID || string(want.Params) != string(req.Params) {
			t.Fatalf("%q: decodeCall %q %v %s; the full decoder %+v", line, req.Method, req.ID.Raw(), req.Params, full)
		}
	})
}
