//go:build !unix

package kv

import (
	"errors"
	"os"
	"time"
)

// errBusy: lockShared found the file locked by a writer until its timeout.
var errBusy = errors.New("kv: file locked")

// lockShared does nothing where bbolt's lock is not flock: checkFile
// reads without it there.
func lockShared(*os.File, time.Duration) error { return nil }
