//go:build !linux

package respengine

import "syscall"

// childProcAttr: elsewhere than Linux an owned server keeps the sidecar's
// process group; the sidecar's shutdown still terminates and reaps it.
func childProcAttr() *syscall.SysProcAttr { return nil }
