package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection, the first
// wrapped by Conn.
func tcpPair(t *testing.T) (wrapped, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer = <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	wrapped = Conn(c)
	t.Cleanup(func() { wrapped.Close(); peer.Close() })
	return wrapped, peer
}

// writeWhole writes size bytes to w in one Write while r is read
// concurrently, and fails unless the Write reports them all and r carries
// every byte in order.
func writeWhole(t *testing.T, w io.Writer, r io.Reader, size int) {
	t.Helper()
	big := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, int64(len(big))))
		got <- b
	}()
	if n, err := w.Write(big); err != nil || n != len(big) {
		t.Fatalf("write: %d of %d bytes, %v", n, len(big), err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("read %d bytes, not the %d written", len(b), len(big))
	}
}

// TestConn: a wrapped TCP connection carries bytes both ways, including a
// write far beyond what the socket buffers and one raw write hold, and its
// errors are the net package's: a read past its deadline times out, a read
// of a closed connection is net.ErrClosed, the peer's close is io.EOF, all
// as *net.OpError named read or write.
func TestConn(t *testing.T) {
	c, peer := tcpPair(t)
	if _, unwrapped := c.(*net.TCPConn); unwrapped && runtime.GOOS == "linux" {
		t.Fatal("Conn returned the TCP connection unwrapped")
	}

	if _, err := peer.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}

	writeWhole(t, c, peer, 16<<20) // many raw writes, waits in the poller

	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	checkOp(t, err, "read")
	c.SetReadDeadline(time.Time{})

	peer.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer closed: %d, %v; want io.EOF", n, err)
	}
	var werr error
	for range 100 { // the first writes after the peer's close may still be taken
		if _, werr = c.Write([]byte("x")); werr != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
		t.Fatalf("write to a closed peer: %v, want EPIPE or ECONNRESET", werr)
	}
	checkOp(t, werr, "write")

	c.Close()
	if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read of a closed connection: %v, want net.ErrClosed", err)
	}
	checkOp(t, err, "read")
}

// checkOp fails unless err is a *net.OpError named op.
func checkOp(t *testing.T, err error, op string) {
	t.Helper()
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != op {
		t.Errorf("%v: want a *net.OpError named %q", err, op)
	}
	if strings.Contains(err.Error(), "raw-") {
		t.Errorf("%q names the raw call", err)
	}
}

// TestConnOther: a connection without a descriptor is returned as it is.
func TestConnOther(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := Conn(a); got != a {
		t.Fatalf("Conn(net.Pipe end) = %T, want it unchanged", got)
	}
}

// nonblockingPipe returns a pipe whose two ends are in non-blocking mode,
// served by the poller.
func nonblockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe() // os.Pipe makes both ends non-blocking
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestFile: a non-blocking pipe read and written through File carries
// bytes both ways, a write larger than the pipe holds waits for its reader,
// the writer's close reads as io.EOF, and a descriptor in blocking mode is
// refused (a raw read of it would hold the processor).
func TestFile(t *testing.T) {
	r, w := nonblockingPipe(t)
	rr, err := File(r)
	if err != nil {
		t.Fatal(err)
	}
	ww, err := File(w)
	if err != nil {
		t.Fatal(err)
	}

	writeWhole(t, ww, rr, 1<<20) // sixteen pipes full

	w.Close()
	if n, err := rr.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after the writer closed: %d, %v; want io.EOF", n, err)
	}

	if runtime.GOOS != "linux" {
		return
	}
	br, bw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	defer bw.Close()
	br.Fd() // puts it in blocking mode
	if _, err := File(br); !errors.Is(err, errBlocking) {
		t.Fatalf("File of a blocking descriptor: %v, want errBlocking", err)
	}
}

// TestFileClosed: a read waiting in the poller ends when the file is
// closed, with the os package's error for it.
func TestFileClosed(t *testing.T) {
	r, _ := nonblockingPipe(t)
	rr, err := File(r)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := rr.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		var pe *os.PathError
		if err == nil || err == io.EOF || !errors.As(err, &pe) || pe.Op != "read" {
			t.Fatalf("read of a closed file: %v, want a read *os.PathError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read waiting in the poller did not end when the file was closed")
	}
}
