package cli

import (
	"io"
	"log/slog"
	"os"
	"runtime"
)

// oneProcessor sets up ServeParams.OneProcessor for a stdio session: the
// Go runtime on one processor (unless the GOMAXPROCS environment variable
// sets a number), and stdin read through the runtime's poller when it is a
// pipe or a socket. It returns the reader to serve and a function that
// restores both, to call once the session has ended.
//
// Why: a stdio sidecar spends its calls waiting on a pipe and a datastore.
// On more than one processor every hand-off between its goroutines (the
// reader, the call, the handler) wakes another thread, which on a small
// machine costs as much as the call's own work; on one processor a
// hand-off is a switch on the same thread. One processor needs the poller
// for stdin: a blocking read would hold the only processor while the
// runtime waits for the datastore's reply. The poller needs stdin in
// non-blocking mode, set on a duplicate of the descriptor (the mode is
// shared with it) and taken back when the session ends; a terminal or a
// regular file is left as it is, and so is the number of processors then.
func oneProcessor(stdin io.Reader, logger *slog.Logger) (io.Reader, func()) {
	polled, restoreStdin, ok := pollable(stdin, logger)
	if !ok || os.Getenv("GOMAXPROCS") != "" {
		return polled, restoreStdin // one processor with a blocking stdin would stall
	}
	runtime.GOMAXPROCS(1)
	return polled, func() {
		restoreStdin()
		runtime.SetDefaultGOMAXPROCS()
	}
}
