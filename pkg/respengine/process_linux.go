//go:build linux

package respengine

import "syscall"

// childProcAttr puts an owned server in its own process group, so that a
// terminal's signals aimed at the sidecar do not reach it before the
// sidecar's own shutdown terminates and reaps it, and has the kernel kill
// it should the sidecar die without shutting down (SIGKILL): no owned
// server outlives the sidecar. (The parent-death signal follows the
// spawning thread; the Go runtime ends no thread but one locked by a
// goroutine that exits, which this program never does around a spawn.)
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
