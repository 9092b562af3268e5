package jsonscan

import (
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		keys string
		end  int
	}{
		{`{}`, "", 2},
		{` { } x`, "", 4},
		{`{"a":1,"b":[1,{"c":"}"}],"d":"x\"y"}`, `"a" "b" "d"`, 36},
		{`{"a":1`, "", -1}, // a number is whole only before a delimiter
		{`{"a":"x"`, `"a"`, -1},
		{`{"a":1,}`, `"a"`, -1},
		{`{"a" 1}`, "", -1},
		{`{"a":}`, "", -1},
		{`[1]`, "", -1},
		{``, "", -1},
		{`{"a":"unterminated`, "", -1},
	}
	for _, tt := range tests {
		m := NewMembers([]byte(tt.in))
		var keys []string
		for m.Next() {
			keys = append(keys, string(m.Key))
		}
		if got := strings.Join(keys, " "); got != tt.keys || m.End() != tt.end {
			t.Errorf("Members(%s): keys %s end %d, want %s end %d", tt.in, got, m.End(), tt.keys, tt.end)
		}
		if m.Next() {
			t.Errorf("Members(%s): Next after the end", tt.in)
		}
	}
}

func TestDepth(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want int
	}{
		{`1`, 0},
		{`"[{"`, 0},
		{`[1]`, 1},
		{`{"a":[1,{"b":"]]]"}]}`, 3},
		{`[[],[[]]]`, 3},
		{`"unterminated [`, 0},
		{`]]]`, 0},
	} {
		if got := Depth([]byte(tt.in)); got != tt.want {
			t.Errorf("Depth(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestElements: elements are found whole, nested brackets and strings
// included, and End tells a closed array from a truncated or malformed one.
func TestElements(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in    string
		elems string
		end   int
	}{
		{`[]`, "", 2},
		{` [ ] x`, "", 4},
		{`["a",1, {"b":"]"} ,[2,[3]],"c\"]",null]`, `"a"|1|{"b":"]"}|[2,[3]]|"c\"]"|null`, 39},
		{`[1`, "", -1}, // a number is whole only before a delimiter
		{`["a"`, `"a"`, -1},
		{`[1,]`, "1", -1},
		{`[1 2]`, "1", -1},
		{`{"a":1}`, "", -1},
		{``, "", -1},
	} {
		e := NewElements([]byte(tt.in))
		var elems []string
		for e.Next() {
			elems = append(elems, string(e.Value))
		}
		if got := strings.Join(elems, "|"); got != tt.elems || e.End() != tt.end {
			t.Errorf("Elements(%s): %s end %d, want %s end %d", tt.in, got, e.End(), tt.elems, tt.end)
		}
		if e.Next() {
			t.Errorf("Elements(%s): Next after the end", tt.in)
		}
	}
}

// TestPlainString: only printable ASCII without escapes is plain, from
// the position given, with its end.
func TestPlainString(t *testing.T) {
	for _, tc := range []struct {
		b       string
		i       int
		content string
		end     int
	}{
		{`"abc"`, 0, "abc", 5},
		{`""`, 0, "", 2},
		{`x:"k v",`, 2, "k v", 7},
		{`"a\"b"`, 0, "", -1},
		{`"a\\b"`, 0, "", -1},
		{`"é"`, 0, "", -1},
		{"\"a\x01\"", 0, "", -1},
		{"\"a\x7f\"", 0, "", -1},
		{`"abc`, 0, "", -1},
		{`abc"`, 0, "", -1},
		{`"a"`, 3, "", -1},
	} {
		content, end := PlainString([]byte(tc.b), tc.i)
		if string(content) != tc.content || end != tc.end {
			t.Errorf("PlainString(%q, %d) = %q, %d; want %q, %d", tc.b, tc.i, content, end, tc.content, tc.end)
		}
	}
}

// TestPlain: exactly the printable ASCII bytes but the quote and the
// backslash stand for themselves in a JSON string.
func TestPlain(t *testing.T) {
	for c := range 256 {
		want := c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
		if got := Plain([]byte{'a', byte(c), 'b'}); got != want {
			t.Errorf("Plain(%q) = %v, want %v", []byte{'a', byte(c), 'b'}, got, want)
		}
	}
	if !Plain(nil) {
		t.Error("Plain(nil) = false")
	}
}
