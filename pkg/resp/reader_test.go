package resp

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func str(k Kind, s string) Value { return Value{Kind: k, Str: []byte(s)} }

// decodeCases are frames and the Values they decode to; every one is also
// re-encoded by AppendValue (see TestAppendValueRoundTrip).
var decodeCases = []struct {
	name string
	wire string
	want Value
}{
	{"simple string", "+OK\r\n", str(KindSimpleString, "OK")},
	{"empty simple string", "+\r\n", Value{Kind: KindSimpleString}},
	{"simple error", "-ERR bad\r\n", str(KindSimpleError, "ERR bad")},
	{"integer", ":-42\r\n", Value{Kind: KindInteger, Int: -42}},
	{"integer max", ":9223372036854775807\r\n", Value{Kind: KindInteger, Int: 1<<63 - 1}},
	{"bulk string", "$5\r\nhe\r\no\r\n", str(KindBulkString, "he\r\no")},
	{"empty bulk string", "$0\r\n\r\n", Value{Kind: KindBulkString}},
	{"binary bulk string", "$3\r\n\x00\xff\n\r\n", str(KindBulkString, "\x00\xff\n")},
	{"null bulk string (RESP2)", "$-1\r\n", Value{Kind: KindBulkString, Nil: true}},
	{"null array (RESP2)", "*-1\r\n", Value{Kind: KindArray, Nil: true}},
	{"null", "_\r\n", Value{Kind: KindNull}},
	{"double", ",3.14\r\n", str(KindDouble, "3.14")},
	{"double inf", ",inf\r\n", str(KindDouble, "inf")},
	{"double -inf", ",-inf\r\n", str(KindDouble, "-inf")},
	{"double nan", ",nan\r\n", str(KindDouble, "nan")},
	{"double exponent", ",1.5e300\r\n", str(KindDouble, "1.5e300")},
	{"true", "#t\r\n", Value{Kind: KindBoolean, Bool: true}},
	{"false", "#f\r\n", Value{Kind: KindBoolean}},
	{"bulk error", "!9\r\nSYNTAX x\n\r\n", str(KindBulkError, "SYNTAX x\n")},
	{"verbatim", "=15\r\ntxt:Some string\r\n", Value{Kind: KindVerbatim, Format: "txt", Str: []byte("Some string")}},
	{"verbatim empty", "=4\r\nmkd:\r\n", Value{Kind: KindVerbatim, Format: "mkd"}},
	{"big number", "(3492890328409238509324850943850943825024385\r\n", str(KindBigNumber, "3492890328409238509324850943850943825024385")},
	{"negative big number", "(-1\r\n", str(KindBigNumber, "-1")},
	{"empty array", "*0\r\n", Value{Kind: KindArray}},
	{"array", "*3\r\n:1\r\n$1\r\na\r\n_\r\n", Value{Kind: KindArray, Elems: []Value{{Kind: KindInteger, Int: 1}, str(KindBulkString, "a"), {Kind: KindNull}}}},
	{"nested", "*2\r\n*1\r\n+a\r\n*0\r\n", Value{Kind: KindArray, Elems: []Value{{Kind: KindArray, Elems: []Value{str(KindSimpleString, "a")}}, {Kind: KindArray}}}},
	{"set", "~2\r\n+a\r\n+b\r\n", Value{Kind: KindSet, Elems: []Value{str(KindSimpleString, "a"), str(KindSimpleString, "b")}}},
	{"map with duplicate keys kept in order", "%3\r\n+b\r\n:1\r\n+a\r\n:2\r\n+b\r\n:3\r\n", Value{Kind: KindMap, Elems: []Value{
		str(KindSimpleString, "b"), {Kind: KindInteger, Int: 1},
		str(KindSimpleString, "a"), {Kind: KindInteger, Int: 2},
		str(KindSimpleString, "b"), {Kind: KindInteger, Int: 3}}}},
	{"map with aggregate key", "%1\r\n*1\r\n:1\r\n#t\r\n", Value{Kind: KindMap, Elems: []Value{
		{Kind: KindArray, Elems: []Value{{Kind: KindInteger, Int: 1}}}, {Kind: KindBoolean, Bool: true}}}},
	{"empty map", "%0\r\n", Value{Kind: KindMap}},
	{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", Value{Kind: KindPush, Elems: []Value{
		str(KindBulkString, "message"), str(KindBulkString, "ch"), str(KindBulkString, "hi")}}},
	{"attribute wrapping a reply", "|1\r\n+ttl\r\n:3600\r\n$3\r\nval\r\n", Value{Kind: KindAttribute,
		Elems:   []Value{str(KindSimpleString, "ttl"), {Kind: KindInteger, Int: 3600}},
		Wrapped: &Value{Kind: KindBulkString, Str: []byte("val")}}},
	{"empty attribute", "|0\r\n:1\r\n", Value{Kind: KindAttribute, Wrapped: &Value{Kind: KindInteger, Int: 1}}},
	{"attribute inside an array", "*2\r\n:1\r\n|1\r\n+k\r\n+v\r\n*1\r\n:2\r\n", Value{Kind: KindArray, Elems: []Value{
		{Kind: KindInteger, Int: 1},
		{Kind: KindAttribute, Elems: []Value{str(KindSimpleString, "k"), str(KindSimpleString, "v")},
			Wrapped: &Value{Kind: KindArray, Elems: []Value{{Kind: KindInteger, Int: 2}}}}}}},
	{"attribute wrapping an error", "|1\r\n+k\r\n+v\r\n-ERR x\r\n", Value{Kind: KindAttribute,
		Elems: []Value{str(KindSimpleString, "k"), str(KindSimpleString, "v")}, Wrapped: &Value{Kind: KindSimpleError, Str: []byte("ERR x")}}},
}

func TestReadValue(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one byte", "timeouts"} {
				var src io.Reader = strings.NewReader(tc.wire)
				switch mode {
				case "one byte":
					src = iotest.OneByteReader(src)
				case "timeouts":
					src = &timeoutReader{r: src}
				}
				r := NewReader(src, ReaderOptions{})
				var got Value
				var n int64
				var err error
				for {
					got, n, err = r.ReadValue()
					if !isTimeout(err) {
						break
					}
				}
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("%s: got %#v, want %#v", mode, got, tc.want)
				}
				if n != int64(len(tc.wire)) {
					t.Fatalf("%s: wireBytes %d, want %d", mode, n, len(tc.wire))
				}
				for err = os.ErrDeadlineExceeded; isTimeout(err); {
					_, _, err = r.ReadValue()
				}
				if err != io.EOF {
					t.Fatalf("%s: after the frame: %v, want io.EOF", mode, err)
				}
			}
		})
	}
}

// timeoutReader returns one byte, then a timeout, alternately: a read that
// timed out must resume where it stopped.
type timeoutReader struct {
	r    io.Reader
	tick bool
}

func (t *timeoutReader) Read(p []byte) (int, error) {
	t.tick = !t.tick
	if t.tick {
		return 0, os.ErrDeadlineExceeded
	}
	return t.r.Read(p[:1])
}

// Short strings share a slab (Reader.clone): appending to one decoded
// string must not write over the next, and a long one gets memory of its
// own.
func TestReadSlabStringsStayApart(t *testing.T) {
	long := strings.Repeat("L", slabMaxString+1)
	wire := "+ab\r\n$2\r\ncd\r\n*2\r\n+ef\r\n$" + strconv.Itoa(len(long)) + "\r\n" + long + "\r\n"
	r := NewReader(strings.NewReader(wire), ReaderOptions{})
	var got []Value
	for range 3 {
		v, _, err := r.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	for i, v := range []*Value{&got[0], &got[1], &got[2].Elems[0]} {
		if cap(v.Str) != len(v.Str) {
			t.Errorf("string %d: capacity %d beyond its length %d", i, cap(v.Str), len(v.Str))
		}
		v.Str = append(v.Str, "XYZ"...)
	}
	if string(got[0].Str) != "abXYZ" || string(got[1].Str) != "cdXYZ" || string(got[2].Elems[0].Str) != "efXYZ" {
		t.Errorf("after appends: %q %q %q", got[0].Str, got[1].Str, got[2].Elems[0].Str)
	}
	if s := got[2].Elems[1].Str; string(s) != long || cap(s) > len(s)+64 {
		t.Errorf("long string: %d bytes, capacity %d", len(s), cap(s))
	}
}

func TestReadValueSequence(t *testing.T) {
	var wire bytes.Buffer
	for _, tc := range decodeCases {
		wire.WriteString(tc.wire)
	}
	r := NewReader(&wire, ReaderOptions{})
	for _, tc := range decodeCases {
		got, _, err := r.ReadValue()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%s: got %#v, %v", tc.name, got, err)
		}
	}
}

func TestReadValueLargeBulk(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16) // 300 KiB, beyond the buffer
	wire := AppendValue(nil, Value{Kind: KindBulkString, Str: payload})
	wire = append(wire, "+after\r\n"...)
	r := NewReader(iotest.HalfReader(bytes.NewReader(wire)), ReaderOptions{})
	v, n, err := r.ReadValue()
	if err != nil || !bytes.Equal(v.Str, payload) || n != int64(len(wire)-8) {
		t.Fatalf("got %d bytes, wire %d, %v", len(v.Str), n, err)
	}
	if v, _, err := r.ReadValue(); err != nil || string(v.Str) != "after" {
		t.Fatalf("next frame: %#v, %v", v, err)
	}
	if len(r.buf) != bufSize {
		t.Errorf("buffer kept at %d bytes after the large value, want %d", len(r.buf), bufSize)
	}
}

func TestReadValueErrors(t *testing.T) {
	deep := strings.Repeat("*1\r\n", 4) + ":1\r\n"
	cases := []struct {
		name  string
		wire  string
		opts  ReaderOptions
		limit string // a *LimitError with this Limit; "" for a *ProtocolError
	}{
		{"unknown type", "?x\r\n", ReaderOptions{}, ""},
		{"bare LF", "+OK\n", ReaderOptions{}, ""},
		{"empty line", "\r\n", ReaderOptions{}, ""},
		{"CR inside a simple string", "+a\rb\r\n", ReaderOptions{}, ""},
		{"bad integer", ":12a\r\n", ReaderOptions{}, ""},
		{"integer overflow", ":9223372036854775808\r\n", ReaderOptions{}, ""},
		{"bad double", ",pi\r\n", ReaderOptions{}, ""},
		{"bad big number", "(12x\r\n", ReaderOptions{}, ""},
		{"empty big number", "(\r\n", ReaderOptions{}, ""},
		{"null with payload", "_x\r\n", ReaderOptions{}, ""},
		{"bad boolean", "#x\r\n", ReaderOptions{}, ""},
		{"negative length", "$-2\r\n", ReaderOptions{}, ""},
		{"null map", "%-1\r\n", ReaderOptions{}, ""},
		{"null bulk error", "!-1\r\n", ReaderOptions{}, ""},
		{"bulk without CRLF", "$2\r\nabcd", ReaderOptions{}, ""},
		{"verbatim without format", "=3\r\ntxt\r\n", ReaderOptions{}, ""},
		{"verbatim with bad format", "=5\r\nt\nt:x\r\n", ReaderOptions{}, ""},
		{"bad length", "*x\r\n", ReaderOptions{}, ""},
		{"streamed string", "$?\r\n", ReaderOptions{}, ""},
		{"bulk over limit", "$11\r\nhello world\r\n", ReaderOptions{MaxBulkLen: 10}, "bulk_length"},
		{"aggregate over limit", "*3\r\n:1\r\n:2\r\n:3\r\n", ReaderOptions{MaxAggregateLen: 2}, "aggregate_length"},
		{"map over limit", "%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n", ReaderOptions{MaxAggregateLen: 1}, "aggregate_length"},
		{"too deep", deep, ReaderOptions{MaxDepth: 3}, "depth"},
		{"line too long", "+" + strings.Repeat("x", maxLineLen), ReaderOptions{}, "line_length"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.wire), tc.opts)
			_, _, err := r.ReadValue()
			if tc.limit == "" {
				var pe *ProtocolError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want *ProtocolError", err)
				}
			} else {
				var le *LimitError
				if !errors.As(err, &le) || le.Limit != tc.limit {
					t.Fatalf("err = %v, want *LimitError %s", err, tc.limit)
				}
			}
			if _, _, err2 := r.ReadValue(); err2 != err {
				t.Fatalf("second read: %v, want the same error %v", err2, err)
			}
		})
	}
	// Within the limits, the same frames decode.
	if _, _, err := NewReader(strings.NewReader(deep), ReaderOptions{MaxDepth: 4}).ReadValue(); err != nil {
		t.Fatalf("depth 4 with MaxDepth 4: %v", err)
	}
	if _, _, err := NewReader(strings.NewReader("$10\r\nhelloworld\r\n"), ReaderOptions{MaxBulkLen: 10}).ReadValue(); err != nil {
		t.Fatalf("bulk of MaxBulkLen: %v", err)
	}
}

func TestReadValueEOF(t *testing.T) {
	for _, wire := range []string{"+OK", "$5\r\nab", "*2\r\n:1\r\n", "|1\r\n+a\r\n+b\r\n"} {
		_, _, err := NewReader(strings.NewReader(wire), ReaderOptions{}).ReadValue()
		if err != io.ErrUnexpectedEOF {
			t.Errorf("%q: err = %v, want io.ErrUnexpectedEOF", wire, err)
		}
	}
	if _, _, err := NewReader(strings.NewReader(""), ReaderOptions{}).ReadValue(); err != io.EOF {
		t.Errorf("empty input: err = %v, want io.EOF", err)
	}
}

func TestReadReplyBudget(t *testing.T) {
	wire := "*2\r\n$3\r\nabc\r\n$3\r\ndef\r\n" // 22 bytes, 3 values
	decoded := 22 + 3*valueCost
	for _, limit := range []int64{4, 12, 21, decoded - 1} {
		_, _, err := NewReader(strings.NewReader(wire), ReaderOptions{}).read(limit, true, new(Value))
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "reply_bytes" || le.Max != limit {
			t.Errorf("limit %d: err = %v, want reply_bytes limit", limit, err)
		}
	}
	if n, cost, err := NewReader(strings.NewReader(wire), ReaderOptions{}).read(decoded, true, new(Value)); err != nil || n != 22 || cost != decoded {
		t.Errorf("limit %d: wire %d, decoded %d, %v", decoded, n, cost, err)
	}
	// A huge announced bulk is refused from its header, before it is buffered.
	_, _, err := NewReader(strings.NewReader("$100000000\r\n"), ReaderOptions{}).read(1000, true, new(Value))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "reply_bytes" {
		t.Errorf("huge bulk: err = %v, want reply_bytes limit", err)
	}
}

// TestReplyBudgetBoundsMemory: a reply of many tiny elements, far under
// the budget on the wire, is refused once its decoded values would exceed
// it, so that the budget bounds memory (a Value is about 90 bytes, ":1"
// is 4 on the wire).
func TestReplyBudgetBoundsMemory(t *testing.T) {
	const n = 10_000
	wire := "*" + strconv.Itoa(n) + "\r\n" + strings.Repeat(":1\r\n", n)
	limit := int64(len(wire)) * 4
	_, _, err := NewReader(strings.NewReader(wire), ReaderOptions{}).read(limit, true, new(Value))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "reply_bytes" || le.Max != limit {
		t.Fatalf("%d tiny integers (%d wire bytes) within %d: err = %v, want the reply_bytes limit", n, len(wire), limit, err)
	}
	var v Value
	wireN, cost, err := NewReader(strings.NewReader(wire), ReaderOptions{}).read(int64(len(wire))+(n+1)*valueCost, true, &v)
	if err != nil || len(v.Elems) != n || wireN != int64(len(wire)) {
		t.Fatalf("within the decoded size: %d elements, wire %d, cost %d, %v", len(v.Elems), wireN, cost, err)
	}
}

func TestReadNotBuffered(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, ReaderOptions{})
	go func() { pw.Write([]byte("*2\r\n:1\r\n")); pw.Write([]byte(":2\r\n+x\r\n")); pw.Close() }()
	if _, _, err := r.read(0, false, new(Value)); err != errNotBuffered {
		t.Fatalf("non-blocking read of nothing: %v", err)
	}
	v, _, err := r.ReadValue()
	if err != nil || len(v.Elems) != 2 {
		t.Fatalf("%#v, %v", v, err)
	}
	_, _, err = r.read(0, false, &v)
	if err != nil || string(v.Str) != "x" {
		t.Fatalf("buffered frame: %#v, %v", v, err)
	}
}

// A non-blocking read is all or nothing: a frame over the limit, or not
// yet complete, stays for a later read.
func TestReadBufferedRewinds(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, ReaderOptions{})
	go func() { pw.Write([]byte("+a\r\n*2\r\n+abcdef\r\n")); pw.Write([]byte(":1\r\n")); pw.Close() }()
	if v, _, err := r.ReadValue(); err != nil || string(v.Str) != "a" {
		t.Fatalf("%#v, %v", v, err)
	}
	if _, _, err := r.read(0, false, new(Value)); err != errNotBuffered {
		t.Fatalf("incomplete frame: %v", err)
	}
	if !r.betweenFrames() {
		t.Fatal("an incomplete non-blocking read left a partial frame")
	}
	v, n, err := r.ReadValue()
	if err != nil || len(v.Elems) != 2 || n != 17 {
		t.Fatalf("%#v, %d, %v", v, n, err)
	}
	pr2, pw2 := io.Pipe()
	r = NewReader(pr2, ReaderOptions{})
	go func() { pw2.Write([]byte("+a\r\n+abcdef\r\n")); pw2.Close() }()
	r.ReadValue()
	var le *LimitError
	if _, _, err := r.read(5, false, new(Value)); !errors.As(err, &le) {
		t.Fatalf("over the limit: %v", err)
	}
	if _, _, err := r.read(0, false, &v); err != nil || string(v.Str) != "abcdef" {
		t.Fatalf("after a refused non-blocking read: %#v, %v", v, err)
	}
}

func TestParseInt(t *testing.T) {
	for _, s := range []string{"0", "-0", "+5", "42", "-42", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999", "", "-", "+", "1a", " 1", "1 ", "--1", "0x10", "1_000"} {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := parseInt([]byte(s))
		if ok != (err == nil) || got != want && ok {
			t.Errorf("parseInt(%q) = %d, %v; strconv: %d, %v", s, got, ok, want, err)
		}
	}
}

// TestReadValueAllocations: a simple string costs one allocation (its
// bytes) and an integer none: decoding a pipeline's replies allocates
// nothing per value beyond what the values hold.
func TestReadValueAllocations(t *testing.T) {
	for _, c := range []struct {
		wire string
		want float64
	}{{"+OK\r\n", 1}, {":42\r\n", 0}} {
		r := NewReader(&repeat{b: []byte(c.wire)}, ReaderOptions{})
		if n := testing.AllocsPerRun(200, func() {
			if _, _, err := r.ReadValue(); err != nil {
				t.Fatal(err)
			}
		}); n > c.want {
			t.Errorf("reading %q allocates %v times, want %v", c.wire, n, c.want)
		}
	}
}
