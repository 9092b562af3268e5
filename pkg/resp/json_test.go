package resp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpkit/mcpkit/pkg/jsonesc"
	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	segjson "github.com/segmentio/encoding/json"
)

func TestMarshalJSON(t *testing.T) {
	cases := []struct {
		wire string
		want string
	}{
		{"+OK\r\n", `{"type":"simple_string","encoding":"utf8","value":"OK"}`},
		{"-ERR x\r\n", `{"type":"simple_error","encoding":"utf8","value":"ERR x"}`},
		{"$5\r\na\"\\\x01\n\r\n", `{"type":"bulk_string","encoding":"utf8","value":"a\"\\\u0001\n"}`},
		{"$2\r\n\x00\xff\r\n", `{"type":"bulk_string","encoding":"base64","value":"AP8="}`},
		{"$2\r\né\r\n", `{"type":"bulk_string","encoding":"utf8","value":"é"}`},
		{"!3\r\nE x\r\n", `{"type":"bulk_error","encoding":"utf8","value":"E x"}`},
		{":9007199254740993\r\n", `{"type":"integer","value":"9007199254740993"}`},
		{",-inf\r\n", `{"type":"double","value":"-inf"}`},
		{",nan\r\n", `{"type":"double","value":"nan"}`},
		{"(123456789012345678901234567890\r\n", `{"type":"big_number","encoding":"utf8","value":"123456789012345678901234567890"}`},
		{"_\r\n", `{"type":"null"}`},
		{"$-1\r\n", `{"type":"null"}`},
		{"*-1\r\n", `{"type":"null"}`},
		{"#t\r\n", `{"type":"boolean","value":true}`},
		{"#f\r\n", `{"type":"boolean","value":false}`},
		{"=8\r\nmkd:# hi\r\n", `{"type":"verbatim","format":"mkd","encoding":"utf8","value":"# hi"}`},
		{"*0\r\n", `{"type":"array","items":[]}`},
		{"*2\r\n:1\r\n_\r\n", `{"type":"array","items":[{"type":"integer","value":"1"},{"type":"null"}]}`},
		{"~1\r\n+a\r\n", `{"type":"set","items":[{"type":"simple_string","encoding":"utf8","value":"a"}]}`},
		{">1\r\n+a\r\n", `{"type":"push","items":[{"type":"simple_string","encoding":"utf8","value":"a"}]}`},
		{"%2\r\n:1\r\n#t\r\n:1\r\n#f\r\n", `{"type":"map","entries":[[{"type":"integer","value":"1"},{"type":"boolean","value":true}],[{"type":"integer","value":"1"},{"type":"boolean","value":false}]]}`},
		{"%0\r\n", `{"type":"map","entries":[]}`},
		{"|1\r\n+ttl\r\n:5\r\n$1\r\nv\r\n", `{"type":"attribute","entries":[[{"type":"simple_string","encoding":"utf8","value":"ttl"},{"type":"integer","value":"5"}]],"value":{"type":"bulk_string","encoding":"utf8","value":"v"}}`},
	}
	for _, tc := range cases {
		v, _, err := NewReader(strings.NewReader(tc.wire), ReaderOptions{}).ReadValue()
		if err != nil {
			t.Fatalf("%q: %v", tc.wire, err)
		}
		got, err := json.Marshal(v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%q:\n got  %s (%v)\n want %s", tc.wire, got, err, tc.want)
		}
		checkPair(t, &v)
	}
	for _, bad := range []Value{
		{Kind: 'x'},
		{Kind: KindMap, Elems: []Value{{Kind: KindNull}}},
		{Kind: KindAttribute},
		{Kind: KindArray, Elems: []Value{{Kind: 'x'}}},
	} {
		if b, err := bad.MarshalJSON(); err == nil {
			t.Errorf("%#v marshalled to %s, want an error", bad, b)
		}
	}
}

// checkPair: AppendJSONPair writes v's JSON form, as AppendJSON does, and
// its text form, that JSON escaped as a JSON string's contents by the
// host's escaper.
func checkPair(t *testing.T, v *Value) {
	t.Helper()
	json, err := AppendJSON(nil, v)
	if err != nil {
		t.Fatalf("AppendJSON(%#v): %v", v, err)
	}
	p := jsonesc.Pair{JSON: []byte("pre"), Text: []byte("pre")}
	if err := AppendJSONPair(&p, v); err != nil {
		t.Fatalf("AppendJSONPair(%#v): %v", v, err)
	}
	if string(p.JSON) != "pre"+string(json) {
		t.Errorf("AppendJSONPair JSON %s, want %s", p.JSON[3:], json)
	}
	if want := jsonesc.Append([]byte("pre"), string(json)); string(p.Text) != string(want) {
		t.Errorf("AppendJSONPair text\n got %s\nwant %s", p.Text[3:], want[3:])
	}
}

func TestParseArgs(t *testing.T) {
	raw := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, x := range s {
			out[i] = json.RawMessage(x)
		}
		return out
	}
	got, err := ParseArgs(raw(`"SET"`, `"k\u00e9"`, ` {"base64":"AP8="} `, `9007199254740991`, `-9007199254740991`, `0`, `-0`, `""`, `{"base64":""}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SET", "ké", "\x00\xff", "9007199254740991", "-9007199254740991", "0", "0", "", ""}
	if len(got) != len(want) {
		t.Fatalf("got %d args", len(got))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("arg %d = %q, want %q", i, got[i], want[i])
		}
	}
	for _, tc := range []struct{ arg, reason, member string }{
		{`9007199254740992`, "decimal string", ""},
		{`-9007199254740992`, "decimal string", ""},
		{`99999999999999999999999`, "decimal string", ""},
		{`1.5`, "decimal string", ""},
		{`1e3`, "decimal string", ""},
		{`true`, "got a boolean", ""},
		{`null`, "got null", ""},
		{`["a"]`, "got an array", ""},
		{`{"base64":"AP8"}`, "invalid base64", ""},
		{`{"base64":1}`, `"base64" must be a string`, "base64"},
		{`{"base64":"","x":1}`, `exactly {"base64"`, "x"},
		{`{"b64":""}`, `exactly {"base64"`, "b64"},
		{``, "empty", ""},
	} {
		_, err := ParseArgs(raw(`"GET"`, tc.arg))
		var ae *ArgError
		prefix := "argument 1: "
		if tc.member != "" {
			prefix = fmt.Sprintf("argument 1, member %q: ", tc.member)
		}
		if !errors.As(err, &ae) || ae.Index != 1 || ae.Member != tc.member || !strings.Contains(ae.Reason, tc.reason) {
			t.Errorf("%s: err = %v, want *ArgError at 1 (member %q) containing %q", tc.arg, err, tc.member, tc.reason)
		} else if !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%s: message %q", tc.arg, err)
		}
	}
}

// TestAppendTextPlain: the text of a string reply is written byte for byte
// as the escaper writes it, whether it takes the plain fast path (every
// printable ASCII byte but the quote and the backslash) or not: each byte
// alone, in a run, and after a plain prefix.
func TestAppendTextPlain(t *testing.T) {
	escaped := func(s []byte) string {
		if !utf8.Valid(s) {
			return "" // base64: not the escaper's
		}
		return `,"encoding":"utf8","value":` + string(segjson.AppendEscape(nil, string(s), 0))
	}
	for c := range 256 {
		for _, s := range [][]byte{{byte(c)}, bytes.Repeat([]byte{byte(c)}, 9), append([]byte("OK value "), byte(c))} {
			want := escaped(s)
			if want == "" {
				continue
			}
			var p jsonesc.Pair
			appendText(&p, s)
			if got := string(p.JSON); got != want {
				t.Errorf("byte %#x in %q: got %s, want %s", c, s, got, want)
			}
			if text := jsonesc.Append(nil, string(p.JSON)); string(p.Text) != string(text) {
				t.Errorf("byte %#x in %q: text %s, want %s", c, s, p.Text, text)
			}
			if plain := jsonscan.Plain(s); plain != (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
				t.Errorf("jsonscan.Plain(%q) = %v", s, plain)
			}
		}
	}
}
