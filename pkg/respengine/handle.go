package respengine

import (
	"crypto/rand"
	"encoding/hex"
)

// newHandle returns prefix and 128 random bits in hex: a handle cannot be
// guessed.
func newHandle(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
