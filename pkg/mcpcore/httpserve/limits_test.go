package httpserve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawConn is a client connection that speaks HTTP/1.1 by hand, so that it
// can stop half-way through a request.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

// stall opens a connection to env and sends head (request line and headers,
// without the blank line) and then part, the beginning of a body.
func stall(t *testing.T, env *testEnv, head, part string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(env.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	host := strings.TrimPrefix(env.base, "http://")
	if _, err := io.WriteString(c, head+"\r\nHost: "+host+"\r\n\r\n"+part); err != nil {
		t.Fatal(err)
	}
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// status reads the response's status line, waiting at most d.
func (c *rawConn) status(d time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadString('\n')
	return strings.TrimSpace(line), err
}

// closedAfterReply reports whether the server closes the connection after
// the response whose status line was read.
func (c *rawConn) closedAfterReply(d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c.r)
	return err == nil // EOF, not a timeout
}

const mcpHead = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"

// TestStalledBodies: a client that sends headers and then stalls is
// answered 408 when BodyTimeout passes, and its connection is closed, on
// /mcp and on plugin routes alike, whatever the body's framing; each /mcp
// one is reported once to Options.Refused as timeout body_timeout.
func TestStalledBodies(t *testing.T) {
	var refusals refusalLog
	env := start(t, Options{
		BodyTimeout: 300 * time.Millisecond,
		Routes:      []Route{{Pattern: "POST /api/{name}", Handler: nameRoute(), Owner: "actions"}},
		Refused:     refusals.add,
	})
	var conns []*rawConn
	for range 20 {
		conns = append(conns,
			stall(t, env, mcpHead+"\r\nContent-Length: 100", `{"jsonrpc"`),
			stall(t, env, mcpHead+"\r\nTransfer-Encoding: chunked", "5\r\n{\"jso"),
			stall(t, env, mcpHead+"\r\nContent-Length: 100\r\nMcp-Protocol-Version: 2026-07-28", `{`),
		)
	}
	route := stall(t, env, "POST /api/x HTTP/1.1\r\nContent-Length: 10", "abc")
	began := time.Now()
	// The server stays available meanwhile.
	if resp, _ := env.do(t, http.MethodGet, HealthPath, "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	for i, c := range conns {
		line, err := c.status(5 * time.Second)
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 408") {
			t.Fatalf("stalled request %d: %q %v, want 408", i, line, err)
		}
		if !c.closedAfterReply(2 * time.Second) {
			t.Fatalf("stalled request %d: connection left open", i)
		}
	}
	// The route's own handler sees its body read fail.
	if line, err := route.status(5 * time.Second); err != nil || !strings.HasPrefix(line, "HTTP/1.1 400") {
		t.Fatalf("stalled route body: %q %v, want the route's 400", line, err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("stalled requests answered after %v", d)
	}
	if got := refusals.get(); len(got) != 1 || got["timeout body_timeout"] != len(conns) {
		t.Errorf("refusals reported: %v, want %d timeout body_timeout", got, len(conns))
	}
}

// refusalLog counts what Options.Refused is told, by "reason limit".
type refusalLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *refusalLog) add(reason, limit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[reason+" "+limit]++
}

func (l *refusalLog) get() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.n)
}

// TestRefusedBeforeBody: a request refused before its body is read (no
// token, a foreign origin) is answered at once, however the body stalls,
// and its connection closes; each token refusal is reported once to
// Options.Refused as auth (a foreign origin is not a refused call).
func TestRefusedBeforeBody(t *testing.T) {
	var refusals refusalLog
	env := start(t, Options{BearerTokens: []string{"secret"}, BodyTimeout: time.Minute, Refused: refusals.add})
	var conns []*rawConn
	for range 20 {
		conns = append(conns,
			stall(t, env, mcpHead+"\r\nContent-Length: 1000", `{`),
			stall(t, env, mcpHead+"\r\nContent-Length: 1000\r\nAuthorization: Bearer wrong", ``),
			stall(t, env, mcpHead+"\r\nTransfer-Encoding: chunked\r\nOrigin: http://evil.example", "1\r\n{"),
		)
	}
	for i, c := range conns {
		line, err := c.status(2 * time.Second)
		want := "HTTP/1.1 401"
		if i%3 == 2 {
			want = "HTTP/1.1 403"
		}
		if err != nil || !strings.HasPrefix(line, want) {
			t.Fatalf("request %d: %q %v, want %s", i, line, err, want)
		}
		if !c.closedAfterReply(2 * time.Second) {
			t.Fatalf("request %d: connection left open", i)
		}
	}
	if got := refusals.get(); len(got) != 1 || got["auth "] != 40 {
		t.Errorf("refusals reported: %v, want 40 auth", got)
	}
}

// limitError decodes a 503 refusal's JSON-RPC error.
func limitError(t *testing.T, body string) (limit string, max int64) {
	t.Helper()
	var msg struct {
		Error struct {
			Code    int       `json:"code"`
			Message string    `json:"message"`
			Data    limitData `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Error.Code != codeLimit {
		t.Fatalf("refusal %q (%v): want a JSON-RPC error %d", body, err, codeLimit)
	}
	if !strings.Contains(msg.Error.Message, msg.Error.Data.Limit) {
		t.Errorf("message %q does not name the limit", msg.Error.Message)
	}
	return msg.Error.Data.Limit, msg.Error.Data.Max
}

// paddedPing is a ping of about n bytes.
func paddedPing(n int) string {
	return `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", n) + `"}}}`
}

// TestInflightBudget: bodies being read or handled count against
// MaxInflightBytes, a declared length at once and a chunked body as it
// grows; one beyond it is refused with 503 naming the limit, and the bytes
// come back when the request ends.
func TestInflightBudget(t *testing.T) {
	const budgetMax = 256 << 10
	env := start(t, Options{MaxInflightBytes: budgetMax, BodyTimeout: 10 * time.Second})
	wantRefused := func(what string, size int) {
		t.Helper()
		resp, body := env.do(t, http.MethodPost, MCPPath, paddedPing(size), nil)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s: %d %s, want 503", what, resp.StatusCode, body)
		}
		if limit, max := limitError(t, body); limit != "inflight_request_bytes" || max != budgetMax {
			t.Fatalf("%s: refused naming %s %d", what, limit, max)
		}
	}
	wantServed := func(what string, size int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, body := env.do(t, http.MethodPost, MCPPath, paddedPing(size), nil)
			if resp.StatusCode == http.StatusOK {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d %s, want 200", what, resp.StatusCode, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	wantServed("alone", 200<<10)
	// A declared length holds its bytes from the start.
	held := stall(t, env, mcpHead+"\r\nContent-Length: 200000", `{`)
	time.Sleep(100 * time.Millisecond) // let the server take the request
	wantRefused("beside a declared 200000", 100<<10)
	held.Close()
	wantServed("after it ended", 100<<10)

	// A chunked body holds its buffer as it grows: 100 KiB read need 128 KiB.
	chunk := strings.Repeat("x", 100<<10)
	held = stall(t, env, mcpHead+"\r\nTransfer-Encoding: chunked", fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk))
	time.Sleep(100 * time.Millisecond)
	wantRefused("beside a chunked 100 KiB", 150<<10)
	held.Close()
	wantServed("after it ended", 150<<10)

	// A body larger than the whole budget is refused outright.
	wantRefused("larger than the budget", budgetMax)
	deadline := time.Now().Add(5 * time.Second)
	for env.h.inflight.used.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still held after every request ended", env.h.inflight.used.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
