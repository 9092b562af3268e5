package docstore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestAppendValue(t *testing.T) {
	t.Parallel()
	// Exact bytes: the version byte, then CBOR (checked against RFC 8949
	// Appendix A where it has the item).
	tests := []struct {
		v    Value
		want string
	}{
		{Null(), "01f6"},
		{Bool(false), "01f4"},
		{Bool(true), "01f5"},
		{Int(0), "0100"},
		{Int(23), "0117"},
		{Int(24), "011818"},
		{Int(1000), "011903e8"},
		{Int(1000000), "011a000f4240"},
		{Int(1000000000000), "011b000000e8d4a51000"},
		{Int(-1), "0120"},
		{Int(-1000), "013903e7"},
		{Int(math.MaxInt64), "011b7fffffffffffffff"},
		{Int(math.MinInt64), "013b7fffffffffffffff"},
		{Float(1), "01fa3f800000"}, // an integral float stays a float
		{Float(1.5), "01fa3fc00000"},
		{Float(0.1), "01fb3fb999999999999a"},
		{Float(math.Copysign(0, -1)), "01fa80000000"},
		{Float(math.Inf(1)), "01fa7f800000"},
		{Float(1e300), "01fb7e37e43c8800759c"},
		{Text(""), "0160"},
		{Text("a"), "016161"},
		{Text("\u00fc"), "0162c3bc"},
		{Bytes([]byte{1, 2, 3, 4}), "014401020304"},
		{Vector([]float32{1, -2}), "01d855480000803f000000c0"},
		{Vector(nil), "01d85540"},
		{Array(), "0180"},
		{Array(Int(1), Array(Int(2), Int(3))), "0182018202" + "03"},
		{Map(), "01a0"},
		{Map(fld("b", Int(1)), fld("a", Int(2))), "01a2616201616102"},
	}
	for _, tt := range tests {
		got := AppendValue(nil, tt.v)
		if hex.EncodeToString(got) != tt.want {
			t.Errorf("AppendValue(%v) = %x, want %s", tt.v, got, tt.want)
		}
		back, err := DecodeValue(got)
		if err != nil || !identical(back, tt.v, true) {
			t.Errorf("DecodeValue(%x) = %v, %v; want %v", got, back, err, tt.v)
		}
	}
	if got := AppendValue([]byte("x"), Int(1)); string(got) != "x\x01\x01" {
		t.Errorf("AppendValue appends: %q", got)
	}
}

// TestDecodeValueLenient checks forms AppendValue does not write but a
// CBOR writer may: heads wider than needed, a float64 that fits a float32.
func TestDecodeValueLenient(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Value{
		"011b0000000000000001":     Int(1),
		"01fb3ff0000000000000":     Float(1),
		"017800":                   Text(""),
		"01b90001616101":           Map(fld("a", Int(1))),
		"01d8555a0000000400002041": Vector([]float32{10}),
	} {
		b, _ := hex.DecodeString(in)
		got, err := DecodeValue(b)
		if err != nil || !identical(got, want, true) {
			t.Errorf("DecodeValue(%s) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestDecodeValueErrors(t *testing.T) {
	t.Parallel()
	deep := Int(1)
	for range MaxDepth + 1 {
		deep = Array(deep)
	}
	deepBytes := AppendValue(nil, deep)
	tests := []struct {
		in     string
		kind   error
		path   string
		offset int
	}{
		{"", ErrCorrupt, "", 0},
		{"00f6", ErrCorrupt, "", 0}, // unknown version
		{"02f6", ErrCorrupt, "", 0},
		{"01", ErrCorrupt, "", 1},
		{"01f6f6", ErrCorrupt, "", 2},                // trailing bytes
		{"0118", ErrCorrupt, "", 1},                  // truncated head
		{"011b00000000000000", ErrCorrupt, "", 1},    // truncated head
		{"011b8000000000000000", ErrCorrupt, "", 1},  // int beyond int64
		{"013b8000000000000000", ErrCorrupt, "", 1},  // int below int64
		{"01fa0000", ErrCorrupt, "", 2},              // truncated float32
		{"01fb00000000000000", ErrCorrupt, "", 2},    // truncated float64
		{"01f93c00", ErrCorrupt, "", 1},              // half float: not written
		{"01f7", ErrCorrupt, "", 1},                  // undefined
		{"01f0", ErrCorrupt, "", 1},                  // simple value 16
		{"011c", ErrCorrupt, "", 1},                  // reserved additional info
		{"015f", ErrCorrupt, "", 1},                  // indefinite bytes
		{"019f", ErrCorrupt, "", 1},                  // indefinite array
		{"016261", ErrCorrupt, "", 2},                // text longer than the input
		{"015bffffffffffffffff", ErrCorrupt, "", 10}, // bytes longer than the input
		{"019bffffffffffffffff", ErrCorrupt, "", 10}, // array longer than the input
		{"01bbffffffffffffffff", ErrCorrupt, "", 10}, // map longer than the input
		{"0182f6", ErrCorrupt, "", 2},                // more items than bytes
		{"01820162", ErrCorrupt, "/1", 4},            // a truncated item
		{"01a10101", ErrCorrupt, "", 2},              // a key that is not text
		{"01a16161a16162", ErrCorrupt, "/a/b", 7},    // nested truncation
		{"01a26161016161f6", ErrCorrupt, "", 1},      // a repeated key
		{"01c1f6", ErrCorrupt, "", 1},                // another tag
		{"01d85501", ErrCorrupt, "", 3},              // a vector not over bytes
		{"01d8554300000000", ErrCorrupt, "", 3},      // a vector of 3 bytes
		{"01d85544000000", ErrCorrupt, "", 4},        // truncated vector
		{"0181d855", ErrCorrupt, "/0", 4},            // truncated tag
		{hex.EncodeToString(deepBytes), ErrTooDeep, strings.Repeat("/0", MaxDepth), MaxDepth + 1},
	}
	for _, tt := range tests {
		b, err := hex.DecodeString(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeValue(b)
		var ve *ValueError
		if !errors.As(err, &ve) || !errors.Is(err, tt.kind) {
			t.Errorf("DecodeValue(%.40s) = %v, want a *ValueError of %v", tt.in, err, tt.kind)
			continue
		}
		if ve.Op != "DecodeValue" || ve.Path != tt.path || ve.Offset != tt.offset {
			t.Errorf("DecodeValue(%.40s): %v: path %q offset %d, want %q %d", tt.in, err, ve.Path, ve.Offset, tt.path, tt.offset)
		}
	}
	// MaxDepth levels decode.
	if _, err := DecodeValue(AppendValue(nil, deep.arr()[0])); err != nil {
		t.Errorf("DecodeValue of %d levels: %v", MaxDepth, err)
	}
}

// TestDecodeValueTruncated checks that every proper prefix of an encoding
// fails (the format is self-delimiting) and that no byte flip panics.
func TestDecodeValueTruncated(t *testing.T) {
	t.Parallel()
	v, err := FromJSON([]byte(benchDocJSON))
	if err != nil {
		t.Fatal(err)
	}
	enc := AppendValue(nil, v)
	for n := range len(enc) {
		if _, err := DecodeValue(enc[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DecodeValue of %d of %d bytes: %v", n, len(enc), err)
		}
	}
	for i := range enc {
		b := bytes.Clone(enc)
		b[i] ^= 0xff
		_, _ = DecodeValue(b)
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	for range 5000 {
		g := valueGen{b: randomBytes(rng, 64)}
		v := g.value(0)
		enc := AppendValue(nil, v)
		back, err := DecodeValue(enc)
		if err != nil || !identical(back, v, true) || !hasVectorNaN(v) && !Equal(back, v) {
			t.Fatalf("DecodeValue(AppendValue(%v)) = %v, %v", v, back, err)
		}
	}
}

func TestDedupFields(t *testing.T) {
	t.Parallel()
	for _, n := range []int{3, 40} { // both ways of finding a repeat
		var fields []Field
		for i := range n {
			fields = append(fields, fld(string(rune('a'+i%26))+strings.Repeat("x", i/26), Int(int64(i))))
		}
		extra := []Field{fld("b", Int(-1)), fld(fields[n-1].Key, Int(-2)), fld("new", Int(-3))}
		want := Map(append(slices.Clone(fields), extra...)...) // Map's merge is the reference
		merged := dedupFields(append(slices.Clone(fields), extra...))
		if !identical(mapValue(merged), want, true) {
			t.Errorf("n=%d: dedupFields = %v, want %v", n, merged, want)
		}
		if hasDupKey(fields) {
			t.Errorf("n=%d: hasDupKey of distinct keys", n)
		}
	}
}

func BenchmarkBinary(b *testing.B) {
	v, err := FromJSON([]byte(benchDocJSON))
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendValue(buf[:0], v)
		if _, err := DecodeValue(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes/doc")
	b.ReportMetric(float64(len(benchDocJSON)), "json-bytes/doc")
}

func BenchmarkAppendValue(b *testing.B) {
	v, err := FromJSON([]byte(benchDocJSON))
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendValue(buf[:0], v)
	}
}

// BenchmarkRecordVector encodes a stored document holding a 384-component
// vector, as a write of an embedding does (record: a fresh buffer each).
func BenchmarkRecordVector(b *testing.B) {
	v := Map(Field{Key: "t", Value: Text("a short text")}, Field{Key: "v", Value: Vector(embeddingVecs(1, 1, 384)[0])})
	b.ReportAllocs()
	for b.Loop() {
		record(1, v)
	}
}

func BenchmarkDecodeValue(b *testing.B) {
	v, err := FromJSON([]byte(benchDocJSON))
	if err != nil {
		b.Fatal(err)
	}
	buf := AppendValue(nil, v)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeValue(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestValueSize: a Value is two words, as its doc says: a decoded
// document's fields are 32 bytes each, not the 120 of a Value holding a
// slice per kind.
func TestValueSize(t *testing.T) {
	if got, want := unsafe.Sizeof(Value{}), 2*unsafe.Sizeof(uintptr(0)); got != want {
		t.Errorf("a Value takes %d bytes, want %d", got, want)
	}
}

// TestDecodeValueAllocs: decoding a document allocates one copy of its
// bytes (backing every text) and one slice per map or array, nothing per
// scalar.
func TestDecodeValueAllocs(t *testing.T) {
	doc := Map(
		Field{"a", Int(1)}, Field{"b", Text("x")}, Field{"c", Float(1.5)}, Field{"d", Bool(true)},
		Field{"e", Map(Field{"f", Text("y")}, Field{"g", Array(Int(1), Text("z"))})},
		Field{"h", Bytes([]byte{1, 2})}, Field{"i", Null()},
	)
	enc := AppendValue(nil, doc)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := DecodeValue(enc); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 4 { // the bytes, two maps, one array
		t.Errorf("DecodeValue allocated %v times, want 4", allocs)
	}
}

// TestDecodeWithStringStore: documents decoded through one stringStore (as
// a page decodes them) are Equal to those written, across chunk
// boundaries and with texts long enough for a chunk of their own, and
// share one copy of each map key.
func TestDecodeWithStringStore(t *testing.T) {
	strs := newStringStore()
	var got, want []Value
	for i := range 300 {
		doc := Map(Field{"name", Text(strings.Repeat("n", i%50))}, Field{"i", Int(int64(i))},
			Field{"blob", Bytes(bytes.Repeat([]byte{byte(i)}, i*7))}, Field{"tags", Array(Text("a"), Text(""))})
		v, err := decodeValue(AppendValue(nil, doc), strs)
		if err != nil {
			t.Fatal(err)
		}
		got, want = append(got, v), append(want, doc)
	}
	for i := range got {
		if !Equal(got[i], want[i]) {
			t.Fatalf("document %d decoded as %v, want %v", i, got[i], want[i])
		}
	}
	k0, k1 := got[0].m()[0].Key, got[299].m()[0].Key
	if unsafe.StringData(k0) != unsafe.StringData(k1) {
		t.Error("the documents' keys are separate copies")
	}
}

// TestValueKinds: every constructor's value reports its kind and contents,
// whatever its number holds (all 64 bits of an int or a float) and when it
// is empty (an empty text, bytes, vector, array or map is not null).
func TestValueKinds(t *testing.T) {
	cases := []struct {
		v    Value
		kind Kind
	}{
		{Null(), KindNull}, {Value{}, KindNull}, {Bool(false), KindBool}, {Bool(true), KindBool},
		{Int(0), KindInt}, {Int(-1), KindInt}, {Int(math.MinInt64), KindInt}, {Int(math.MaxInt64), KindInt},
		{Float(0), KindFloat}, {Float(math.NaN()), KindFloat}, {Float(math.Inf(-1)), KindFloat}, {Float(-0.0), KindFloat},
		{Text(""), KindText}, {Text("x"), KindText}, {Bytes(nil), KindBytes}, {Bytes([]byte{0}), KindBytes},
		{Vector(nil), KindVector}, {Vector([]float32{1}), KindVector}, {Array(), KindArray}, {Array(Null()), KindArray},
		{Map(), KindMap}, {Map(Field{"a", Null()}), KindMap},
	}
	for _, c := range cases {
		if got := c.v.Kind(); got != c.kind {
			t.Errorf("%v: kind %v, want %v", c.v, got, c.kind)
		}
		if c.v.IsNull() != (c.kind == KindNull) {
			t.Errorf("%v (%v): IsNull %v", c.v, c.kind, c.v.IsNull())
		}
		if back, err := DecodeValue(AppendValue(nil, c.v)); err != nil || back.Kind() != c.kind || !identical(back, c.v, true) {
			t.Errorf("%v (%v) decoded as %v (%v), %v", c.v, c.kind, back, back.Kind(), err)
		}
	}
	if i, ok := Int(math.MinInt64).Int(); !ok || i != math.MinInt64 {
		t.Errorf("Int(MinInt64).Int() = %d, %v", i, ok)
	}
	if f, ok := Float(math.Inf(-1)).Float(); !ok || !math.IsInf(f, -1) {
		t.Errorf("Float(-Inf).Float() = %v, %v", f, ok)
	}
	if s, ok := Text("héllo").Text(); !ok || s != "héllo" {
		t.Errorf(`Text("héllo").Text() = %q, %v`, s, ok)
	}
	if a, ok := Array().Array(); !ok || a == nil || len(a) != 0 {
		t.Errorf("Array().Array() = %#v, %v; want empty, not nil", a, ok)
	}
}
