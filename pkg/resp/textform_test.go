package resp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkTextForm renders v as text and parses it back: the value read must
// have v's JSON form, and the text must be what the parser consumed,
// whatever it is indented by.
func checkTextForm(t *testing.T, v *Value) string {
	t.Helper()
	text, err := AppendTextForm(nil, v)
	if err != nil {
		t.Fatalf("text form of %#v: %v", v, err)
	}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseTextForm(text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	if js, _ := json.Marshal(got); !bytes.Equal(js, want) {
		t.Fatalf("text form %q reads back as\n%s\nwant\n%s", text, js, want)
	}
	// After a label, as resp_execute writes each reply of a batch.
	labelled, err := AppendTextFormIndent([]byte("[12] "), v, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := ParseTextFormPrefix(labelled[5:], 5)
	if err != nil || n != len(labelled)-5 {
		t.Fatalf("parse %q after a label: %v (read %d of %d bytes)", labelled, err, n, len(labelled)-5)
	}
	if js, _ := json.Marshal(got); !bytes.Equal(js, want) {
		t.Fatalf("text form %q after a label reads back as\n%s\nwant\n%s", labelled, js, want)
	}
	return string(text)
}

func TestTextForm(t *testing.T) {
	s := func(k Kind, x string) Value { return Value{Kind: k, Str: []byte(x)} }
	arr := func(k Kind, e ...Value) Value { return Value{Kind: k, Elems: e} }
	many := make([]Value, 12)
	for i := range many {
		many[i] = Value{Kind: KindInteger, Int: int64(i)}
	}
	nested := arr(KindArray, s(KindBulkString, "a"), arr(KindArray, s(KindBulkString, "b"), arr(KindSet)), Value{Kind: KindNull})
	wrapped := s(KindBulkString, "v")
	for _, tc := range []struct {
		name string
		v    Value
		want string
	}{
		{"simple string", s(KindSimpleString, "OK"), `(status) OK`},
		{"simple string with spaces", s(KindSimpleString, "Background saving started"), `(status) Background saving started`},
		{"empty simple string", s(KindSimpleString, ""), `(status) ""`},
		{"simple string like an index", s(KindSimpleString, "1) x"), `(status) 1) x`},
		{"simple string like a label", s(KindSimpleString, "(nil)"), `(status) (nil)`},
		{"simple string with an arrow", s(KindSimpleString, "a => b"), `(status) "a => b"`},
		{"simple string with a quote", s(KindSimpleString, `"x`), `(status) "\"x"`},
		{"simple string with trailing space", s(KindSimpleString, "x "), `(status) "x "`},
		{"bulk string", s(KindBulkString, "value"), `value`},
		{"bulk string with spaces", s(KindBulkString, "Background saving started"), `Background saving started`},
		{"empty bulk string", Value{Kind: KindBulkString}, `""`},
		{"bulk string like an index", s(KindBulkString, "1) x"), `"1) x"`},
		{"bulk string like a number", s(KindBulkString, "42"), `"42"`},
		{"bulk string like a label", s(KindBulkString, "(nil)"), `"(nil)"`},
		{"bulk string with an arrow", s(KindBulkString, "a => b"), `"a => b"`},
		{"bulk string with a quote", s(KindBulkString, `"x`), `"\"x"`},
		{"bulk string with trailing space", s(KindBulkString, "x "), `"x "`},
		{"binary bulk string", s(KindBulkString, "\x00\xff\n\r\t\a\b\"\\ é\u2028"), `"\x00\xff\n\r\t\a\b\"\\ é\xe2\x80\xa8"`},
		{"simple error", s(KindSimpleError, "ERR wrong number of arguments"), `(error) ERR wrong number of arguments`},
		{"simple error with a leading quote", s(KindSimpleError, `"ERR`), `(error) "\"ERR"`},
		{"bulk error", s(KindBulkError, "SYNTAX invalid\r\nsyntax"), `(bulk error) "SYNTAX invalid\r\nsyntax"`},
		{"integer", Value{Kind: KindInteger, Int: -9007199254740993}, `(integer) -9007199254740993`},
		{"double", s(KindDouble, "3.14"), `(double) 3.14`},
		{"double inf", s(KindDouble, "-inf"), `(double) -inf`},
		{"big number", s(KindBigNumber, "3492890328409238509324850943850943825024385"), `(big number) 3492890328409238509324850943850943825024385`},
		{"null", Value{Kind: KindNull}, `(nil)`},
		{"null bulk string (RESP2)", Value{Kind: KindBulkString, Nil: true}, `(nil)`},
		{"null array (RESP2)", Value{Kind: KindArray, Nil: true}, `(nil)`},
		{"true", Value{Kind: KindBoolean, Bool: true}, `(true)`},
		{"false", Value{Kind: KindBoolean}, `(false)`},
		{"verbatim", Value{Kind: KindVerbatim, Format: "txt", Str: []byte("Some string\r\n")}, `(verbatim txt) "Some string\r\n"`},
		{"verbatim odd format", Value{Kind: KindVerbatim, Format: "a)\x00", Str: []byte("x")}, `(verbatim "a)\x00") "x"`},
		{"empty array", arr(KindArray), `(empty array)`},
		{"empty set", arr(KindSet), `(empty set)`},
		{"empty push", arr(KindPush), `(empty push)`},
		{"empty map", arr(KindMap), `(empty hash)`},
		{"array", arr(KindArray, s(KindBulkString, "a"), Value{Kind: KindInteger, Int: 1}), "1) a\n2) (integer) 1"},
		{"nested", nested, "1) a\n2) 1) b\n   2) (empty set)\n3) (nil)"},
		{"twelve items", arr(KindArray, many...), " 1) (integer) 0\n 2) (integer) 1\n 3) (integer) 2\n 4) (integer) 3\n 5) (integer) 4\n 6) (integer) 5\n" +
			" 7) (integer) 6\n 8) (integer) 7\n 9) (integer) 8\n10) (integer) 9\n11) (integer) 10\n12) (integer) 11"},
		{"nested in twelve", arr(KindArray, append([]Value{nested}, many[1:]...)...), " 1) 1) a\n    2) 1) b\n       2) (empty set)\n    3) (nil)\n 2) (integer) 1\n" +
			" 3) (integer) 2\n 4) (integer) 3\n 5) (integer) 4\n 6) (integer) 5\n 7) (integer) 6\n 8) (integer) 7\n 9) (integer) 8\n10) (integer) 9\n11) (integer) 10\n12) (integer) 11"},
		{"set", arr(KindSet, s(KindSimpleString, "a"), s(KindSimpleString, "b")), "1~ (status) a\n2~ (status) b"},
		{"push", arr(KindPush, s(KindBulkString, "message"), s(KindBulkString, "ch"), s(KindBulkString, "hi")), "1> message\n2> ch\n3> hi"},
		{"map", arr(KindMap, s(KindBulkString, "server"), s(KindBulkString, "redis"), s(KindSimpleString, "proto"), Value{Kind: KindInteger, Int: 3}),
			"1# server => redis\n2# (status) proto => (integer) 3"},
		{"map of aggregates", arr(KindMap, nested, nested, s(KindSimpleString, "k"), arr(KindMap, s(KindSimpleString, "a"), s(KindSimpleString, "b"))),
			"1# 1) a\n   2) 1) b\n      2) (empty set)\n   3) (nil) => 1) a\n   2) 1) b\n      2) (empty set)\n   3) (nil)\n2# (status) k => 1# (status) a => (status) b"},
		{"map with duplicate keys", arr(KindMap, s(KindSimpleString, "k"), s(KindSimpleString, "1"), s(KindSimpleString, "k"), s(KindSimpleString, "2")),
			"1# (status) k => (status) 1\n2# (status) k => (status) 2"},
		{"attribute", Value{Kind: KindAttribute, Elems: []Value{s(KindBulkString, "ttl"), Value{Kind: KindInteger, Int: 3}}, Wrapped: &wrapped},
			"(attribute) 1# ttl => (integer) 3\nv"},
		{"attribute in an array", arr(KindArray, Value{Kind: KindAttribute, Elems: []Value{s(KindBulkString, "a"), s(KindBulkString, "b"), s(KindBulkString, "c"), s(KindBulkString, "d")}, Wrapped: &nested}, wrapped),
			"1) (attribute) 1# a => b\n               2# c => d\n   1) a\n   2) 1) b\n      2) (empty set)\n   3) (nil)\n2) v"},
		{"empty attribute as a map key", arr(KindMap, Value{Kind: KindAttribute, Elems: []Value{}, Wrapped: &Value{Kind: KindSimpleString, Str: []byte("k")}}, wrapped),
			"1# (attribute) (empty hash)\n   (status) k => v"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkTextForm(t, &tc.v); got != tc.want {
				t.Errorf("text form\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestTextFormFixtures reads back the text form of every reply type a
// real server sends (DEBUG PROTOCOL, RESP3 and RESP2: the recorded
// fixtures) and of every decoder case.
func TestTextFormFixtures(t *testing.T) {
	fixtures, err := filepath.Glob(filepath.Join("testdata", "debug_protocol", "*", "*.resp"))
	if err != nil || len(fixtures) < 20 {
		t.Fatalf("fixtures: %v, %d", err, len(fixtures))
	}
	for _, path := range fixtures {
		wire, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		vals, _ := decodeAll(t, wire)
		for _, v := range vals {
			checkTextForm(t, &v)
		}
		all := Value{Kind: KindArray, Elems: vals} // nested as a reply of EXEC would be
		checkTextForm(t, &all)
	}
	for _, tc := range decodeCases {
		checkTextForm(t, &tc.want)
	}
}

// TestParseTextFormErrors: text that is not one value's text form is an
// error, never a value.
func TestParseTextFormErrors(t *testing.T) {
	for _, text := range []string{
		"", `"open`, `"bad \q"`, `"\x4"`, "(integer) x", "(integer) 1 2", "(what) x", "1) a\n3) b", "2) a",
		"1# a", "x ", " x", "(error) ", "(verbatim txt \"x\"", "(attribute) (empty hash)", "OK\nmore", "a => b", "\"a\nb\"",
		"1) " + strings.Repeat("1) ", maxTextDepth+2) + "x",
	} {
		if v, err := ParseTextForm([]byte(text)); err == nil {
			t.Errorf("ParseTextForm(%q) = %#v, want an error", text, v)
		}
	}
}
