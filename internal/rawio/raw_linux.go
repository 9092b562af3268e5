package rawio

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func wrapConn(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
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

func wrapFile(f *os.File) (io.ReadWriter, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if err := checkNonblocking(rc); err != nil {
		return nil, &fs.PathError{Op: "rawio", Path: f.Name(), Err: err}
	}
	return &file{name: f.Name(), rc: rc}, nil
}

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

// read reads once into p: a raw read of the descriptor, waiting in the
// poller while it has nothing to read.
func read(rc syscall.RawConn, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno := 0, syscall.Errno(0)
	err := rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the poller waits until there is something to read
			case 0:
				n = int(r)
			default:
				errno = e
			}
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// write writes all of p by raw writes of at most writeChunk bytes,
// waiting in the poller while the descriptor takes nothing.
func write(rc syscall.RawConn, p []byte) (int, error) {
	done, errno := 0, syscall.Errno(0)
	err := rc.Write(func(fd uintptr) bool {
		for done < len(p) {
			chunk := p[done:min(len(p), done+writeChunk)]
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the poller waits until there is room
			case 0:
				done += int(r)
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("write", errno)
	}
	return done, err
}

// checkNonblocking fails unless rc's descriptor is in non-blocking mode.
func checkNonblocking(rc syscall.RawConn) error {
	var nonblocking bool
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		var flags int
		if flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr == nil {
			nonblocking = flags&unix.O_NONBLOCK != 0
		}
	}); err != nil {
		return err
	}
	if ferr != nil {
		return ferr
	}
	if !nonblocking {
		return errBlocking
	}
	return nil
}
