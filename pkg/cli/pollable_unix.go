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
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return stdin, func() {}, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return stdin, func() {}, false
	}
	dup := -1
	if err := rc.Control(func(fd uintptr) { dup, err = syscall.Dup(int(fd)) }); err != nil || dup < 0 {
		logger.Debug("stdin stays in blocking mode", "err", err)
		return stdin, func() {}, false
	}
	syscall.CloseOnExec(dup)
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
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
