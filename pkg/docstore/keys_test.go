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
)

// orderedValues is in ascending Compare order; neighbours in one inner
// slice compare equal.
var orderedValues = [][]Value{
	{Null()},
	{Bool(false)},
	{Bool(true)},
	{Float(math.NaN()), Float(-math.NaN()), Float(math.Float64frombits(0x7ff0000000000001))},
	{Float(math.Inf(-1))},
	{Float(-math.MaxFloat64)},
	{Float(-1e300)},
	{Float(math.Nextafter(-0x1p63, math.Inf(-1)))},
	{Int(math.MinInt64)},
	{Float(-0x1p63)},
	{Int(math.MinInt64 + 1)},
	{Float(math.Nextafter(-0x1p63, 0))},
	{Int(-1<<53 - 1)},
	{Int(-1 << 53)},
	{Float(-0x1p53)},
	{Int(-65537)},
	{Int(-65536)},
	{Int(-257)},
	{Float(-256.5)},
	{Int(-256)},
	{Float(-256)},
	{Float(-255.99999999999997)},
	{Int(-255)},
	{Float(-1.5)},
	{Int(-1)},
	{Float(-1)},
	{Float(math.Nextafter(-1, 0))},
	{Float(-0.5)},
	{Float(-0x1p-60)},
	{Float(-5e-324)},
	{Int(0)},
	{Float(0), Float(math.Copysign(0, -1))},
	{Float(5e-324)},
	{Float(0x1p-60)},
	{Float(0.5)},
	{Float(math.Nextafter(1, 0))},
	{Int(1)},
	{Float(1)},
	{Float(math.Nextafter(1, 2))},
	{Float(1.5)},
	{Int(2)},
	{Int(255)},
	{Float(255.5)},
	{Int(256)},
	{Int(65535)},
	{Int(65536)},
	{Int(1<<53 - 1)},
	{Int(1 << 53)},
	{Float(0x1p53)},
	{Int(1<<53 + 1)}, // no float between 2^53 and 2^53+2
	{Float(0x1p53 + 2)},
	{Int(math.MaxInt64 - 1024)},
	{Float(0x1p63 - 1024)},
	{Int(math.MaxInt64 - 1)},
	{Int(math.MaxInt64)},
	{Float(0x1p63)},
	{Float(1e300)},
	{Float(math.MaxFloat64)},
	{Float(math.Inf(1))},
	{Text("")},
	{Text("\x00")},
	{Text("\x00\x00")},
	{Text("\x00\x01")},
	{Text("\x01")},
	{Text("a")},
	{Text("a\x00")},
	{Text("a\x00\x00")},
	{Text("a\x00b")},
	{Text("a\x01")},
	{Text("ab")},
	{Text("b")},
	{Text("\xff")},
	{Text("\xff\xff")},
	{Bytes(nil)},
	{Bytes([]byte{0})},
	{Bytes([]byte("a"))},
	{Vector(nil)},
	{Vector([]float32{float32(math.NaN())})},
	{Vector([]float32{float32(math.Inf(-1))})},
	{Vector([]float32{-1})},
	{Vector([]float32{0}), Vector([]float32{float32(math.Copysign(0, -1))})},
	{Vector([]float32{0, 0})},
	{Vector([]float32{1e-45})},
	{Vector([]float32{1})},
	{Vector([]float32{float32(math.Inf(1))})},
	{Array()},
	{Array(Null())},
	{Array(Null(), Null())},
	{Array(Int(1))},
	{Array(Float(1))},
	{Array(Float(1), Null())},
	{Array(Text("a"))},
	{Array(Text("a"), Text("b"))},
	{Array(Text("a\x00"))},
	{Array(Array())},
	{Array(Array(Null()))},
	{Map()},
	{Map(fld("", Null()))},
	{Map(fld("a", Null()))},
	{Map(fld("a", Null()), fld("b", Null()))},
	{Map(fld("a", Int(1)))},
	{Map(fld("a", Float(1)))},
	{Map(fld("a\x00", Null()))},
	{Map(fld("b", Null()))},
}

func TestKeyOrder(t *testing.T) {
	t.Parallel()
	var flat []Value
	var group []int
	for g, vs := range orderedValues {
		for _, v := range vs {
			flat = append(flat, v)
			group = append(group, g)
		}
	}
	for i, a := range flat {
		for j, b := range flat {
			want := sign(group[i] - group[j])
			if c := Compare(a, b); sign(c) != want {
				t.Fatalf("the table is wrong: Compare(%v, %v) = %d", a, b, c)
			}
			checkKeyPair(t, a, flat[(i+1)%len(flat)], b, flat[(j+3)%len(flat)])
		}
	}
}

func TestAppendKeyBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    Value
		want string
	}{
		{Null(), "02"},
		{Bool(false), "04"},
		{Bool(true), "05"},
		{Float(math.NaN()), "10"},
		{Float(math.Inf(-1)), "11" + "000fffffffffffff"},
		{Float(-0x1p64), "11" + "3c0fffffffffffff"},
		{Int(math.MinInt64), "12" + "8000000000000000" + "02"},
		{Int(-257), "18" + "feff" + "02"},
		{Int(-258), "18" + "fefe" + "02"},
		{Int(-256), "19" + "00" + "02"},
		{Int(-1), "19" + "ff" + "02"},
		{Float(-0.5), "1a" + "01" + "401fffffffffffff"},
		{Int(0), "1a02"},
		{Float(0), "1a03"},
		{Float(math.Copysign(0, -1)), "1a03"},
		{Float(0.5), "1a" + "04" + "3fe0000000000000"},
		{Int(1), "1b0102"},
		{Float(1), "1b0103"},
		{Float(1.5), "1b01" + "04" + "3fe0000000000000"},
		{Int(255), "1bff02"},
		{Int(256), "1c010002"},
		{Int(math.MaxInt64), "22" + "7fffffffffffffff" + "02"},
		{Float(0x1p63), "23" + "43e0000000000000"},
		{Text(""), "30" + "0001"},
		{Text("a\x00b"), "30" + "6100ff62" + "0001"},
		{Bytes([]byte{0, 0}), "40" + "00ff00ff" + "0001"},
		{Vector([]float32{1, float32(math.NaN()), -1}), "50" + "01bf800000" + "0100000000" + "01407fffff" + "00"},
		{Array(Null(), Int(0)), "60" + "02" + "1a02" + "00"},
		{Map(fld("a", Null())), "70" + "30610001" + "02" + "00"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(AppendKey(nil, tt.v)); got != tt.want {
			t.Errorf("AppendKey(%v) = %s, want %s", tt.v, got, tt.want)
		}
	}
	if got := AppendKey([]byte("p"), Null()); string(got) != "p\x02" {
		t.Errorf("AppendKey appends: %q", got)
	}
}

func TestDecodeKeyRest(t *testing.T) {
	t.Parallel()
	k := AppendKey(AppendKey(nil, Text("a\x00")), Int(7))
	k = append(k, "tail"...)
	v, rest, err := DecodeKey(k)
	if err != nil || !Equal(v, Text("a\x00")) {
		t.Fatalf("DecodeKey = %v, %v", v, err)
	}
	v, rest, err = DecodeKey(rest)
	if err != nil || !Equal(v, Int(7)) || string(rest) != "tail" {
		t.Fatalf("DecodeKey = %v, %q, %v", v, rest, err)
	}
	// A float equal to an int decodes to a float, and the int to an int.
	for _, n := range []Value{Int(3), Float(3), Int(math.MinInt64), Float(-0x1p63), Float(math.Copysign(0, -1))} {
		v, _, err := DecodeKey(AppendKey(nil, n))
		if err != nil || v.Kind() != n.Kind() || !Equal(v, n) {
			t.Errorf("DecodeKey(AppendKey(%v)) = %v (%v), %v", n, v, v.Kind(), err)
		}
	}
}

func TestDecodeKeyErrors(t *testing.T) {
	t.Parallel()
	deep := Null()
	for range MaxDepth + 1 {
		deep = Array(deep)
	}
	tests := []struct {
		in     string
		kind   error
		path   string
		offset int
	}{
		{"", ErrCorrupt, "", 0},
		{"00", ErrCorrupt, "", 0},                                                  // an end marker alone
		{"ff", ErrCorrupt, "", 0},                                                  // unknown tag
		{"03", ErrCorrupt, "", 0},                                                  // unused tag
		{"11", ErrCorrupt, "", 1},                                                  // truncated float
		{"11" + "8000000000000000", ErrCorrupt, "", 0},                             // float low not below -2^63
		{"11" + "0007ffffffffffff", ErrCorrupt, "", 0},                             // NaN under the low tag
		{"23" + "3ff0000000000000", ErrCorrupt, "", 0},                             // float high below 2^63
		{"1b01", ErrCorrupt, "", 2},                                                // no number kind
		{"1b0109", ErrCorrupt, "", 2},                                              // unknown number kind
		{"1b0002", ErrCorrupt, "", 0},                                              // a positive not written shortest
		{"18ff0002", ErrCorrupt, "", 0},                                            // a negative not written shortest
		{"1a01", ErrCorrupt, "", 2},                                                // truncated fraction
		{"22" + "7fffffffffffffff" + "03", ErrCorrupt, "", 0},                      // MaxInt64 is no float
		{"1b01" + "04" + "3ff0000000000000", ErrCorrupt, "", 0},                    // fraction 1
		{"1b01" + "04" + "0000000000000000", ErrCorrupt, "", 0},                    // fraction 0
		{"1b01" + "01" + "401fffffffffffff", ErrCorrupt, "", 0},                    // 1 - 0.5 has integer part 0
		{"1a" + "04" + "7ff8000000000000", ErrCorrupt, "", 0},                      // NaN fraction
		{"22" + "0020000000000001" + "04" + "3fe0000000000000", ErrCorrupt, "", 0}, // 2^53+1.5 is no float
		{"3061", ErrCorrupt, "", 1},                                                // unterminated text
		{"306100", ErrCorrupt, "", 1},                                              // unterminated text
		{"30610002", ErrCorrupt, "", 2},                                            // 0x00 neither escape nor end
		{"50", ErrCorrupt, "", 1},                                                  // truncated vector
		{"5002", ErrCorrupt, "", 1},                                                // a component without its marker
		{"5001bf80", ErrCorrupt, "", 2},                                            // truncated component
		{"50017fffffff00", ErrCorrupt, "", 2},                                      // -0
		{"50010000000100", ErrCorrupt, "", 2},                                      // a NaN other than the one written
		{"6002", ErrCorrupt, "/1", 2},                                              // unterminated array
		{"70" + "02", ErrCorrupt, "", 1},                                           // a map key that is not text
		{"70" + "30610001", ErrCorrupt, "/a", 5},
		{"70", ErrCorrupt, "", 1},
		{"70" + "3061000102" + "3061000102" + "00", ErrCorrupt, "", 0}, // a repeated key
		{hex.EncodeToString(AppendKey(nil, deep)), ErrTooDeep, strings.Repeat("/0", MaxDepth), MaxDepth},
	}
	for _, tt := range tests {
		b, err := hex.DecodeString(tt.in)
		if err != nil {
			t.Fatal(tt.in, err)
		}
		_, _, err = DecodeKey(b)
		var ve *ValueError
		if !errors.As(err, &ve) || !errors.Is(err, tt.kind) {
			t.Errorf("DecodeKey(%.40s) = %v, want a *ValueError of %v", tt.in, err, tt.kind)
			continue
		}
		if ve.Op != "DecodeKey" || ve.Path != tt.path || ve.Offset != tt.offset {
			t.Errorf("DecodeKey(%.40s): %v: path %q offset %d, want %q %d", tt.in, err, ve.Path, ve.Offset, tt.path, tt.offset)
		}
	}
	if _, _, err := DecodeKey(AppendKey(nil, deep.arr()[0])); err != nil {
		t.Errorf("DecodeKey of %d levels: %v", MaxDepth, err)
	}
}

// TestKeysSortAsValues sorts random values by key and checks the order
// against Compare.
func TestKeysSortAsValues(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	vals := make([]Value, 3000)
	for i := range vals {
		g := valueGen{b: randomBytes(rng, 32)}
		vals[i] = g.value(1)
	}
	keys := make([][]byte, len(vals))
	for i, v := range vals {
		keys[i] = AppendKey(nil, v)
	}
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	for i := 1; i < len(idx); i++ {
		if c := Compare(vals[idx[i-1]], vals[idx[i]]); c > 0 {
			t.Fatalf("key order puts %v before %v", vals[idx[i-1]], vals[idx[i]])
		}
	}
}

func BenchmarkAppendKey(b *testing.B) {
	vals := []Value{Int(123456), Float(98.5), Text("ada@example.com")}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for _, v := range vals {
			buf = AppendKey(buf, v)
		}
	}
}
