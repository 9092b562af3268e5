package jsonscan

import (
	"strings"
	"testing"
)

// TestMemberFinder: the value found is the same however the text is cut
// into pieces (every cut in one or two places), escapes and strings that
// hold brackets included; and it is what Members finds in a whole object.
func TestMemberFinder(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"id":1}`, "1"},
		{` { "jsonrpc" : "2.0" , "id" : -12.5e3 , "method":"x"}`, "-12.5e3"},
		{`{"id":"a\"b"}`, `"a\"b"`},
		{`{"\u0069d":"x"}`, `"x"`},
		{`{"i\u0064":"y","id":"z"}`, `"y"`},
		{`{"params":{"id":5},"id":6}`, "6"},
		{`{"params":["}",{"id":5}],"id":"six"`, `"six"`},
		{`{"params":{"t":"\\\"{[","u":[[[]]]},"id":true}`, "true"},
		{`{"a":"id","b":{"id":1},"c":[{"id":2}],"id":"3"}`, `"3"`},
		{`{"idx":1,"xid":2,"ID":3}`, ""},
		{`{"id":12`, ""},
		{`{"id":"abc`, ""},
		{`{"id":{"a":1},"x":1}`, ""},
		{`{"id":[1]}`, ""},
		{`[{"id":1}]`, ""},
		{`{"id":,"method":"x"}`, ""},
		{`{"id":}`, ""},
		{`{"a":1}{"id":2}`, ""},
		{`{"a" "id":2}`, ""},
		{``, ""},
		{`{`, ""},
		{`{"` + strings.Repeat("k", 100) + `":1,"id":"long key skipped"}`, `"long key skipped"`},
		{`{"id":"` + strings.Repeat("v", 40) + `"}`, ""}, // longer than max
	}
	const max = 32
	find := func(pieces ...string) string {
		f := NewMemberFinder("id", max)
		for _, p := range pieces {
			f.Write([]byte(p))
		}
		return string(f.Value())
	}
	for _, tt := range tests {
		if got := find(tt.in); got != tt.want {
			t.Errorf("%q: found %q, want %q", tt.in, got, tt.want)
			continue
		}
		for i := 0; i <= len(tt.in); i++ {
			if got := find(tt.in[:i], tt.in[i:]); got != tt.want {
				t.Errorf("%q cut at %d: found %q, want %q", tt.in, i, got, tt.want)
			}
			for j := i; j <= len(tt.in); j++ {
				if got := find(tt.in[:i], tt.in[i:j], tt.in[j:]); got != tt.want {
					t.Errorf("%q cut at %d and %d: found %q, want %q", tt.in, i, j, got, tt.want)
				}
			}
		}
		if tt.want != "" {
			m := NewMembers([]byte(tt.in))
			for m.Next() && !KeyIs(m.Key, "id") {
			}
			if string(m.Value) != tt.want {
				t.Errorf("%q: Members finds %q, MemberFinder %q", tt.in, m.Value, tt.want)
			}
		}
	}
}

// TestMemberFinderDone: the search is decided at the value, not at the end
// of the text, and what follows is ignored.
func TestMemberFinderDone(t *testing.T) {
	f := NewMemberFinder("id", 16)
	if f.Write([]byte(`{"id":"a"`)) != true || !f.Done() || string(f.Value()) != `"a"` {
		t.Fatalf("after the id: done %v, value %q", f.Done(), f.Value())
	}
	f.Write([]byte(`,"id":"b"}`))
	if string(f.Value()) != `"a"` {
		t.Fatalf("the first id is kept: %q", f.Value())
	}
}
