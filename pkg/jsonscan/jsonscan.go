// Package jsonscan walks JSON text without decoding it: the members of an
// object ([Members]), the elements of an array ([Elements]), the end of a
// value ([SkipValue]), its nesting depth ([Depth]), or both in one pass
// ([Extent]; [Members] reports the object's depth too). It matches brackets
// outside strings and does not validate, so it costs a fraction of a
// decoder and allocates nothing; callers that need validity decode or
// validate the text too (once), then walk it with this as often as they
// like. Keys are compared as the SDK's decoder compares them
// (case-sensitively, escapes decoded).
package jsonscan

import (
	"bytes"
	"encoding/json"
)

// Members walks the top-level members of the JSON object at the start of a
// byte slice (after leading whitespace). It matches brackets outside strings
// and does not validate values, so it is cheap on large messages; callers
// that need validity decode the message too. Its memory use is constant.
//
// Typical use:
//
//	m := jsonscan.NewMembers(b)
//	for m.Next() {
//		if jsonscan.KeyIs(m.Key, "id") { ... m.Value ... }
//	}
//	end := m.End()
type Members struct {
	b   []byte
	i   int // next index to scan
	end int // index after the closing brace; -1 until reached or on failure
	// depth is the deepest nesting seen: 1 for the object's own braces
	// once found, plus the deepest member value.
	depth int
	st    uint8

	// Key is the current member's key as raw JSON, quotes included.
	Key []byte
	// Value is the current member's value as raw JSON.
	Value []byte
	// ValueAt is the index of Value in the scanned slice.
	ValueAt int
}

const (
	stStart uint8 = iota
	stMember
	stDone
)

// NewMembers returns a Members positioned before the first member of the
// object in b.
func NewMembers(b []byte) Members {
	return Members{b: b, end: -1}
}

// Next advances to the next member and reports whether there is one. It
// reports false at the object's closing brace, and also where b does not
// continue as an object (not an object, truncated, or malformed as far as
// the scanner looks); End tells the two apart.
func (m *Members) Next() bool {
	return m.NextKey() && m.SkipValue()
}

// NextKey advances to the next member as Next does, but stops at the start
// of its value, ValueAt, without finding where the value ends: Value is
// nil. Before the next call of Next or NextKey the caller either has the
// scanner find the end (SkipValue) or reports it (ValueEnds), having
// parsed the value its own way.
func (m *Members) NextKey() bool {
	b, i := m.b, m.i
	switch m.st {
	case stDone:
		return false
	case stStart:
		i = SkipWS(b, 0)
		if i >= len(b) || b[i] != '{' {
			return m.fail()
		}
		m.depth = 1
		i = SkipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return m.close(i)
		}
	case stMember:
		i = SkipWS(b, i)
		if i >= len(b) {
			return m.fail()
		}
		switch b[i] {
		case '}':
			return m.close(i)
		case ',':
			i = SkipWS(b, i+1)
		default:
			return m.fail()
		}
	}
	if i >= len(b) || b[i] != '"' {
		return m.fail()
	}
	keyEnd := skipString(b, i)
	if keyEnd < 0 {
		return m.fail()
	}
	key := b[i:keyEnd]
	i = SkipWS(b, keyEnd)
	if i >= len(b) || b[i] != ':' {
		return m.fail()
	}
	i = SkipWS(b, i+1)
	if i >= len(b) {
		return m.fail()
	}
	m.Key, m.Value, m.ValueAt = key, nil, i
	m.i, m.st = i, stMember
	return true
}

// SkipValue finds the end of the value NextKey stopped at and sets Value,
// as Next does; it reports false, ending the walk, where the value does
// not end inside the slice.
func (m *Members) SkipValue() bool {
	i := m.ValueAt
	valEnd, depth := Extent(m.b, i)
	if valEnd <= i { // truncated, or no value at all (`"id":,`)
		return m.fail()
	}
	m.depth = max(m.depth, 1+depth)
	m.Value, m.i = m.b[i:valEnd], valEnd
	return true
}

// ValueEnds records that the value NextKey stopped at ends just before
// end, as the caller found by parsing it, and sets Value. Depth does not
// count that value.
func (m *Members) ValueEnds(end int) {
	m.Value, m.i = m.b[m.ValueAt:end], end
}

func (m *Members) fail() bool {
	m.st, m.Key, m.Value = stDone, nil, nil
	return false
}

func (m *Members) close(i int) bool {
	m.end = i + 1
	return m.fail()
}

// End returns, once Next has reported false, the index just after the
// object's closing brace, or -1 if the slice does not hold the whole object.
func (m *Members) End() int { return m.end }

// Depth returns the deepest nesting of objects and arrays in the object,
// its own braces included, as [Depth] counts it: once End is not -1, it is
// Depth of the object's text when that is valid JSON (1 for `{}` and
// `{"a":1}`, 2 for `{"a":[1]}`), so a caller that walks the members need
// not pass over the object again to check a depth limit. Before that it
// covers the members walked so far, and it is 0 before the opening brace
// is found. Member values are measured as [Extent] measures them, but for
// those ended with ValueEnds.
func (m *Members) Depth() int { return m.depth }

// KeyIs reports whether key, a raw JSON string, decodes to exactly name.
// The comparison is case-sensitive, as in the SDK's decoder (`"Method"` is
// not `"method"`), and escapes are decoded (`"\u0069d"` is `"id"`).
func KeyIs(key []byte, name string) bool {
	if len(key) == len(name)+2 && string(key[1:len(key)-1]) == name {
		return true
	}
	if bytes.IndexByte(key, '\\') < 0 {
		return false
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == name
}

// SkipWS returns the index of the first non-whitespace byte of b at or
// after i, or len(b).
func SkipWS(b []byte, i int) int {
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

// plainByte marks the bytes that stand for themselves in a JSON string
// and need no check: printable ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Plain reports whether every byte of s stands for itself inside a JSON
// string, needing no escape (printable ASCII but the quote and the
// backslash): such text is written into JSON as it is, between quotes.
func Plain(s []byte) bool {
	for _, c := range s {
		if !plainByte[c] {
			return false
		}
	}
	return true
}

// PlainString reports whether the JSON string starting at b[i] == '"' is
// plain: printable ASCII without escapes, so that its text is its content
// as it is. It then returns the content (a view of b) and the index after
// the closing quote; otherwise nil and -1 (the string is not plain, or
// not a string, or does not end inside b).
func PlainString(b []byte, i int) (content []byte, end int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	j := i + 1
	for j < len(b) && plainByte[b[j]] {
		j++
	}
	if j == len(b) || b[j] != '"' {
		return nil, -1
	}
	return b[i+1 : j], j + 1
}

// SkipValue returns the index after the value starting at b[i], or -1 if
// it does not certainly end inside b. It does not validate the value.
func SkipValue(b []byte, i int) int {
	end, _ := Extent(b, i)
	return end
}

// Depth returns the deepest nesting of objects and arrays in v, counting
// brackets outside strings as the SDK's depth check does ("1" is 0, "[1]"
// is 1, "{"a":[1]}" is 2). v is not validated: a closing bracket with
// nothing open is ignored, and counting stops at a string that does not
// end.
func Depth(v []byte) int {
	deepest := 0
	for i := 0; i < len(v); {
		end, depth := walk(v, i)
		deepest = max(deepest, depth)
		if end < 0 {
			break
		}
		i = end
	}
	return deepest
}

// Extent returns, in one pass, what [SkipValue] and [Depth] would return
// for the value starting at b[i]: end, the index after the value, or -1 if
// it does not certainly end inside b; and depth, the deepest nesting of
// objects and arrays in it. For an object or array, depth is Depth(b[i:end])
// (Depth(b[i:]) when end is -1: the nesting reached before b ran out);
// for a string, number or literal it is 0, whatever bytes a malformed
// literal holds. Like SkipValue it does not validate, so the two agree
// with a decoder on valid JSON only.
func Extent(b []byte, i int) (end, depth int) {
	switch b[i] {
	case '"':
		return skipString(b, i), 0
	case '{', '[':
		return walk(b, i)
	}
	// A literal or a number: it ends at a delimiter, which must be in b so
	// that a truncated number is never taken for a whole one.
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, 0
		}
	}
	return -1, 0
}

// walk is the one bracket-matching loop behind Extent, SkipValue and
// Depth. From b[i], it skips strings and counts brackets, ignoring a
// closing bracket with nothing open, until the bracket that closes the
// first one opened: it returns the index after that bracket and the
// deepest nesting reached, or -1 and the nesting reached when b ends
// first or a string does not end inside it.
func walk(b []byte, i int) (end, deepest int) {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := skipString(b, i)
			if j < 0 {
				return -1, deepest
			}
			i = j - 1
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			if depth > 0 {
				depth--
				if depth == 0 {
					return i + 1, deepest
				}
			}
		}
	}
	return -1, deepest
}

// Elements walks the elements of the JSON array at the start of a byte
// slice (after leading whitespace), as [Members] walks an object's
// members.
//
// Typical use:
//
//	e := jsonscan.NewElements(b)
//	for e.Next() {
//		... e.Value ...
//	}
//	end := e.End()
type Elements struct {
	b   []byte
	i   int
	end int
	st  uint8

	// Value is the current element as raw JSON.
	Value []byte
}

// NewElements returns an Elements positioned before the first element of
// the array in b.
func NewElements(b []byte) Elements {
	return Elements{b: b, end: -1}
}

// Next advances to the next element and reports whether there is one. It
// reports false at the array's closing bracket, and also where b does not
// continue as an array; End tells the two apart.
func (e *Elements) Next() bool {
	b, i := e.b, e.i
	switch e.st {
	case stDone:
		return false
	case stStart:
		i = SkipWS(b, 0)
		if i >= len(b) || b[i] != '[' {
			return e.fail()
		}
		i = SkipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return e.close(i)
		}
	case stMember:
		i = SkipWS(b, i)
		if i >= len(b) {
			return e.fail()
		}
		switch b[i] {
		case ']':
			return e.close(i)
		case ',':
			i = SkipWS(b, i+1)
		default:
			return e.fail()
		}
	}
	if i >= len(b) {
		return e.fail()
	}
	end := SkipValue(b, i)
	if end <= i {
		return e.fail()
	}
	e.Value, e.i, e.st = b[i:end], end, stMember
	return true
}

func (e *Elements) fail() bool {
	e.st, e.Value = stDone, nil
	return false
}

func (e *Elements) close(i int) bool {
	e.end = i + 1
	return e.fail()
}

// End returns, once Next has reported false, the index just after the
// array's closing bracket, or -1 if the slice does not hold the whole
// array.
func (e *Elements) End() int { return e.end }
