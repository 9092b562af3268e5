//go:build unix

package cli

import (
	"io"
	"log/slog"
	"os"
	"syscall"

	"github.com/mcpkit/mcpkit/internal/rawio"
)

// pollable returns, when s (stdin or stdout) is an *os.File on a pipe or a
// socket, a reader and writer of a duplicate of its descriptor in
// non-blocking mode, served by the runtime's poller through raw system
// calls (internal/rawio), a function that puts the descriptor back in
// blocking mode and closes the duplicate, and true; otherwise nil, a no-op
// and false.
func pollable(s any, logger *slog.Logger) (io.ReadWriter, func(), bool) {
	f, ok := s.(*os.File)
	if !ok {
		return nil, func() {}, false
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil, func() {}, false
	}
	dup, err := dupNonblocking(f)
	if err != nil {
		logger.Debug("descriptor stays in blocking mode", "file", f.Name(), "err", err)
		return nil, func() {}, false
	}
	polled := os.NewFile(uintptr(dup), f.Name()) // non-blocking: served by the poller
	restore := func() {
		if rc, err := polled.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
		}
		polled.Close()
	}
	rw, err := rawio.File(polled)
	if err != nil {
		logger.Debug("descriptor read and written by the os package", "file", f.Name(), "err", err)
		rw = polled
	}
	return rw, restore, true
}

// dupNonblocking duplicates f's descriptor, close-on-exec (under
// syscall.ForkLock, so that no child started meanwhile inherits it), and
// puts it in non-blocking mode, which f's descriptor shares.
func dupNonblocking(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	dup, dupErr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		if dup, dupErr = syscall.Dup(int(fd)); dupErr == nil {
			syscall.CloseOnExec(dup)
		}
	}); err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, dupErr
	}
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return -1, err
	}
	return dup, nil
}
