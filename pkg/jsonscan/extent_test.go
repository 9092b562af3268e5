package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExtent: Extent finds what SkipValue and Depth find, in one pass: at
// the depth limits the SDK checks, on truncated values, and on strings
// whose escaped quotes and brackets must not count.
func TestExtent(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tt := range []struct {
		in         string
		at         int
		end, depth int
	}{
		{`1 `, 0, 1, 0},
		{`1`, 0, -1, 0}, // a number is whole only before a delimiter
		{`true]`, 0, 4, 0},
		{`"a"`, 0, 3, 0},
		{`"a\"]"`, 0, 6, 0},
		{`"a\\"]`, 0, 5, 0},
		{`"a\\\"]"`, 0, 8, 0},
		{`"[{"`, 0, 4, 0},
		{`"unterminated [`, 0, -1, 0},
		{`"a\"`, 0, -1, 0},
		{`[]`, 0, 2, 1},
		{`{}`, 0, 2, 1},
		{`["\"[", "]", "\\", {"}":"{"}] tail`, 0, 29, 2},
		{`{"a":[1,{"b":"]]]"}]}`, 0, 21, 3},
		{`[[],[[]]]`, 0, 9, 3},
		{`x [[1],2]`, 2, 9, 2},
		{`[}`, 0, 2, 1}, // not validated: any closing bracket closes
		{`[[[1]`, 0, -1, 3},
		{`{"a":"x`, 0, -1, 1},
		{`["a\"]`, 0, -1, 1},
		{`[[["a`, 0, -1, 3},
		{deep(1000), 0, 2000, 1000},
		{deep(1001), 0, 2002, 1001},
		{deep(1001)[:1500], 0, -1, 1001},
	} {
		end, depth := Extent([]byte(tt.in), tt.at)
		if end != tt.end || depth != tt.depth {
			t.Errorf("Extent(%.40s, %d) = %d, %d; want %d, %d", tt.in, tt.at, end, depth, tt.end, tt.depth)
		}
		if got := SkipValue([]byte(tt.in), tt.at); got != end {
			t.Errorf("SkipValue(%.40s, %d) = %d, Extent's end %d", tt.in, tt.at, got, end)
		}
		rest := tt.in[tt.at:]
		if end >= 0 {
			rest = tt.in[tt.at:end]
		}
		if c := tt.in[tt.at]; c == '{' || c == '[' {
			if got := Depth([]byte(rest)); got != depth {
				t.Errorf("Depth(%.40s) = %d, Extent's depth %d", rest, got, depth)
			}
		}
	}
}

// TestMembersDepth: Members reports the object's depth, its own braces
// included, so that a caller walking the members need not call Depth.
func TestMembersDepth(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in         string
		end, depth int
	}{
		{`{}`, 2, 1},
		{` {"a":1} `, 8, 1},
		{`{"a":[1]}`, 9, 2},
		{`{"a":"[[{","b":"\"{"}`, 21, 1},
		{`{"a":{"b":[[]]},"c":[]}`, 23, 4},
		{`{"a":[` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `]}`, 2004, 1000},
		{`{"a":[` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `]}`, 2006, 1001},
		{`{"a":[1],"b":[[`, -1, 2}, // only the members walked
		{`[1]`, -1, 0},
	} {
		m := NewMembers([]byte(tt.in))
		for m.Next() {
		}
		if m.End() != tt.end || m.Depth() != tt.depth {
			t.Errorf("Members(%.40s): end %d depth %d, want %d and %d", tt.in, m.End(), m.Depth(), tt.end, tt.depth)
		}
	}
}

// refExtent is Extent's contract written plainly, as an oracle: one byte at
// a time, escapes followed forwards rather than counted backwards.
func refExtent(b []byte, i int) (end, depth int) {
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, 0
			}
		}
		return -1, 0
	case '{', '[':
		d, inString, escaped := 0, false, false
		for j, c := range b[i:] {
			switch {
			case escaped:
				escaped = false
			case inString:
				escaped, inString = c == '\\', c != '"'
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				d++
				depth = max(depth, d)
			case c == '}' || c == ']':
				if d--; d == 0 {
					return i + j + 1, depth
				}
			}
		}
		return -1, depth
	}
	for j := i; j < len(b); j++ {
		if strings.IndexByte(",}] \t\n\r", b[j]) >= 0 {
			return j, 0
		}
	}
	return -1, 0
}

// refDepth is Depth's contract written plainly.
func refDepth(v []byte) int {
	d, deepest := 0, 0
	for j := 0; j < len(v); j++ {
		switch v[j] {
		case '"':
			e, _ := refExtent(v, j)
			if e < 0 {
				return deepest
			}
			j = e - 1
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d = max(d-1, 0)
		}
	}
	return deepest
}

// FuzzExtent compares Extent with the plain oracles above and with
// SkipValue and Depth, at an arbitrary offset, and Members' End and Depth
// with SkipValue and Depth on valid JSON objects.
func FuzzExtent(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[1,"]",{"b":"\"{"}]}}`,
		`["\"[", "]", "\\", {"}":"{"}]`,
		`"a\\\"]"`,
		`[[[1]`,
		`]]]{"a":[}`,
		`1e5,`,
		`{"a":"` + strings.Repeat(`x\"`, 20) + `"}`,
	} {
		f.Add([]byte(s), uint16(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, at uint16) {
		if len(b) == 0 {
			return
		}
		i := int(at) % len(b)
		end, depth := Extent(b, i)
		if wantEnd, wantDepth := refExtent(b, i); end != wantEnd || depth != wantDepth {
			t.Fatalf("Extent(%q, %d) = %d, %d; the oracle says %d, %d", b, i, end, depth, wantEnd, wantDepth)
		}
		if got := SkipValue(b, i); got != end {
			t.Fatalf("SkipValue(%q, %d) = %d, Extent's end %d", b, i, got, end)
		}
		if c := b[i]; c == '{' || c == '[' {
			v := b[i:]
			if end >= 0 {
				v = b[i:end]
			}
			if got := Depth(v); got != depth {
				t.Fatalf("Depth(%q) = %d, Extent's depth %d", v, got, depth)
			}
		}
		if got, want := Depth(b), refDepth(b); got != want {
			t.Fatalf("Depth(%q) = %d, the oracle says %d", b, got, want)
		}
		m := NewMembers(b)
		for m.Next() {
		}
		if e := m.End(); e >= 0 && json.Valid(b[:e]) {
			start := SkipWS(b, 0)
			if want := SkipValue(b, start); e != want {
				t.Fatalf("Members(%q).End() = %d, SkipValue %d", b, e, want)
			}
			if got, want := m.Depth(), Depth(b[:e]); got != want {
				t.Fatalf("Members(%q).Depth() = %d, Depth %d", b, got, want)
			}
		}
	})
}
