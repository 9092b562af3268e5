package resp

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t *testing.T, opts DialOptions) *Conn {
	t.Helper()
	c, err := Dial(ctxT(t), opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

func do(t *testing.T, c *Conn, a ...string) Value {
	t.Helper()
	v, err := c.Do(ctxT(t), args(a...)...)
	if err != nil {
		t.Fatalf("%v: %v", a, err)
	}
	return v
}

// hgetallKind returns the kind of an HGETALL reply: a map in RESP3, an
// array in RESP2.
func hgetallKind(t *testing.T, c *Conn) Kind {
	do(t, c, "HSET", "h", "f", "v")
	return do(t, c, "HGETALL", "h").Kind
}

func TestDialPassword(t *testing.T) {
	t.Parallel()
	const pw = "s3cret pass"
	srv := redistest.Start(t, redistest.Options{Password: pw})
	c := dial(t, DialOptions{Addr: srv.Addr, Password: pw})
	if c.Protocol() != 3 || c.Addr() != srv.Addr || hgetallKind(t, c) != KindMap {
		t.Fatalf("protocol %d, addr %s", c.Protocol(), c.Addr())
	}
	c2 := dial(t, DialOptions{Addr: srv.Addr, Password: pw, Protocol: 2, Database: 5})
	if c2.Protocol() != 2 || hgetallKind(t, c2) != KindArray {
		t.Fatalf("RESP2: protocol %d", c2.Protocol())
	}
	if info := do(t, c2, "CLIENT", "INFO"); !strings.Contains(string(info.Str), " db=5 ") {
		t.Errorf("SELECT 5 not applied: %s", info.Str)
	}
	for _, proto := range []int{3, 2} {
		_, err := Dial(ctxT(t), DialOptions{Addr: srv.Addr, Password: "wrong " + pw, Protocol: proto})
		var se *ServerError
		if !errors.As(err, &se) || !strings.HasPrefix(se.Reply, "WRONGPASS") || se.Addr != srv.Addr {
			t.Fatalf("protocol %d, wrong password: %v, want *ServerError WRONGPASS", proto, err)
		}
		if want := map[int]string{3: "HELLO", 2: "AUTH"}[proto]; se.Command != want {
			t.Errorf("protocol %d: Command %q, want %q", proto, se.Command, want)
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("error %q contains the password", err)
		}
	}
	// Without a password, HELLO 3 is refused; RESP2 connects and the
	// first command is refused.
	_, err := Dial(ctxT(t), DialOptions{Addr: srv.Addr})
	var se *ServerError
	if !errors.As(err, &se) || se.Command != "HELLO" || !strings.HasPrefix(se.Reply, "NOAUTH") {
		t.Fatalf("no password: %v, want *ServerError NOAUTH for HELLO", err)
	}
	c3 := dial(t, DialOptions{Addr: srv.Addr, Protocol: 2})
	if v := do(t, c3, "GET", "k"); !v.IsError() || !strings.HasPrefix(v.ErrorText(), "NOAUTH") {
		t.Errorf("unauthenticated GET: %#v", v)
	}
	_, err = Dial(ctxT(t), DialOptions{Addr: srv.Addr, Password: pw, Database: 99})
	if !errors.As(err, &se) || se.Command != "SELECT" {
		t.Errorf("SELECT 99: %v, want *ServerError for SELECT", err)
	}
	if _, err := Dial(ctxT(t), DialOptions{Addr: srv.Addr, Protocol: 4}); err == nil {
		t.Error("protocol 4 accepted")
	}
}

func TestDialACLUser(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{ACL: []string{
		"user default off",
		"user agent on >agent-pw ~* +@all -flushall",
		"user free on nopass ~* +@all",
	}})
	for _, proto := range []int{3, 2} {
		free := dial(t, DialOptions{Addr: srv.Addr, Username: "free", Protocol: proto})
		if v := do(t, free, "ACL", "WHOAMI"); string(v.Str) != "free" {
			t.Fatalf("RESP%d nopass user: WHOAMI = %#v", proto, v)
		}
	}
	c := dial(t, DialOptions{Addr: srv.Addr, Username: "agent", Password: "agent-pw"})
	if v := do(t, c, "ACL", "WHOAMI"); string(v.Str) != "agent" {
		t.Fatalf("WHOAMI = %#v", v)
	}
	if v := do(t, c, "FLUSHALL"); !v.IsError() || !strings.HasPrefix(v.ErrorText(), "NOPERM") {
		t.Fatalf("forbidden FLUSHALL: %#v, want a NOPERM error reply", v)
	}
	c2 := dial(t, DialOptions{Addr: srv.Addr, Username: "agent", Password: "agent-pw", Protocol: 2})
	if v := do(t, c2, "ACL", "WHOAMI"); string(v.Str) != "agent" {
		t.Fatalf("RESP2 WHOAMI = %#v", v)
	}
	_, err := Dial(ctxT(t), DialOptions{Addr: srv.Addr, Username: "agent", Password: "nope"})
	var se *ServerError
	if !errors.As(err, &se) || strings.Contains(err.Error(), "nope") {
		t.Fatalf("wrong ACL password: %v", err)
	}
}

// A server that refuses HELLO (here renamed away) fails a RESP3 dial with
// a *ServerError; the server's echo of the arguments does not leak the
// password. Protocol 2 works.
func TestDialHelloRefused(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-password"
	srv := redistest.Start(t, redistest.Options{Password: pw, Config: []string{`rename-command HELLO ""`}})
	_, err := Dial(ctxT(t), DialOptions{Addr: srv.Addr, Password: pw})
	var se *ServerError
	if !errors.As(err, &se) || se.Command != "HELLO" || !strings.Contains(se.Reply, "unknown command") {
		t.Fatalf("err = %v, want *ServerError for HELLO", err)
	}
	if strings.Contains(err.Error(), pw) || !strings.Contains(se.Reply, "***") {
		t.Fatalf("error %q: want the echoed password replaced by ***", err)
	}
	c := dial(t, DialOptions{Addr: srv.Addr, Password: pw, Protocol: 2})
	if v := do(t, c, "PING"); string(v.Str) != "PONG" {
		t.Fatalf("PING = %#v", v)
	}
}

func TestDialTLS(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{TLS: true, RequireClientCert: true, Password: "tls-pw"})
	c := dial(t, DialOptions{Addr: srv.Addr, Password: "tls-pw", TLS: srv.TLSConfig()})
	if v := do(t, c, "PING"); string(v.Str) != "PONG" {
		t.Fatalf("PING = %#v", v)
	}
	// A receive timeout keeps a TLS connection usable.
	if _, err := c.Send(ctxT(t), [][][]byte{args("BRPOP", "q", "0")}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 50 * time.Millisecond}); err != nil || !res.TimedOut {
		t.Fatalf("TLS receive: %+v, %v", res, err)
	}
	do(t, dial(t, DialOptions{Addr: srv.Addr, Password: "tls-pw", TLS: srv.TLSConfig()}), "LPUSH", "q", "x")
	if res, err := c.Receive(ctxT(t), ReceiveOptions{MaxFrames: 1, Wait: 5 * time.Second}); err != nil || len(res.Frames) != 1 {
		t.Fatalf("TLS receive after the timeout: %+v, %v", res, err)
	}
	// Without the client certificate the server refuses the connection.
	noCert := srv.TLSConfig()
	noCert.Certificates = nil
	_, err := Dial(ctxT(t), DialOptions{Addr: srv.Addr, Password: "tls-pw", TLS: noCert})
	if err == nil || !strings.Contains(err.Error(), srv.Addr) {
		t.Fatalf("no client certificate: %v, want an error naming %s", err, srv.Addr)
	}
	// A server name the certificate does not carry.
	wrongName := srv.TLSConfig()
	wrongName.ServerName = "redis.example"
	_, err = Dial(ctxT(t), DialOptions{Addr: srv.Addr, TLS: wrongName})
	var ce *tls.CertificateVerificationError
	if !errors.As(err, &ce) {
		t.Fatalf("wrong server name: %v, want a certificate verification error", err)
	}
	// Plaintext to a TLS port fails within the connect timeout.
	start := time.Now()
	if _, err := Dial(ctxT(t), DialOptions{Addr: srv.Addr, ConnectTimeout: 500 * time.Millisecond}); err == nil {
		t.Fatal("plaintext dial to a TLS port succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("plaintext dial took %v", d)
	}
}

func TestDialFailures(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	l.Close()
	_, err = Dial(ctxT(t), DialOptions{Addr: closedAddr})
	var oe *net.OpError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), closedAddr) {
		t.Fatalf("unreachable: %v, want a *net.OpError naming %s", err, closedAddr)
	}

	// A listener that accepts and never answers: the connect timeout ends
	// the dial.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			nc, err := silent.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- nc
		}
	}()
	defer func() {
		silent.Close()
		for nc := range accepted {
			nc.Close()
		}
	}()
	start := time.Now()
	_, err = Dial(ctxT(t), DialOptions{Addr: silent.Addr().String(), ConnectTimeout: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), silent.Addr().String()) {
		t.Fatalf("silent server: %v, want DeadlineExceeded naming the address", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("connect timeout 200ms took %v", d)
	}
	// The caller's context cancels the dial.
	ctx, cancel := context.WithCancel(ctxT(t))
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = Dial(ctx, DialOptions{Addr: silent.Addr().String()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled dial: %v, want context.Canceled", err)
	}
}
