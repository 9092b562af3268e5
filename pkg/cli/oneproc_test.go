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

// TestOneProcessor: over pipes, a stdio session runs on one processor and
// reads stdin and writes stdout through the poller (duplicates in
// non-blocking mode that carry what the pipes carry); once it ends, the
// number of processors is the default again and both pipes are back in
// blocking mode. With GOMAXPROCS set in the environment the number of
// processors is left alone; a stdin that is not a pipe or a socket keeps
// the processors too, and a stdout that is none is left as it is.
func TestOneProcessor(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set for the tests: the default it restores is not theirs")
	}
	logger := slog.New(slog.DiscardHandler)
	before := runtime.GOMAXPROCS(0)
	pipe := func() (r, w *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		r.Fd() // blocking, as a child process's inherited stdio is
		w.Fd()
		if !blocking(t, r) || !blocking(t, w) {
			t.Fatal("the pipe is not in blocking mode to begin with")
		}
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()

	in, out, restore := oneProcessor(inR, outW, logger)
	if in == io.Reader(inR) || out == io.Writer(outW) {
		t.Fatalf("stdin (%T) or stdout (%T) was not made pollable", in, out)
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS %d while serving, want 1", n)
	}
	if blocking(t, inR) || blocking(t, outW) {
		t.Error("stdin or stdout is still in blocking mode while serving")
	}
	if _, err := inW.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "line\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	// More than the pipe holds: the write waits in the poller for the
	// reader, and every byte arrives in order.
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(outR, int64(len(big))))
		got <- b
	}()
	if n, err := out.Write(big); err != nil || n != len(big) {
		t.Fatalf("write to stdout: %d of %d bytes, %v", n, len(big), err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("stdout carried %d bytes, not the %d written", len(b), len(big))
	}
	restore()
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Errorf("GOMAXPROCS %d after the session, want %d", n, before)
	}
	if !blocking(t, inR) || !blocking(t, outW) {
		t.Error("stdin or stdout is left in non-blocking mode")
	}

	sink := new(bytes.Buffer)
	_, out, restore = oneProcessor(inR, sink, logger)
	if out != io.Writer(sink) || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("stdin a pipe, stdout none: stdout %T, %d processors", out, runtime.GOMAXPROCS(0))
	}
	restore()

	t.Setenv("GOMAXPROCS", "2")
	runtime.GOMAXPROCS(2)
	in, _, restore = oneProcessor(inR, outW, logger)
	if n := runtime.GOMAXPROCS(0); n != 2 || in == io.Reader(inR) {
		t.Errorf("with GOMAXPROCS=2 set: %d processors, stdin pollable %v", n, in != io.Reader(inR))
	}
	restore()
	runtime.SetDefaultGOMAXPROCS()

	plain := bytes.NewReader(nil)
	if in, out, restore := oneProcessor(plain, sink, logger); in != io.Reader(plain) || out != io.Writer(sink) || runtime.GOMAXPROCS(0) != before {
		t.Errorf("a stdio that is no pipe was changed (%T, %T) or the processors were (%d)", in, out, runtime.GOMAXPROCS(0))
	} else {
		restore()
	}
}
