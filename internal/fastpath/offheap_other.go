//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package fastpath

import "errors"

// mapAnon has no anonymous mappings here: ResultMemory uses the heap.
func mapAnon(int) ([]byte, error) { return nil, errors.New("no anonymous mappings") }

func unmapAnon([]byte) {}
