//go:build unix

package cli

import (
	"io"
	"log/slog"
	"os"
	"syscall"
)

// pollable returns a reader of stdin's descriptor that the runtime's
// poller serves, when stdin is an *os.File on a pipe or a socket, and a
// function that puts the descriptor back in blocking mode and closes the
// duplicate, and true; otherwise stdin itself, a no-op and false.
func pollable(stdin io.Reader, logger *slog.Logger) (io.Reader, func(), bool) {
	f, ok := stdin.(*os.File)
	if !ok {
		return stdin, func() {}, false
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return stdin, func() {}, false
	}
	dup, err := dupNonblocking(f)
	if err != nil {
		logger.Debug("stdin stays in blocking mode", "err", err)
		return stdin, func() {}, false
	}
	polled := os.NewFile(uintptr(dup), f.Name()) // non-blocking: served by the poller
	return polled, func() {
		if rc, err := polled.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
		}
		polled.Close()
	}, true
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
