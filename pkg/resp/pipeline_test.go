package resp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

func TestPipelineLargeBatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	value := bytes.Repeat([]byte("v"), 15<<10)
	cmds := make([][][]byte, 1024)
	for i := range cmds {
		value[0] = byte('a' + i%26)
		cmds[i] = [][]byte{[]byte("SET"), fmt.Appendf(nil, "key:%d", i), bytes.Clone(value)}
	}
	res, err := c.Pipeline(ctxT(t), cmds, PipelineOptions{MaxReplyBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Replies) != 1024 || len(res.Pushes) != 0 || res.ReplyBytes != 1024*5 {
		t.Fatalf("%d replies, %d pushes, %d bytes", len(res.Replies), len(res.Pushes), res.ReplyBytes)
	}
	for i, r := range res.Replies {
		if r.Kind != KindSimpleString || string(r.Str) != "OK" {
			t.Fatalf("reply %d: %#v", i, r)
		}
	}
	// go-redis, an independent client, sees what was written.
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	got, err := rc.Get(ctxT(t), "key:1023").Bytes()
	value[0] = byte('a' + 1023%26)
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("go-redis GET key:1023: %d bytes, %v", len(got), err)
	}
	// Large replies in order: 15 MiB back in one pipeline.
	gets := make([][][]byte, 1024)
	for i := range gets {
		gets[i] = args("GET", fmt.Sprintf("key:%d", i))
	}
	res, err = c.Pipeline(ctxT(t), gets, PipelineOptions{MaxReplyBytes: 64 << 20})
	if err != nil || len(res.Replies) != 1024 {
		t.Fatalf("GETs: %d replies, %v", len(res.Replies), err)
	}
	for i, r := range res.Replies {
		value[0] = byte('a' + i%26)
		if !bytes.Equal(r.Str, value) {
			t.Fatalf("GET key:%d: %d bytes starting %q", i, len(r.Str), r.Str[:1])
		}
	}
	// The same connection carries on, replies in order, errors as replies.
	res, err = c.Pipeline(ctxT(t), [][][]byte{
		args("SET", "n", "41"), args("INCR", "n"), args("HSET", "n", "f", "v"), args("GET", "n"), args("DBSIZE"),
	}, PipelineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Replies
	if string(r[0].Str) != "OK" || r[1].Int != 42 || !r[2].IsError() || !strings.HasPrefix(r[2].ErrorText(), "WRONGTYPE") ||
		string(r[3].Str) != "42" || r[4].Int != 1025 {
		t.Fatalf("replies %v", r)
	}
}

// TestPipelineRepliesMemory: a pipeline given memory for its replies uses
// it when it holds them all, and other memory when it does not, with the
// same replies either way.
func TestPipelineRepliesMemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	cmds := [][][]byte{{[]byte("SET"), []byte("k"), []byte("v")}, {[]byte("GET"), []byte("k")}, {[]byte("INCR"), []byte("n")}}
	check := func(mem []Value, wantShared bool) {
		t.Helper()
		res, err := c.Pipeline(ctxT(t), cmds, PipelineOptions{Replies: mem})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%q %q %d", res.Replies[0].Str, res.Replies[1].Str, len(res.Replies)); got != `"OK" "v" 3` {
			t.Fatalf("replies %s", got)
		}
		if shared := cap(mem) > 0 && &res.Replies[:1][0] == &mem[:1][0]; shared != wantShared {
			t.Fatalf("replies in the memory given (capacity %d): %v, want %v", cap(mem), shared, wantShared)
		}
	}
	check(make([]Value, 1, 3), true) // length is ignored: used from 0
	check(make([]Value, 0, 8), true)
	check(make([]Value, 0, 2), false)
	check(nil, false)
}

func TestPipelineReplyBudget(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	do(t, c, "SET", "big", strings.Repeat("x", 100_000))
	cmds := [][][]byte{args("GET", "big"), args("GET", "big"), args("GET", "big"), args("GET", "big")}
	res, err := c.Pipeline(ctxT(t), cmds, PipelineOptions{MaxReplyBytes: 250_000})
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "reply_bytes" || le.Max != 250_000 {
		t.Fatalf("err = %v, want the reply_bytes limit", err)
	}
	if len(res.Replies) != 2 || res.ReplyBytes != 2*100_011 || !c.Closed() {
		t.Fatalf("%d replies, %d bytes, closed %v", len(res.Replies), res.ReplyBytes, c.Closed())
	}
	if _, err := c.Do(ctxT(t), args("PING")...); !errors.Is(err, ErrClosed) {
		t.Fatalf("after the failure: %v, want ErrClosed", err)
	}
	// Exactly at the budget passes: each reply is 100,011 bytes on the wire
	// and one decoded value.
	c2 := dial(t, DialOptions{Addr: srv.Addr})
	if _, err := c2.Pipeline(ctxT(t), cmds, PipelineOptions{MaxReplyBytes: 4 * (100_011 + valueCost)}); err != nil {
		t.Fatalf("at the budget: %v", err)
	}
}

func TestBlockingPopThroughReceive(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	consumer := dial(t, DialOptions{Addr: srv.Addr})
	producer := dial(t, DialOptions{Addr: srv.Addr})
	if n, err := consumer.Send(ctxT(t), [][][]byte{args("BRPOP", "jobs", "0")}); err != nil || n != CommandSize(args("BRPOP", "jobs", "0")) {
		t.Fatalf("Send: %d, %v", n, err)
	}
	start := time.Now()
	res, err := consumer.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 100 * time.Millisecond})
	if err != nil || !res.TimedOut || len(res.Frames) != 0 {
		t.Fatalf("before LPUSH: %+v, %v", res, err)
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Errorf("Wait 100ms returned after %v", d)
	}
	// A cancelled receive keeps the connection and the pending reply.
	ctx, cancel := context.WithCancel(ctxT(t))
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := consumer.Receive(ctx, ReceiveOptions{MaxFrames: 1, Wait: 10 * time.Second}); !errors.Is(err, context.Canceled) || consumer.Closed() {
		t.Fatalf("cancelled receive: %v, closed %v", err, consumer.Closed())
	}
	if v := do(t, producer, "LPUSH", "jobs", "job-1"); v.Int != 1 {
		t.Fatalf("LPUSH = %#v", v)
	}
	res, err = consumer.Receive(ctxT(t), ReceiveOptions{MaxFrames: 5, Wait: 5 * time.Second})
	if err != nil || res.TimedOut || len(res.Frames) != 1 {
		t.Fatalf("after LPUSH: %+v, %v", res, err)
	}
	if f := res.Frames[0]; f.Kind != KindArray || len(f.Elems) != 2 || string(f.Elems[0].Str) != "jobs" || string(f.Elems[1].Str) != "job-1" {
		t.Fatalf("BRPOP reply %#v", f)
	}
}

func TestSubscribeReceive(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	publisher := dial(t, DialOptions{Addr: srv.Addr})
	for _, proto := range []int{3, 2} {
		sub := dial(t, DialOptions{Addr: srv.Addr, Protocol: proto})
		ch := fmt.Sprintf("news-%d", proto)
		if _, err := sub.Send(ctxT(t), [][][]byte{args("SUBSCRIBE", ch)}); err != nil {
			t.Fatal(err)
		}
		want := KindPush
		if proto == 2 {
			want = KindArray
		}
		res, err := sub.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 5 * time.Second})
		if err != nil || len(res.Frames) != 1 || res.Frames[0].Kind != want || string(res.Frames[0].Elems[0].Str) != "subscribe" {
			t.Fatalf("RESP%d subscribe: %+v, %v", proto, res, err)
		}
		if v := do(t, publisher, "PUBLISH", ch, "hello"); v.Int != 1 {
			t.Fatalf("PUBLISH = %#v", v)
		}
		res, err = sub.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 5 * time.Second})
		if err != nil || len(res.Frames) != 1 {
			t.Fatalf("RESP%d message: %+v, %v", proto, res, err)
		}
		m := res.Frames[0]
		if m.Kind != want || len(m.Elems) != 3 || string(m.Elems[0].Str) != "message" || string(m.Elems[1].Str) != ch || string(m.Elems[2].Str) != "hello" {
			t.Fatalf("RESP%d message %#v", proto, m)
		}
	}
}

// fakeServer accepts one connection and hands it to the test, which plays
// the server (for faults a real server does not produce on demand).
func fakeServer(t *testing.T) (addr string, conn <-chan net.Conn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := l.Accept()
		if err == nil {
			ch <- nc
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		select {
		case nc := <-ch:
			nc.Close()
		default:
		}
	})
	return l.Addr().String(), ch
}

// A receive that times out in the middle of a frame continues it later.
func TestReceiveResumesPartialFrame(t *testing.T) {
	t.Parallel()
	addr, accepted := fakeServer(t)
	c := dial(t, DialOptions{Addr: addr, Protocol: 2}) // no password: no handshake
	srv := <-accepted
	defer srv.Close()
	if _, err := srv.Write([]byte("*2\r\n$10\r\nhello")); err != nil {
		t.Fatal(err)
	}
	res, err := c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 100 * time.Millisecond})
	if err != nil || !res.TimedOut {
		t.Fatalf("half a frame: %+v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	time.AfterFunc(30*time.Millisecond, cancel)
	if _, err := c.Receive(ctx, ReceiveOptions{MaxFrames: 1, Wait: time.Minute}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := srv.Write([]byte("world\r\n:7\r\n+next\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipeline(ctxT(t), [][][]byte{args("PING")}, PipelineOptions{}); err == nil || c.Closed() {
		t.Fatalf("pipeline while a frame is partly received: %v, closed %v", err, c.Closed())
	}
	res, err = c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 5 * time.Second})
	if err != nil || len(res.Frames) != 1 {
		t.Fatalf("rest of the frame: %+v, %v", res, err)
	}
	f := res.Frames[0]
	if len(f.Elems) != 2 || string(f.Elems[0].Str) != "helloworld" || f.Elems[1].Int != 7 || res.Bytes != 25 {
		t.Fatalf("frame %#v, %d bytes", f, res.Bytes)
	}
	// A protocol error closes the connection.
	srv.Write([]byte("?bad\r\n"))
	res, err = c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 5, Wait: 5 * time.Second})
	if err != nil || len(res.Frames) != 1 || string(res.Frames[0].Str) != "next" {
		t.Fatalf("frame before the bad one: %+v, %v", res, err)
	}
	_, err = c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 5 * time.Second})
	var pe *ProtocolError
	if !errors.As(err, &pe) || !c.Closed() {
		t.Fatalf("bad frame: %v, closed %v", err, c.Closed())
	}
}

func TestReceiveMaxBytes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	if _, err := c.Send(ctxT(t), [][][]byte{args("PING"), args("PING"), args("PING")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let all three replies arrive
	// Each "+PONG" is 7 bytes on the wire and one decoded value: room for
	// two and a bit.
	max := 2*(7+valueCost) + 1
	res, err := c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 10, Wait: time.Second, MaxBytes: max})
	if err != nil || len(res.Frames) != 2 || res.Bytes != 14 {
		t.Fatalf("MaxBytes %d: %+v, %v", max, res, err)
	}
	res, err = c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 10, Wait: time.Second})
	if err != nil || len(res.Frames) != 1 {
		t.Fatalf("the rest: %+v, %v", res, err)
	}
	if _, err := c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 0}); err == nil {
		t.Fatal("MaxFrames 0 accepted")
	}
	// A first frame over MaxBytes cannot ever be returned: the connection
	// is closed with a typed error.
	c.Send(ctxT(t), [][][]byte{args("ECHO", "0123456789")})
	_, err = c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 5 * time.Second, MaxBytes: 10})
	var le *LimitError
	if !errors.As(err, &le) || !c.Closed() {
		t.Fatalf("over MaxBytes: %v, closed %v", err, c.Closed())
	}
}

func TestPipelineContextEnds(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	cmds := [][][]byte{args("SET", "a", "1"), args("INCR", "a"), args("BLPOP", "empty", "0"), args("GET", "a")}
	for _, how := range []string{"deadline", "cancel"} {
		c := dial(t, DialOptions{Addr: srv.Addr})
		ctx, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
		if how == "cancel" {
			cancel()
			ctx, cancel = context.WithCancel(ctxT(t))
			time.AfterFunc(300*time.Millisecond, cancel)
		}
		res, err := c.Pipeline(ctx, cmds, PipelineOptions{})
		cancel()
		want := map[string]error{"deadline": context.DeadlineExceeded, "cancel": context.Canceled}[how]
		if !errors.Is(err, want) || len(res.Replies) != 2 || !c.Closed() {
			t.Fatalf("%s: %d replies, %v, closed %v", how, len(res.Replies), err, c.Closed())
		}
		if !strings.Contains(err.Error(), "2 of 4 replies") {
			t.Errorf("%s: message %q", how, err)
		}
	}
	// A context that ended before dispatch sends nothing and keeps the
	// connection.
	c := dial(t, DialOptions{Addr: srv.Addr})
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	if _, err := c.Pipeline(ctx, cmds, PipelineOptions{}); !errors.Is(err, context.Canceled) || c.Closed() {
		t.Fatalf("ended before dispatch: %v, closed %v", err, c.Closed())
	}
	if v := do(t, c, "GET", "a"); string(v.Str) != "2" {
		t.Fatalf("GET a = %#v", v)
	}
}

func TestPipelineServerKilled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	time.AfterFunc(200*time.Millisecond, srv.Stop)
	res, err := c.Pipeline(ctxT(t), [][][]byte{args("SET", "a", "1"), args("BLPOP", "empty", "0"), args("GET", "a")}, PipelineOptions{})
	if err == nil || len(res.Replies) != 1 || !c.Closed() || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%d replies, %v, closed %v", len(res.Replies), err, c.Closed())
	}
	if !strings.Contains(err.Error(), srv.Addr) {
		t.Errorf("error %q does not name the server", err)
	}
}

func TestRaw(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	if _, err := c.Send(ctxT(t), [][][]byte{args("PING"), args("PING")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // both replies arrive, and are read together
	res, err := c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: time.Second})
	if err != nil || len(res.Frames) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	// The second PONG was read ahead by the decoder: raw access returns it.
	data, timedOut, eof, err := c.ReadRaw(ctxT(t), 100, time.Second)
	if err != nil || timedOut || eof || string(data) != "+PONG\r\n" {
		t.Fatalf("read-ahead: %q %v %v %v", data, timedOut, eof, err)
	}
	if _, err := c.Do(ctxT(t), args("PING")...); !errors.Is(err, ErrRawMode) {
		t.Fatalf("Do in raw mode: %v", err)
	}
	data, timedOut, eof, err = c.ReadRaw(ctxT(t), 100, 50*time.Millisecond)
	if err != nil || !timedOut || eof || len(data) != 0 {
		t.Fatalf("nothing to read: %q %v %v %v", data, timedOut, eof, err)
	}
	if _, err := c.WriteRaw(ctxT(t), AppendCommand(nil, args("ECHO", "0123456789"))); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for len(got) < 17 {
		data, _, _, err := c.ReadRaw(ctxT(t), 4, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, data...)
	}
	if string(got) != "$10\r\n0123456789\r\n" {
		t.Fatalf("raw ECHO: %q", got)
	}
	c.WriteRaw(ctxT(t), AppendCommand(nil, args("QUIT")))
	got = nil
	for {
		data, _, eof, err := c.ReadRaw(ctxT(t), 100, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, data...)
		if eof {
			break
		}
	}
	if string(got) != "+OK\r\n" || !c.Closed() {
		t.Fatalf("after QUIT: %q, closed %v", got, c.Closed())
	}
}

// Close from another goroutine ends a blocked pipeline with ErrClosed.
func TestPipelineClosedWhileRunning(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	time.AfterFunc(100*time.Millisecond, func() { c.Close() })
	res, err := c.Pipeline(ctxT(t), [][][]byte{args("PING"), args("BLPOP", "empty", "0")}, PipelineOptions{})
	if !errors.Is(err, ErrClosed) || len(res.Replies) != 1 {
		t.Fatalf("%d replies, %v, want ErrClosed", len(res.Replies), err)
	}
}

// A caller waiting for a side held by another operation gives up when its
// context ends and leaves the connection (and the other operation) alone.
func TestWaitForSideKeepsConn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	done := make(chan error, 1)
	var res PipelineResult
	go func() {
		var err error
		res, err = c.Pipeline(ctxT(t), [][][]byte{args("BLPOP", "q", "0")}, PipelineOptions{})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // the pipeline holds both sides
	ctx, cancel := context.WithTimeout(ctxT(t), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Send(ctx, [][][]byte{args("PING")}); !errors.Is(err, context.DeadlineExceeded) || c.Closed() {
		t.Fatalf("Send waiting for the write side: %v, closed %v", err, c.Closed())
	}
	if _, err := c.Receive(ctx, ReceiveOptions{MaxFrames: 1}); !errors.Is(err, context.DeadlineExceeded) || c.Closed() {
		t.Fatalf("Receive waiting for the read side: %v, closed %v", err, c.Closed())
	}
	do(t, dial(t, DialOptions{Addr: srv.Addr}), "LPUSH", "q", "x")
	if err := <-done; err != nil || len(res.Replies) != 1 || len(res.Replies[0].Elems) != 2 {
		t.Fatalf("the pipeline: %+v, %v", res, err)
	}
}

// TestPipelineOnReply: OnReply receives every reply in order, with its
// decoded size, in place of Replies; a large top-level string is lent
// from the read buffer (valid during the call), a small one and the
// strings inside an aggregate are copies; pushes are still collected; and
// an error from OnReply fails the pipeline and closes the connection.
func TestPipelineOnReply(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c := dial(t, DialOptions{Addr: srv.Addr})
	big := strings.Repeat("b", LentBytes+10)
	if _, err := c.Pipeline(ctxT(t), [][][]byte{args("SET", "big", big), args("RPUSH", "l", big, "x")}, PipelineOptions{}); err != nil {
		t.Fatal(err)
	}
	cmds := [][][]byte{args("GET", "big"), args("PING"), args("LRANGE", "l", "0", "-1"), args("GET", "big"), args("NOPE")}
	var got []string
	var lent []Value
	res, err := c.Pipeline(ctxT(t), cmds, PipelineOptions{OnReply: func(v *Value, cost int64) error {
		if cost < int64(len(v.Str)) {
			t.Errorf("reply %d: cost %d below its %d bytes", len(got), cost, len(v.Str))
		}
		switch {
		case v.Kind == KindArray:
			got = append(got, fmt.Sprintf("%d items, %d bytes", len(v.Elems), len(v.Elems[0].Str)))
			lent = append(lent, *v) // copies: must survive the next read
		case len(v.Str) >= LentBytes:
			got = append(got, fmt.Sprintf("%d bytes, ok %v", len(v.Str), string(v.Str) == big))
		default:
			got = append(got, string(v.Str))
			lent = append(lent, *v)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("%d bytes, ok true", len(big)), "PONG", fmt.Sprintf("2 items, %d bytes", len(big)), fmt.Sprintf("%d bytes, ok true", len(big))}
	if len(got) != 5 || fmt.Sprint(got[:4]) != fmt.Sprint(want) || !strings.HasPrefix(got[4], "ERR") {
		t.Fatalf("OnReply saw %q", got)
	}
	if res.Received != len(cmds) || len(res.Replies) != 0 {
		t.Fatalf("received %d, replies %d", res.Received, len(res.Replies))
	}
	if string(lent[0].Str) != "PONG" || string(lent[1].Elems[0].Str) != big || string(lent[1].Elems[1].Str) != "x" {
		t.Fatal("a kept copy changed after its call")
	}
	// The connection serves ordinary pipelines after.
	if v, err := c.Do(ctxT(t), args("GET", "big")...); err != nil || string(v.Str) != big {
		t.Fatalf("after: %v", err)
	}
	// An error from OnReply fails the pipeline with it.
	stop := errors.New("stop")
	res, err = c.Pipeline(ctxT(t), [][][]byte{args("PING"), args("PING")}, PipelineOptions{OnReply: func(*Value, int64) error { return stop }})
	if !errors.Is(err, stop) || res.Received != 1 || !c.Closed() {
		t.Fatalf("OnReply failing: %v, received %d, closed %v", err, res.Received, c.Closed())
	}
}
