package docstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
)

// valueGen builds values from fuzz bytes (zeros once they run out), drawn
// from pools of edge cases so that random pairs often meet at an edge: ints
// and floats of equal value, neighbours of 2^53 and 2^63, NaN, ±0, ±Inf,
// text with 0x00 and prefixes of each other, maps that look like JSON
// wrappers.
type valueGen struct {
	b    []byte
	i    int
	json bool // only values with a JSON form (no NaN or Inf, UTF-8 text)
}

// randomBytes returns n bytes from rng, to feed a valueGen in tests.
func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func (g *valueGen) next() byte {
	if g.i >= len(g.b) {
		return 0
	}
	c := g.b[g.i]
	g.i++
	return c
}

func (g *valueGen) u64() uint64 {
	var u uint64
	for range 8 {
		u = u<<8 | uint64(g.next())
	}
	return u
}

var genInts = []int64{
	0, 1, -1, 2, 255, 256, -255, -256, -257, 65535, 65536, -65536, 1 << 31, -1 << 31,
	1 << 53, 1<<53 + 1, 1<<53 - 1, -1 << 53, -1<<53 - 1, 1 << 62,
	math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1, 1e15, -1e15, 123456789,
}

var genFloats = []float64{
	0.5, -0.5, 1.5, -1.5, 0.1, -0.1, 1e-7, 1e21, 1e300, -1e300, 5e-324, -5e-324,
	math.MaxFloat64, -math.MaxFloat64, 1 << 63, -1 << 63, math.Nextafter(1<<63, 0),
	math.Nextafter(-1<<63, math.Inf(-1)), math.Nextafter(1<<53, math.Inf(1)), 0x1p-60, -0x1p-60,
	math.Nextafter(1, 0), math.Nextafter(-1, 0), 3.4028235e38, 3.4028236e38, 1e39, 1e-46,
}

var genStrings = []string{"", "a", "ab", "a\x00", "a\x00b", "\x00", "\x00\x00", "a\x01", "b", "é", "日本", "$vector", "$bytes", "$map", "QQ==", "not base64", "~/", "\xff", "a\xff"}

func (g *valueGen) number() Value {
	switch g.next() % 6 {
	case 0:
		return Int(genInts[int(g.next())%len(genInts)])
	case 1:
		return Int(int64(g.u64()))
	case 2: // a float equal to, or next to, a pool int
		f := float64(genInts[int(g.next())%len(genInts)])
		switch g.next() % 3 {
		case 1:
			f = math.Nextafter(f, math.Inf(1))
		case 2:
			f = math.Nextafter(f, math.Inf(-1))
		}
		return Float(f)
	case 3:
		return Float(genFloats[int(g.next())%len(genFloats)])
	case 4:
		if !g.json {
			return Float([]float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), math.Float64frombits(0xfff8000000000001)}[g.next()%5])
		}
		return Float(math.Copysign(0, -1))
	}
	f := math.Float64frombits(g.u64())
	if g.json && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return Float(0.25)
	}
	return Float(f)
}

func (g *valueGen) text() string {
	s := genStrings[int(g.next())%len(genStrings)]
	if g.json && !utf8.ValidString(s) {
		return "z"
	}
	return s
}

func (g *valueGen) value(depth int) Value {
	kinds := byte(9)
	if depth >= 3 {
		kinds = 6 // scalars, bytes, vectors
	}
	switch g.next() % kinds {
	case 0:
		return Null()
	case 1:
		return Bool(g.next()%2 == 1)
	case 2:
		return g.number()
	case 3:
		return Text(g.text())
	case 4:
		return Bytes([]byte(g.text()))
	case 5:
		vec := make([]float32, g.next()%4)
		for i := range vec {
			vec[i] = []float32{0, 1, -1, 0.1, float32(math.Copysign(0, -1)), 3.4028235e38, 1e-45, float32(math.NaN()), float32(math.Inf(-1))}[g.next()%9]
			if g.json && (vec[i] != vec[i] || math.IsInf(float64(vec[i]), 0)) {
				vec[i] = 2
			}
		}
		return Vector(vec)
	case 6:
		items := make([]Value, g.next()%4)
		for i := range items {
			items[i] = g.value(depth + 1)
		}
		return Array(items...)
	}
	n := int(g.next() % 4)
	fields := make([]Field, 0, n)
	for range n {
		fields = append(fields, Field{Key: g.text(), Value: g.value(depth + 1)})
	}
	return Map(fields...)
}

// identical reports whether a and b are the same value with maps in the
// same order. Strict: floats bit for bit (any NaN equals any NaN). Loose:
// floats by == (so -0 is +0), NaN equal to NaN, in vectors too.
func identical(a, b Value, strict bool) bool {
	if a.kind() != b.kind() {
		return false
	}
	sameFloat := func(x, y float64) bool {
		if x != x || y != y {
			return x != x && y != y
		}
		return x == y && (!strict || math.Float64bits(x) == math.Float64bits(y))
	}
	switch a.kind() {
	case KindFloat:
		return sameFloat(math.Float64frombits(a.num), math.Float64frombits(b.num))
	case KindVector:
		if len(a.vec()) != len(b.vec()) {
			return false
		}
		for i := range a.vec() {
			if !sameFloat(float64(a.vec()[i]), float64(b.vec()[i])) {
				return false
			}
		}
		return true
	case KindArray:
		if len(a.arr()) != len(b.arr()) {
			return false
		}
		for i := range a.arr() {
			if !identical(a.arr()[i], b.arr()[i], strict) {
				return false
			}
		}
		return true
	case KindMap:
		if len(a.m()) != len(b.m()) {
			return false
		}
		for i := range a.m() {
			if a.m()[i].Key != b.m()[i].Key || !identical(a.m()[i].Value, b.m()[i].Value, strict) {
				return false
			}
		}
		return true
	}
	return Equal(a, b)
}

// hasVectorNaN reports whether a vector in v has a NaN component (Equal
// holds such a vector unequal to itself).
func hasVectorNaN(v Value) bool {
	switch v.kind() {
	case KindVector:
		for _, x := range v.vec() {
			if x != x {
				return true
			}
		}
	case KindArray:
		for _, x := range v.arr() {
			if hasVectorNaN(x) {
				return true
			}
		}
	case KindMap:
		for _, f := range v.m() {
			if hasVectorNaN(f.Value) {
				return true
			}
		}
	}
	return false
}

func sign(n int) int { return min(max(n, -1), 1) }

func checkKeyPair(t *testing.T, a1, a2, b1, b2 Value) {
	t.Helper()
	ka1, ka2, kb1, kb2 := AppendKey(nil, a1), AppendKey(nil, a2), AppendKey(nil, b1), AppendKey(nil, b2)
	c := Compare(a1, b1)
	if got := sign(bytes.Compare(ka1, kb1)); got != sign(c) {
		t.Fatalf("keys of %v and %v compare %d, values %d\n%x\n%x", a1, b1, got, c, ka1, kb1)
	}
	if c != 0 && (bytes.HasPrefix(ka1, kb1) || bytes.HasPrefix(kb1, ka1)) {
		t.Fatalf("key of %v or %v is a prefix of the other:\n%x\n%x", a1, b1, ka1, kb1)
	}
	tuple := c
	if tuple == 0 {
		tuple = Compare(a2, b2)
	}
	ta, tb := append(bytes.Clone(ka1), ka2...), append(bytes.Clone(kb1), kb2...)
	if got := sign(bytes.Compare(ta, tb)); got != sign(tuple) {
		t.Fatalf("tuples (%v, %v) and (%v, %v) compare %d as keys, %d as values", a1, a2, b1, b2, got, tuple)
	}
	for _, p := range [][2]Value{{a1, a2}, {b1, b2}} {
		k := append(AppendKey(nil, p[0]), AppendKey(nil, p[1])...)
		v1, rest, err := DecodeKey(k)
		if err != nil {
			t.Fatalf("DecodeKey(%x) of %v: %v", k, p[0], err)
		}
		v2, rest, err := DecodeKey(rest)
		if err != nil || len(rest) != 0 {
			t.Fatalf("DecodeKey of the second key of (%v, %v): %v, rest %x", p[0], p[1], err, rest)
		}
		for i, v := range []Value{v1, v2} {
			want := p[i]
			if !identical(v, want, false) || !hasVectorNaN(want) && !Equal(v, want) {
				t.Fatalf("DecodeKey(AppendKey(%v)) = %v", want, v)
			}
			if again := AppendKey(nil, v); !bytes.Equal(again, AppendKey(nil, want)) {
				t.Fatalf("the key of %v decodes to %v, whose key differs:\n%x\n%x", want, v, AppendKey(nil, want), again)
			}
		}
	}
}

func FuzzKeyOrder(f *testing.F) {
	f.Add([]byte{2, 0, 0, 2, 2, 0, 0})                         // int 0 vs float 0
	f.Add([]byte{2, 0, 15, 2, 2, 15, 1})                       // 2^53 int vs float 2^53+1
	f.Add([]byte{2, 0, 21, 2, 3, 12})                          // MaxInt64 vs 2^63
	f.Add([]byte{3, 3, 3, 4})                                  // "a\x00" vs "a"
	f.Add([]byte{2, 4, 0, 2, 5, 0xff, 0xf8, 0, 0, 0, 0, 0, 1}) // two NaNs
	f.Add([]byte{5, 2, 7, 0, 5, 2, 0, 7})                      // vectors with NaN
	f.Add([]byte{7, 2, 3, 11, 2, 0, 1, 7, 1, 3, 11, 2, 0, 1})  // maps
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add(randomBytes(rng, 64))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := valueGen{b: data}
		a1, b1, a2, b2 := g.value(0), g.value(0), g.value(0), g.value(0)
		checkKeyPair(t, a1, a2, b1, b2)
	})
}

func FuzzFromJSON(f *testing.F) {
	for _, s := range []string{
		`null`, `{"a":[1,2.5,"x",{"$vector":[1,2]},{"$bytes":"QQ=="}],"b":{"$map":{"$vector":[1]}}}`,
		`{"$vector":[1,"x"]}`, `{"$bytes":"!"}`, `[1e400]`, `"\ud800"`, `{"a":1,"a":2}`, `-0`, `1E+2`,
		`{"$map":{"$map":{"$map":{}}},"x":1}`, `18446744073709551615`, "[\"\xff\"]", `{"$vector":[1e39]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := FromJSON(data)
		valid := json.Valid(data) && utf8.Valid(data) && jsonscan.Depth(data) <= MaxDepth
		if err != nil {
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("FromJSON(%q): %T %v, not a *ValueError", data, err, err)
			}
			if valid && !(errors.Is(err, ErrBadJSON) && strings.Contains(err.Error(), "beyond float64")) {
				t.Fatalf("FromJSON(%q) refuses valid JSON: %v", data, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("FromJSON(%q) accepts invalid JSON", data)
		}
		out, err := ToJSON(v)
		if err != nil {
			t.Fatalf("ToJSON(FromJSON(%q)): %v", data, err)
		}
		back, err := FromJSON(out)
		if err != nil || !identical(back, v, true) {
			t.Fatalf("FromJSON(%q) = %v, written %s, read back %v, %v", data, v, out, back, err)
		}
		if again, _ := ToJSON(back); !bytes.Equal(again, out) {
			t.Fatalf("ToJSON is not stable: %s then %s", out, again)
		}
	})
}

func FuzzDecodeValue(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		g := valueGen{b: randomBytes(rng, 48)}
		f.Add(AppendValue(nil, g.value(0)))
	}
	f.Add([]byte{1, 0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // a huge array
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeValue(data)
		if err != nil {
			var ve *ValueError
			if !errors.As(err, &ve) || !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooDeep) {
				t.Fatalf("DecodeValue(%x): %v", data, err)
			}
			return
		}
		enc := AppendValue(nil, v)
		back, err := DecodeValue(enc)
		if err != nil || !identical(back, v, true) {
			t.Fatalf("DecodeValue(%x) = %v; re-encoded %x reads %v, %v", data, v, enc, back, err)
		}
	})
}
