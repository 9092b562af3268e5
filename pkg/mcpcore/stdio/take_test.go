package stdio

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	hold    chan struct{}
}

func newTakeRig(t *testing.T, opts Options) *takeRig {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &takeRig{in: inW, lines: make(chan string, 10), offered: make(chan string, 10), ran: make(chan *jsonrpc.Request, 10), hold: make(chan struct{})}
	take := func(msg jsonrpc.Message) func() {
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return nil
		}
		r.offered <- req.Method
		if req.Method != "take" {
			return nil
		}
		return func() {
			r.ran <- req
			<-r.hold
			if err := r.conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: []byte(`"taken"`)}); err != nil {
				t.Errorf("writing the taken call's response: %v", err)
			}
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
