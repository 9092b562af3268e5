//go:build linux

package redistest

import "syscall"

// sysProcAttr puts redis-server in its own process group (so terminal
// signals aimed at `go test` do not hit it directly) and asks the kernel to
// kill it if the test process dies without running its cleanups (for
// example on a `go test -timeout` panic).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
