package resp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzReader: the decoder never panics, stops with a typed error or io.EOF
// on any input, and what it decodes re-encodes to frames that decode to
// the same Values and have a JSON form, whose text values are the bytes
// received, and a text form that reads back to the same JSON form.
func FuzzReader(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.wire))
	}
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "debug_protocol", "*", "*.resp"))
	for _, p := range fixtures {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("*2\r\n%1\r\n|1\r\n+a\r\n+b\r\n:1\r\n~0\r\n>1\r\n=5\r\ntxt:x\r\n"))
	f.Fuzz(func(t *testing.T, wire []byte) {
		r := NewReader(bytes.NewReader(wire), ReaderOptions{MaxBulkLen: 1 << 16, MaxAggregateLen: 1 << 10, MaxDepth: 16})
		var vals []Value
		var total int64
		for {
			v, n, err := r.ReadValue()
			if err != nil {
				var pe *ProtocolError
				var le *LimitError
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &pe) && !errors.As(err, &le) {
					t.Fatalf("untyped error %v", err)
				}
				break
			}
			if n <= 0 || total+n > int64(len(wire)) {
				t.Fatalf("wireBytes %d after %d of %d", n, total, len(wire))
			}
			total += n
			vals = append(vals, v)
			js, err := json.Marshal(v)
			if err != nil || !json.Valid(js) {
				t.Fatalf("JSON of %#v: %s, %v", v, js, err)
			}
			checkPair(t, &v)
			checkTextForm(t, &v)
			var text struct{ Encoding, Value string }
			if json.Unmarshal(js, &text) == nil && text.Encoding == "utf8" && text.Value != string(v.Str) {
				t.Fatalf("JSON of %#v: value %q, want %q", v, text.Value, v.Str)
			}
		}
		var re []byte
		for _, v := range vals {
			re = AppendValue(re, v)
		}
		r2 := NewReader(bytes.NewReader(re), ReaderOptions{})
		for i, want := range vals {
			got, _, err := r2.ReadValue()
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("value %d re-decodes to %#v, %v; want %#v", i, got, err, want)
			}
		}
		if _, _, err := r2.ReadValue(); err != io.EOF {
			t.Fatalf("re-encoded stream has more: %v", err)
		}
	})
}

// FuzzParseArgs: arguments from JSON never panic, a refused one is an
// *ArgError, and a string argument is exactly what encoding/json decodes
// (the plain-string fast path included).
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`"a"`, `{"base64":"AP8="}`, `12`, `-9007199254740991`, `1.5`, `true`, `{"base64":1}`, `[1]`,
		`"caf\u00e9"`, "\"\xff\"", "\"\xc3\xa9\"", `"a\"b"`, "\"\t\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, arg []byte) {
		out, err := ParseArgs([]json.RawMessage{arg})
		var ae *ArgError
		if err != nil && (!errors.As(err, &ae) || ae.Index != 0) {
			t.Fatalf("%q: %v", arg, err)
		}
		if err == nil && len(out) != 1 {
			t.Fatalf("%q: %d args", arg, len(out))
		}
		var want string
		if json.Unmarshal(arg, &want) == nil && (err != nil || string(out[0]) != want) {
			t.Fatalf("%q: got %q, %v; encoding/json decodes %q", arg, out, err, want)
		}
	})
}
