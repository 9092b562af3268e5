package stdio

import (
	"encoding/json"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
)

// recoverID scans b, the start of a JSON object that may be truncated or
// otherwise invalid further on, for its top-level "id" member, wherever it
// is. It returns the id re-encoded as JSON when it is a string or a number
// whose text lies wholly inside b, and nil otherwise (the caller then
// answers with a null id). An oversized line is scanned the same way as it
// is read, piece by piece (see conn.readLine).
func recoverID(b []byte) []byte {
	s := newIDScan()
	s.Write(b)
	return normalizeID(s.Value())
}

// newIDScan returns the scan that finds a line's top-level "id" of at most
// maxIDBytes, keeping nothing else of the line.
func newIDScan() jsonscan.MemberFinder { return jsonscan.NewMemberFinder("id", maxIDBytes) }

// normalizeID returns v, a complete JSON value, as an id: a string or a
// number, re-encoded; nil for anything else.
func normalizeID(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	switch c := v[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil
		}
		out, err := json.Marshal(s)
		if err != nil {
			return nil
		}
		return out
	case c == '-' || ('0' <= c && c <= '9'):
		var n json.Number
		if json.Unmarshal(v, &n) != nil {
			return nil
		}
		return []byte(n.String())
	}
	return nil
}
