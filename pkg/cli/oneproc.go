package cli

import (
	"io"
	"log/slog"
	"os"
	"runtime"
)

// oneProcessor sets up ServeParams.OneProcessor for a stdio session: the
// Go runtime on one processor (unless the GOMAXPROCS environment variable
// sets a number), and stdin and stdout read and written through the
// runtime's poller by raw system calls (internal/rawio) when they are pipes
// or sockets. It returns the reader and writer to serve and a function that
// restores all three, to call once the session has ended.
//
// Why: a stdio sidecar spends its calls waiting on a pipe and a datastore.
// On more than one processor every hand-off between its goroutines (the
// reader, the call, the handler) wakes another thread, which on a small
// machine costs as much as the call's own work; on one processor a
// hand-off is a switch on the same thread. One processor needs the poller
// for stdin: a blocking read would hold the only processor while the
// runtime waits for the datastore's reply. The poller needs the descriptor
// in non-blocking mode, set on a duplicate (the mode is shared with it) and
// taken back when the session ends; a terminal or a regular file is left
// as it is, and when stdin is one, so is the number of processors.
func oneProcessor(stdin io.Reader, stdout io.Writer, logger *slog.Logger) (io.Reader, io.Writer, func()) {
	in, out := stdin, stdout
	polledIn, restoreIn, inPolled := pollable(stdin, logger)
	if inPolled {
		in = polledIn
	}
	polledOut, restoreOut, outPolled := pollable(stdout, logger)
	if outPolled {
		out = polledOut
	}
	restore := func() {
		restoreIn()
		restoreOut()
	}
	if !inPolled || os.Getenv("GOMAXPROCS") != "" {
		return in, out, restore // one processor with a blocking stdin would stall
	}
	runtime.GOMAXPROCS(1)
	return in, out, func() {
		restore()
		runtime.SetDefaultGOMAXPROCS()
	}
}
