//go:build !linux

package rawio

import "syscall"

// supported is false: elsewhere the wrappers are the connection or file
// itself (raw system calls are Linux's here; macOS's go through libc).
const supported = false

func read(syscall.RawConn, []byte) (int, error)  { panic("rawio: unsupported") }
func write(syscall.RawConn, []byte) (int, error) { panic("rawio: unsupported") }
func checkNonblocking(syscall.RawConn) error     { panic("rawio: unsupported") }
