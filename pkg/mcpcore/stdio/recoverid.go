package stdio

import (
	"encoding/json"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
)

// recoverID scans b, the start of a JSON object that may be truncated or
// otherwise invalid further on, for its top-level "id" member. It returns
// the id re-encoded as JSON when it is a string or a number whose text lies
// wholly inside b, and nil otherwise (the caller then answers with a null
// id). Memory use is bounded by len(b).
func recoverID(b []byte) []byte {
	m := jsonscan.NewMembers(b)
	for m.Next() {
		if jsonscan.KeyIs(m.Key, "id") {
			return normalizeID(m.Value)
		}
	}
	return nil
}

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
