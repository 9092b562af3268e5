//go:build unix

package kv

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// errBusy: lockShared found the file locked by a writer until its timeout.
var errBusy = errors.New("kv: file locked")

// lockShared takes a shared lock on f, as a read-only bbolt DB does, so
// that no writer (which holds bbolt's lock exclusive) commits while
// checkFile reads; it waits up to timeout (once for zero), as bbolt does.
// Closing f releases it.
func lockShared(f *os.File, timeout time.Duration) error {
	start := time.Now()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		case time.Since(start) >= timeout:
			return errBusy
		}
		time.Sleep(50 * time.Millisecond)
	}
}
