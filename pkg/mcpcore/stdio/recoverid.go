package stdio

import (
	"bytes"
	"encoding/json"
)

// recoverID scans b, the start of a JSON object that may be truncated or
// otherwise invalid further on, for its top-level "id" member. It returns
// the id re-encoded as JSON when it is a string or a number whose text lies
// wholly inside b, and nil otherwise (the caller then answers with a null
// id). Memory use is bounded by len(b).
func recoverID(b []byte) []byte {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return nil
		}
		keyEnd := skipString(b, i)
		if keyEnd < 0 {
			return nil
		}
		key := b[i:keyEnd]
		i = skipWS(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return nil
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return nil
		}
		valEnd := skipValue(b, i)
		if valEnd <= i { // truncated, or no value at all (`"id":,`)
			return nil
		}
		if isIDKey(key) {
			return normalizeID(b[i:valEnd])
		}
		i = skipWS(b, valEnd)
		if i >= len(b) || b[i] != ',' {
			return nil
		}
		i++
	}
}

// isIDKey reports whether key, a quoted JSON string, is "id".
func isIDKey(key []byte) bool {
	if string(key) == `"id"` {
		return true
	}
	if bytes.IndexByte(key, '\\') < 0 {
		return false
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == "id"
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

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"',
// or -1 if it does not end inside b.
func skipString(b []byte, i int) int {
	for i++; ; {
		k := bytes.IndexByte(b[i:], '"') // IndexByte finds candidate quotes fast
		if k < 0 {
			return -1
		}
		j := i + k
		n := 0 // backslashes before the quote
		for j-n-1 >= i && b[j-n-1] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
}

// skipValue returns the index after the value starting at b[i], or -1 if
// it does not certainly end inside b. It does not validate the value.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				j := skipString(b, i)
				if j < 0 {
					return -1
				}
				i = j - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	// A literal or a number: it ends at a delimiter, which must be in b so
	// that a truncated number is never taken for a whole one.
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return -1
}
