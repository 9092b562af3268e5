package respadmin

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// Role is what a bearer token may do. Roles are ordered: each may do
// what the ones below it may.
type Role int

// The roles.
const (
	// RoleNone is no role: as [Options.Reveal], nobody sees values.
	RoleNone Role = iota
	// RoleViewer reads: every GET route but the audit log and snapshots.
	RoleViewer
	// RoleOperator also reads the audit log, sets configuration and runs
	// storage actions.
	RoleOperator
	// RoleAdmin also downloads snapshots, watches MONITOR and runs the
	// admin-only actions (flushall).
	RoleAdmin
)

// String returns "none", "viewer", "operator" or "admin".
func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole parses a role's name (as String returns it).
func ParseRole(s string) (Role, error) {
	for _, r := range []Role{RoleNone, RoleViewer, RoleOperator, RoleAdmin} {
		if s == r.String() {
			return r, nil
		}
	}
	return RoleNone, fmt.Errorf("unknown role %q: want viewer, operator or admin", s)
}

// Token is one bearer token and its role.
type Token struct {
	Role   Role
	Secret string
}

// MinTokenLength is the shortest token [ParseTokens] accepts.
const MinTokenLength = 16

// ParseTokens reads a token file: one "ROLE TOKEN" per line (ROLE viewer,
// operator or admin; TOKEN at least 16 characters without spaces); blank
// lines and lines starting with '#' are skipped. A malformed line, a
// duplicate token or a file without tokens is an error naming the line,
// never the token.
func ParseTokens(data []byte) ([]Token, error) {
	var out []Token
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("token file line %d: want \"ROLE TOKEN\"", n)
		}
		role, err := ParseRole(fields[0])
		if err != nil || role == RoleNone {
			return nil, fmt.Errorf("token file line %d: unknown role %q: want viewer, operator or admin", n, fields[0])
		}
		if len(fields[1]) < MinTokenLength {
			return nil, fmt.Errorf("token file line %d: a token has at least %d characters", n, MinTokenLength)
		}
		if seen[fields[1]] {
			return nil, fmt.Errorf("token file line %d: the token is already listed", n)
		}
		seen[fields[1]] = true
		out = append(out, Token{Role: role, Secret: fields[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("token file: no tokens")
	}
	return out, nil
}
