package resp

import (
	"bytes"
	"reflect"
	"testing"
)

func TestAppendCommand(t *testing.T) {
	for _, args := range [][][]byte{
		nil,
		{[]byte("PING")},
		{[]byte("SET"), []byte("k"), []byte("v\r\n\x00")},
		{[]byte("SET"), []byte(""), bytes.Repeat([]byte("x"), 12345)},
		make([][]byte, 11),
	} {
		got := AppendCommand([]byte("prefix"), args)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("dst not kept: %q", got)
		}
		got = got[len("prefix"):]
		if int64(len(got)) != CommandSize(args) {
			t.Errorf("CommandSize = %d, AppendCommand wrote %d", CommandSize(args), len(got))
		}
		v, _, err := NewReader(bytes.NewReader(got), ReaderOptions{}).ReadValue()
		if err != nil || v.Kind != KindArray || len(v.Elems) != len(args) {
			t.Fatalf("%q decodes to %#v, %v", got, v, err)
		}
		for i, e := range v.Elems {
			if e.Kind != KindBulkString || !bytes.Equal(e.Str, args[i]) {
				t.Errorf("arg %d: %#v", i, e)
			}
		}
	}
	if got := string(AppendCommand(nil, [][]byte{[]byte("GET"), []byte("k")})); got != "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" {
		t.Errorf("GET k = %q", got)
	}
}

func TestAppendValueRoundTrip(t *testing.T) {
	for _, tc := range decodeCases {
		wire := AppendValue(nil, tc.want)
		if string(wire) != tc.wire {
			t.Errorf("%s: AppendValue = %q, want %q", tc.name, wire, tc.wire)
		}
	}
	// Values no frame can carry as they are.
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{str(KindSimpleString, "a\r\nb"), "$4\r\na\r\nb\r\n"},
		{str(KindSimpleError, "E\n"), "!2\r\nE\n\r\n"},
		{Value{Kind: KindMap, Elems: []Value{{Kind: KindNull}}}, "%0\r\n"},
		{Value{Kind: KindAttribute}, "|0\r\n_\r\n"},
		{Value{Kind: 'x'}, "_\r\n"},
	} {
		if got := string(AppendValue(nil, tc.v)); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.v, got, tc.want)
		}
	}
	v, _, err := NewReader(bytes.NewReader(AppendValue(nil, Value{Kind: KindInteger, Int: -7})), ReaderOptions{}).ReadValue()
	if err != nil || !reflect.DeepEqual(v, Value{Kind: KindInteger, Int: -7}) {
		t.Fatalf("%#v, %v", v, err)
	}
}
