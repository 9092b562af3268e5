// Package rawio reads and writes descriptors that are in non-blocking mode
// and served by the Go runtime's poller, making each read and write a raw
// system call.
//
// Why: the runtime treats every read and write of the os and net packages
// as a call that may block (syscall.Read and Write tell the scheduler so),
// and a goroutine entering one wakes the scheduler's monitor thread
// (sysmon) when that thread sleeps because every processor was idle; once
// awake it checks every 20 µs until the processors idle again. A sidecar
// whose one processor idles twice per call (awaiting the datastore's reply,
// awaiting the next request) woke it on every call: a fifth of the stdio
// sidecar's CPU samples, and its wake-ups landed on the processor that ran
// the datastore or the client. A read or write of a non-blocking
// descriptor returns at once, so it cannot hold a processor the way a
// blocking call can: it is made as a raw system call, and when it would
// block the goroutine waits in the poller, as the os and net packages wait.
//
// The cost: the monitor also preempts a goroutine that computes for more
// than 10 ms, so with it asleep a long computation on one processor is
// preempted only at the next timer, garbage collection or ordinary system
// call, not after 10 ms. Each raw write is kept to writeChunk bytes so that
// no one call holds a processor long.
//
// Only Read and Write change: deadlines, Close and errors behave as the
// wrapped connection's or file's, and on systems other than Linux the
// wrappers are the connection or file itself.
package rawio

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
)

// writeChunk is the most one raw write hands the kernel.
const writeChunk = 128 << 10

// Conn wraps c, a connection whose descriptor the poller serves (a
// *net.TCPConn or *net.UnixConn), so that its reads and writes are raw
// system calls; any other connection is returned as it is.
func Conn(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok || !supported {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &conn{Conn: c, rc: rc}
}

// conn is a connection whose Read and Write are raw system calls.
type conn struct {
	net.Conn
	rc syscall.RawConn
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := read(c.rc, p)
	return n, c.opError("read", err)
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := write(c.rc, p)
	return n, c.opError("write", err)
}

// opError wraps err as the net package wraps a read's or write's error:
// the poller's own errors (deadline, closed) come wrapped already, named
// after the raw call, and are renamed.
func (c *conn) opError(op string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		renamed := *oe
		renamed.Op = op
		return &renamed
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// File returns a reader and writer of f, which must be in non-blocking
// mode (a pipe or socket the poller serves), whose reads and writes are
// raw system calls. It fails for a file in blocking mode: a raw read of it
// would hold its processor until data came. f stays the caller's to close.
func File(f *os.File) (io.ReadWriter, error) {
	if !supported {
		return f, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if err := checkNonblocking(rc); err != nil {
		return nil, &fs.PathError{Op: "rawio", Path: f.Name(), Err: err}
	}
	return &file{name: f.Name(), rc: rc}, nil
}

// errBlocking is File's error for a descriptor in blocking mode.
var errBlocking = errors.New("descriptor is in blocking mode")

// file is a non-blocking file whose Read and Write are raw system calls.
type file struct {
	name string
	rc   syscall.RawConn
}

func (f *file) Read(p []byte) (int, error) {
	n, err := read(f.rc, p)
	return n, f.pathError("read", err)
}

func (f *file) Write(p []byte) (int, error) {
	n, err := write(f.rc, p)
	return n, f.pathError("write", err)
}

func (f *file) pathError(op string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}
