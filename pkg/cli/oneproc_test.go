//go:build unix

package cli

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// blocking reports whether f's descriptor is in blocking mode.
func blocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, syscall.F_GETFL, 0) }); err != nil || ferr != nil {
		t.Fatal(err, ferr)
	}
	return flags&syscall.O_NONBLOCK == 0
}

// TestOneProcessor: over a pipe, a stdio session runs on one processor
// and reads stdin through the poller (a duplicate in non-blocking mode that
// reads what the pipe carries); once it ends, the number of processors is
// the default again and the pipe is back in blocking mode. With GOMAXPROCS
// set in the environment the number of processors is left alone; a stdin
// that is not a pipe or a socket changes nothing.
func TestOneProcessor(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set for the tests: the default it restores is not theirs")
	}
	logger := slog.New(slog.DiscardHandler)
	before := runtime.GOMAXPROCS(0)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	r.Fd() // blocking, as a child process's inherited stdin is
	if !blocking(t, r) {
		t.Fatal("the pipe is not in blocking mode to begin with")
	}

	in, restore := oneProcessor(r, logger)
	if in == io.Reader(r) {
		t.Fatal("stdin was not made pollable")
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS %d while serving, want 1", n)
	}
	if blocking(t, r) {
		t.Error("stdin is still in blocking mode while serving")
	}
	if _, err := w.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "line\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	restore()
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Errorf("GOMAXPROCS %d after the session, want %d", n, before)
	}
	if !blocking(t, r) {
		t.Error("stdin is left in non-blocking mode")
	}

	t.Setenv("GOMAXPROCS", "2")
	runtime.GOMAXPROCS(2)
	in, restore = oneProcessor(r, logger)
	if n := runtime.GOMAXPROCS(0); n != 2 || in == io.Reader(r) {
		t.Errorf("with GOMAXPROCS=2 set: %d processors, stdin pollable %v", n, in != io.Reader(r))
	}
	restore()
	runtime.SetDefaultGOMAXPROCS()

	plain := bytes.NewReader(nil)
	if in, restore := oneProcessor(plain, logger); in != io.Reader(plain) || runtime.GOMAXPROCS(0) != before {
		t.Errorf("a stdin that is no pipe was changed (%T) or the processors were (%d)", in, runtime.GOMAXPROCS(0))
	} else {
		restore()
	}
}
