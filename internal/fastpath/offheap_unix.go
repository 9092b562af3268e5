//go:build linux || darwin || freebsd || netbsd || openbsd

package fastpath

import "golang.org/x/sys/unix"

// mapAnon maps n bytes of private anonymous memory (zero; resident only
// once written).
func mapAnon(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

// unmapAnon unmaps what mapAnon returned.
func unmapAnon(b []byte) { unix.Munmap(b) }
