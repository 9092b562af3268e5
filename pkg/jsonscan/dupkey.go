package jsonscan

import (
	"encoding/json"
	"strconv"
)

// DuplicateKey finds, in the JSON value b, the first object member whose
// key repeats an earlier key of the same object, at any depth, and returns
// its path: keys joined with dots, array elements as [i] (for example
// "targets" or "plugins.resp.config.targets.local.tls[0].host"). Keys are
// compared as [KeyIs] compares them: exactly, escapes decoded (so "a" and
// "\u0061" are the same key). It reports false when no key repeats.
//
// A decoder such as encoding/json keeps the last of two equal keys, or
// merges them into one struct, silently; a strict reader of a file a
// person wrote (a configuration) refuses them with this. b should be valid
// JSON (decode it first): like [Members], DuplicateKey does not validate.
// Each object is walked once per level of nesting above it, which is meant
// for documents of human size.
func DuplicateKey(b []byte) (path string, found bool) {
	return duplicateIn(b, "")
}

func duplicateIn(v []byte, path string) (string, bool) {
	i := SkipWS(v, 0)
	if i >= len(v) {
		return "", false
	}
	switch v[i] {
	case '{':
		seen := map[string]bool{}
		for m := NewMembers(v); m.Next(); {
			key := keyText(m.Key)
			p := key
			if path != "" {
				p = path + "." + key
			}
			if seen[key] {
				return p, true
			}
			seen[key] = true
			if dup, ok := duplicateIn(m.Value, p); ok {
				return dup, true
			}
		}
	case '[':
		n := 0
		for e := NewElements(v); e.Next(); n++ {
			if dup, ok := duplicateIn(e.Value, path+"["+strconv.Itoa(n)+"]"); ok {
				return dup, true
			}
		}
	}
	return "", false
}

// keyText returns a raw JSON key's text, escapes decoded (the raw text, in
// the unlikely case it does not decode).
func keyText(key []byte) string {
	var s string
	if json.Unmarshal(key, &s) != nil {
		return string(key)
	}
	return s
}
