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
	"net"
	"os"
)

// writeChunk is the most one raw write hands the kernel.
const writeChunk = 128 << 10

// Conn wraps c, a connection whose descriptor the poller serves (a
// *net.TCPConn or *net.UnixConn), so that its reads and writes are raw
// system calls; any other connection is returned as it is.
func Conn(c net.Conn) net.Conn { return wrapConn(c) }

// File returns a reader and writer of f, which must be in non-blocking
// mode (a pipe or socket the poller serves), whose reads and writes are
// raw system calls. It fails for a file in blocking mode: a raw read of it
// would hold its processor until data came. f stays the caller's to close.
func File(f *os.File) (io.ReadWriter, error) { return wrapFile(f) }

// errBlocking is File's error for a descriptor in blocking mode.
var errBlocking = errors.New("descriptor is in blocking mode")
