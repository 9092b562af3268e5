// Package bearer matches static bearer tokens: the one check that both
// the MCP endpoint (pkg/mcpcore/httpserve) and the RESP management gateway
// (pkg/respadmin) make, kept here so that the gateway needs no MCP code.
// It compares in constant time and never keeps, logs or returns a token.
package bearer

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
)

// Set is a fixed set of accepted tokens, held as SHA-256 digests.
type Set struct {
	sums [][sha256.Size]byte
}

// NewSet returns the set of tokens.
func NewSet(tokens []string) *Set {
	s := &Set{sums: make([][sha256.Size]byte, len(tokens))}
	for i, t := range tokens {
		s.sums[i] = sha256.Sum256([]byte(t))
	}
	return s
}

// Match reports whether token is in the set, comparing in constant time
// (over SHA-256 digests, so lengths do not leak), and returns its identity:
// "token:" and the first 16 hex digits of its SHA-256. The same token has
// the same identity on every instance and across restarts, whatever its
// place in a token file, and the identity does not reveal the token.
func (s *Set) Match(token string) (id string, ok bool) {
	got := sha256.Sum256([]byte(token))
	match := 0
	for i := range s.sums {
		match |= subtle.ConstantTimeCompare(got[:], s.sums[i][:])
	}
	if match == 0 {
		return "", false
	}
	return "token:" + hex.EncodeToString(got[:8]), true
}
