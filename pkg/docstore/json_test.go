package docstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
)

func fld(k string, v Value) Field { return Field{Key: k, Value: v} }

func TestFromJSON(t *testing.T) {
	t.Parallel()
	negZero := math.Copysign(0, -1)
	tests := []struct {
		in   string
		want Value
	}{
		// scalars; the int/float distinction is the literal's
		{`null`, Null()},
		{` true `, Bool(true)},
		{"\t\r\nfalse\n", Bool(false)},
		{`0`, Int(0)},
		{`-0`, Int(0)},
		{`-0.0`, Float(negZero)},
		{`42`, Int(42)},
		{`-42`, Int(-42)},
		{`1.0`, Float(1)},
		{`1e2`, Float(100)},
		{`1E+2`, Float(100)},
		{`-1.5e-3`, Float(-0.0015)},
		{`1e-400`, Float(0)},
		{`123456789012345678`, Int(123456789012345678)},
		{`9223372036854775807`, Int(math.MaxInt64)},
		{`-9223372036854775808`, Int(math.MinInt64)},
		{`9223372036854775808`, Float(9223372036854775808)},
		{`-9223372036854775809`, Float(-9223372036854775808)},
		{`18446744073709551615`, Float(18446744073709551615)},
		{`0.30000000000000004`, Float(0.30000000000000004)},
		// strings
		{`""`, Text("")},
		{`"héllo 日本"`, Text("héllo 日本")},
		{`"a\"b\\c\/d\b\f\n\r\t"`, Text("a\"b\\c/d\b\f\n\r\t")},
		{`"\u0041\u00e9\u65e5"`, Text("Aé日")},
		{`"\ud83d\ude00"`, Text("😀")},
		{`"\ud800"`, Text("\ufffd")},
		{`"\ud800x"`, Text("\ufffdx")},
		{`"\ude00\ud83d"`, Text("\ufffd\ufffd")},
		{`"\u0000"`, Text("\x00")},
		// arrays and maps, in order
		{`[]`, Array()},
		{`[1, "a", [null]]`, Array(Int(1), Text("a"), Array(Null()))},
		{`{}`, Map()},
		{`{"b":1,"a":2,"c":3}`, Map(fld("b", Int(1)), fld("a", Int(2)), fld("c", Int(3)))},
		{`{"a":1,"b":2,"a":3}`, Map(fld("a", Int(3)), fld("b", Int(2)))},
		{`{"":null}`, Map(fld("", Null()))},
		// wrappers
		{`{"$vector":[1,2.5,-3e2,0]}`, Vector([]float32{1, 2.5, -300, 0})},
		{`{"$vector":[]}`, Vector(nil)},
		{` { "$vector" : [ 0.1 , 1 ] } `, Vector([]float32{0.1, 1})},
		{`{"$vector":[16777217]}`, Vector([]float32{16777216})},
		{`{"$vector":[3.4028235e38, 1e-46]}`, Vector([]float32{math.MaxFloat32, 0})},
		{`{"$vector":[18446744073709551615]}`, Vector([]float32{18446744073709551615})},
		{`{"$bytes":"AAEC/w=="}`, Bytes([]byte{0, 1, 2, 0xff})},
		{`{"$bytes":""}`, Bytes(nil)},
		{`{"$bytes":"QQ\u003d\u003d"}`, Bytes([]byte("A"))},
		{`{"$map":{"$vector":[1]}}`, Map(fld("$vector", Array(Int(1))))},
		{`{"$map":{"$bytes":"QQ=="}}`, Map(fld("$bytes", Text("QQ==")))},
		{`{"$map":{"$map":{"a":1}}}`, Map(fld("$map", Map(fld("a", Int(1)))))},
		{`{"$map":{"a":{"$bytes":"QQ=="},"b":{"$map":{"$map":{}}}}}`,
			Map(fld("a", Bytes([]byte("A"))), fld("b", Map(fld("$map", Map()))))},
		{`{"$map":{}}`, Map()},
		{`{"$map":{"a":1,"a":2}}`, Map(fld("a", Int(2)))},
		// wrappers nest anywhere
		{`[{"$vector":[1]},{"x":{"$bytes":"QQ=="}}]`, Array(Vector([]float32{1}), Map(fld("x", Bytes([]byte("A")))))},
		// malformed wrappers are maps
		{`{"$vector":[1,"x"]}`, Map(fld("$vector", Array(Int(1), Text("x"))))},
		{`{"$vector":[1,[2]]}`, Map(fld("$vector", Array(Int(1), Array(Int(2)))))},
		{`{"$vector":[1e39]}`, Map(fld("$vector", Array(Float(1e39))))},
		{`{"$vector":[-1e39]}`, Map(fld("$vector", Array(Float(-1e39))))},
		{`{"$vector":5}`, Map(fld("$vector", Int(5)))},
		{`{"$vector":[1],"x":2}`, Map(fld("$vector", Array(Int(1))), fld("x", Int(2)))},
		{`{"x":2,"$vector":[1]}`, Map(fld("x", Int(2)), fld("$vector", Array(Int(1))))},
		{`{"$vector":[1],"$vector":[2]}`, Map(fld("$vector", Array(Int(2))))},
		{`{"$bytes":"Q"}`, Map(fld("$bytes", Text("Q")))},
		{`{"$bytes":"!!!!"}`, Map(fld("$bytes", Text("!!!!")))},
		{`{"$bytes":"QQ"}`, Map(fld("$bytes", Text("QQ")))},
		{`{"$bytes":1}`, Map(fld("$bytes", Int(1)))},
		{`{"$bytes":"QQ==","n":1}`, Map(fld("$bytes", Text("QQ==")), fld("n", Int(1)))},
		{`{"$map":5}`, Map(fld("$map", Int(5)))},
		{`{"$map":{"a":1},"b":2}`, Map(fld("$map", Map(fld("a", Int(1)))), fld("b", Int(2)))},
		{`{"$map":{"$vector":[1]},"b":2}`, Map(fld("$map", Vector([]float32{1})), fld("b", Int(2)))},
		{`{"$map":{"s":"}"},"b":"{"}`, Map(fld("$map", Map(fld("s", Text("}")))), fld("b", Text("{")))},
		{`{"$Vector":[1]}`, Map(fld("$Vector", Array(Int(1))))},
	}
	for _, tt := range tests {
		got, err := FromJSON([]byte(tt.in))
		if err != nil {
			t.Errorf("FromJSON(%s): %v", tt.in, err)
			continue
		}
		if !identical(got, tt.want, true) {
			t.Errorf("FromJSON(%s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// deepJSON nests n arrays around a value.
func deepJSON(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

func TestFromJSONErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		kind   error
		path   string
		offset int
	}{
		{``, ErrBadJSON, "", 0},
		{`  `, ErrBadJSON, "", 2},
		{`nul`, ErrBadJSON, "", 0},
		{`True`, ErrBadJSON, "", 0},
		{`NaN`, ErrBadJSON, "", 0},
		{`1 2`, ErrBadJSON, "", 2},
		{`01`, ErrBadJSON, "", 1},
		{`+1`, ErrBadJSON, "", 0},
		{`1.`, ErrBadJSON, "", 2},
		{`.5`, ErrBadJSON, "", 0},
		{`-`, ErrBadJSON, "", 1},
		{`1e`, ErrBadJSON, "", 2},
		{`1e+`, ErrBadJSON, "", 3},
		{`1e400`, ErrBadJSON, "", 0},
		{`-1e400`, ErrBadJSON, "", 0},
		{`"abc`, ErrBadJSON, "", 0},
		{"\"a\tb\"", ErrBadJSON, "", 2},
		{"\"\xff\"", ErrBadJSON, "", 0},
		{`"\x"`, ErrBadJSON, "", 1},
		{`"\u12"`, ErrBadJSON, "", 1},
		{`"\u12G4"`, ErrBadJSON, "", 1},
		{`[1,]`, ErrBadJSON, "/1", 3},
		{`[1 2]`, ErrBadJSON, "", 3},
		{`[1`, ErrBadJSON, "", 2},
		{`{"a":1,}`, ErrBadJSON, "", 7},
		{`{"a" 1}`, ErrBadJSON, "", 5},
		{`{a:1}`, ErrBadJSON, "", 1},
		{`{"a":}`, ErrBadJSON, "/a", 5},
		{`{"a":1`, ErrBadJSON, "", 6},
		{`{"a":[0,1,2,nope]}`, ErrBadJSON, "/a/3", 12},
		{`{"a/b":{"c~d":[1e999]}}`, ErrBadJSON, "/a~1b/c~0d/0", 15},
		{`{"$vector":[1,}`, ErrBadJSON, "/$vector/1", 14},
		{`{"$map":{"a":x}}`, ErrBadJSON, "/$map/a", 13},
		{`{"$map":{"a":1}`, ErrBadJSON, "", 15},
		{`{"$map":{"a":1}]`, ErrBadJSON, "", 15},
		{`{"$bytes":"\q"}`, ErrBadJSON, "/$bytes", 11},
		{deepJSON(MaxDepth+1, "1"), ErrTooDeep, "/0" + strings.Repeat("/0", MaxDepth-1), MaxDepth},
		{deepJSON(MaxDepth, "{}"), ErrTooDeep, strings.Repeat("/0", MaxDepth), MaxDepth},
		{deepJSON(MaxDepth, `{"$map":{}}`), ErrTooDeep, strings.Repeat("/0", MaxDepth) + "/$map", MaxDepth + 8},
		{deepJSON(MaxDepth, `{"a":1}`), ErrTooDeep, strings.Repeat("/0", MaxDepth), MaxDepth},
		{deepJSON(1<<20, ""), ErrTooDeep, strings.Repeat("/0", MaxDepth), MaxDepth},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		_, err := FromJSON([]byte(tt.in))
		var ve *ValueError
		if !errors.As(err, &ve) || !errors.Is(err, tt.kind) {
			t.Errorf("FromJSON(%s) = %v, want a *ValueError of %v", name, err, tt.kind)
			continue
		}
		if ve.Op != "FromJSON" || ve.Path != tt.path || ve.Offset != tt.offset {
			t.Errorf("FromJSON(%s): %v: op %q path %q offset %d, want path %q offset %d", name, err, ve.Op, ve.Path, ve.Offset, tt.path, tt.offset)
		}
	}
}

func TestFromJSONDepthLimit(t *testing.T) {
	t.Parallel()
	// MaxDepth levels of arrays and maps are accepted; wrappers nest no level.
	for _, in := range []string{
		deepJSON(MaxDepth, "1"),
		deepJSON(MaxDepth-1, "{}"),
		deepJSON(MaxDepth, `{"$vector":[1]}`),
		deepJSON(MaxDepth, `{"$bytes":"QQ=="}`),
		deepJSON(MaxDepth-1, `{"$map":{"$map":1}}`),
	} {
		v, err := FromJSON([]byte(in))
		if err != nil {
			t.Fatalf("FromJSON(%.30s...): %v", in, err)
		}
		out, err := ToJSON(v)
		if err != nil || string(out) != in {
			t.Fatalf("ToJSON(FromJSON(%.30s...)) = %.30s..., %v", in, out, err)
		}
	}
}

// TestFromJSONNestedMapWrappers checks that nested $map wrappers whose
// outer objects continue cost time linear in the input: reading each level
// twice would take 2^n steps for n levels.
func TestFromJSONNestedMapWrappers(t *testing.T) {
	t.Parallel()
	const n = 200
	in := strings.Repeat(`{"$map":`, n) + "{}" + strings.Repeat(`,"x":1}`, n)
	v, err := FromJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		f, ok := v.Fields()
		if !ok || len(f) != 2 || f[0].Key != "$map" || f[1].Key != "x" {
			t.Fatalf("level is %v", v)
		}
		v = f[0].Value
	}
	// Error inside the deepest of many $map wrappers: reported once, with
	// its path.
	bad := strings.Repeat(`{"$map":{"a":`, n) + "x" + strings.Repeat(`}}`, n)
	_, err = FromJSON([]byte(bad))
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Path != strings.Repeat("/$map/a", n) {
		t.Fatalf("FromJSON(bad) = %v", err)
	}
}

// TestObjectEndMemo checks that one look ahead records the end of every
// object in its span, those left open too, so that nested $map objects are
// never scanned twice.
func TestObjectEndMemo(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"$map":{"a":"{\"}","$map":{"$map":{}}},"b":{}}`,
		strings.Repeat(`{"$map":`, 50) + strings.Repeat(" ", 1000), // left open
	} {
		p := jsonParser{b: []byte(in)}
		first := p.objectEnd(0)
		for i := range len(in) {
			if in[i] != '{' || inString(in, i) {
				continue
			}
			e, ok := p.ends[i]
			if !ok {
				t.Fatalf("%s: no end recorded for the object at %d", in, i)
			}
			if want := jsonscan.SkipValue([]byte(in), i); e != want {
				t.Fatalf("%s: end of the object at %d is %d, want %d", in, i, e, want)
			}
		}
		if first != p.ends[0] {
			t.Fatalf("objectEnd(0) = %d, recorded %d", first, p.ends[0])
		}
	}
}

// inString reports whether s[i] is inside a JSON string.
func inString(s string, i int) bool {
	in := false
	for j := 0; j < i; j++ {
		switch {
		case in && s[j] == '\\':
			j++
		case s[j] == '"':
			in = !in
		}
	}
	return in
}

func TestToJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    Value
		want string
	}{
		{Null(), `null`},
		{Bool(true), `true`},
		{Bool(false), `false`},
		{Int(0), `0`},
		{Int(math.MinInt64), `-9223372036854775808`},
		{Float(1), `1.0`},
		{Float(-1), `-1.0`},
		{Float(0), `0.0`},
		{Float(math.Copysign(0, -1)), `-0.0`},
		{Float(1e21), `1e+21`},
		{Float(1e20), `100000000000000000000.0`},
		{Float(123456789), `123456789.0`},
		{Float(0.1), `0.1`},
		{Float(1e-6), `0.000001`},
		{Float(1e-7), `1e-7`},
		{Float(-2.5e-10), `-2.5e-10`},
		{Float(1.5e300), `1.5e+300`},
		{Float(5e-324), `5e-324`},
		{Float(18446744073709551615), `18446744073709552000.0`},
		{Text(""), `""`},
		{Text("a\"b\\c/\n\r\t\x00\x1f\x7f é"), `"a\"b\\c/\n\r\t\u0000\u001f` + "\x7f é\""},
		{Text("\u2028"), "\"\u2028\""},
		{Bytes([]byte{0, 1, 2, 0xff}), `{"$bytes":"AAEC/w=="}`},
		{Bytes(nil), `{"$bytes":""}`},
		{Vector([]float32{0.1, 1, -2.5, 1e-7, 3.4028235e38}), `{"$vector":[0.1,1,-2.5,1e-7,3.4028235e+38]}`},
		{Vector(nil), `{"$vector":[]}`},
		{Array(), `[]`},
		{Array(Int(1), Array(Null()), Map()), `[1,[null],{}]`},
		{Map(fld("b", Int(1)), fld("a", Float(2))), `{"b":1,"a":2.0}`},
		// maps that would read back as a wrapper are escaped
		{Map(fld("$vector", Array(Int(1), Float(2)))), `{"$map":{"$vector":[1,2.0]}}`},
		{Map(fld("$bytes", Text("QQ=="))), `{"$map":{"$bytes":"QQ=="}}`},
		{Map(fld("$map", Map(fld("a", Int(1))))), `{"$map":{"$map":{"a":1}}}`},
		{Map(fld("$map", Int(1))), `{"$map":{"$map":1}}`},
		{Map(fld("$vector", Text("x"))), `{"$map":{"$vector":"x"}}`},
		{Map(fld("$vector", Int(1)), fld("b", Int(2))), `{"$vector":1,"b":2}`},
		{Map(fld("$Vector", Int(1))), `{"$Vector":1}`},
		{Array(Map(fld("$bytes", Bytes([]byte("A"))))), `[{"$map":{"$bytes":{"$bytes":"QQ=="}}}]`},
	}
	for _, tt := range tests {
		got, err := ToJSON(tt.v)
		if err != nil || string(got) != tt.want {
			t.Errorf("ToJSON(%v) = %s, %v; want %s", tt.v, got, err, tt.want)
			continue
		}
		if !json.Valid(got) {
			t.Errorf("ToJSON(%v) = %s: not valid JSON", tt.v, got)
		}
		back, err := FromJSON(got)
		if err != nil || !identical(back, tt.v, true) {
			t.Errorf("FromJSON(%s) = %v, %v; want %v", got, back, err, tt.v)
		}
	}
}

func TestToJSONErrors(t *testing.T) {
	t.Parallel()
	deep := Int(1)
	for range MaxDepth + 1 {
		deep = Array(deep)
	}
	deepMap := Map(fld("$map", Int(1)))
	for range MaxDepth {
		deepMap = Array(deepMap)
	}
	tests := []struct {
		v    Value
		kind error
		path string
	}{
		{Float(math.NaN()), ErrNoJSONForm, ""},
		{Float(math.Inf(1)), ErrNoJSONForm, ""},
		{Map(fld("a", Array(Int(0), Int(1), Int(2), Float(math.Inf(-1))))), ErrNoJSONForm, "/a/3"},
		{Map(fld("v", Vector([]float32{1, float32(math.NaN())}))), ErrNoJSONForm, "/v/1"},
		{Array(Vector([]float32{float32(math.Inf(1))})), ErrNoJSONForm, "/0/0"},
		{Text("a\xffb"), ErrNoJSONForm, ""},
		{Map(fld("k\xff", Int(1))), ErrNoJSONForm, "/k\xff"},
		{Map(fld("a/b~", Text("\xc3"))), ErrNoJSONForm, "/a~1b~0"},
		{Map(fld("$vector", Array(Float(math.NaN())))), ErrNoJSONForm, "/$vector/0"},
		{deep, ErrTooDeep, strings.Repeat("/0", MaxDepth)},
		{deepMap, ErrTooDeep, strings.Repeat("/0", MaxDepth)},
	}
	for _, tt := range tests {
		dst := []byte("prefix")
		got, err := AppendJSON(dst, tt.v)
		var ve *ValueError
		if !errors.As(err, &ve) || !errors.Is(err, tt.kind) || ve.Op != "ToJSON" || ve.Path != tt.path || ve.Offset != -1 {
			t.Errorf("ToJSON(%.40v) = %v, want a *ValueError of %v at %q", tt.v, err, tt.kind, tt.path)
			continue
		}
		if string(got) != "prefix" {
			t.Errorf("AppendJSON on error returned %q, want the prefix alone", got)
		}
	}
	if err := (&ValueError{Op: "ToJSON", Path: "/a/3", Offset: -1, Err: ErrNoJSONForm}); err.Error() != "docstore: ToJSON at /a/3: no JSON form" {
		t.Errorf("message %q", err.Error())
	}
}

func TestAppendJSON(t *testing.T) {
	t.Parallel()
	got, err := AppendJSON([]byte("x="), Map(fld("a", Int(1))))
	if err != nil || string(got) != `x={"a":1}` {
		t.Fatalf("AppendJSON = %q, %v", got, err)
	}
}

// TestJSONRoundTrip checks FromJSON(ToJSON(v)) for random values: Equal,
// maps in order, floats bit for bit.
func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		g := valueGen{b: randomBytes(rng, 64), json: true}
		v := g.value(0)
		out, err := ToJSON(v)
		if err != nil {
			t.Fatalf("ToJSON(%v): %v", v, err)
		}
		back, err := FromJSON(out)
		if err != nil || !Equal(back, v) || !identical(back, v, true) {
			t.Fatalf("ToJSON(%v) = %s, which reads back as %v, %v", v, out, back, err)
		}
	}
}

// TestFloatTextRoundTrip checks that every float's JSON text reads back to
// its bits, and as a float, over random bit patterns.
func TestFloatTextRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		out, err := ToJSON(Float(f))
		if err != nil {
			t.Fatal(err)
		}
		back, err := FromJSON(out)
		if g, ok := back.Float(); err != nil || !ok || math.Float64bits(g) != math.Float64bits(f) {
			t.Fatalf("%v: %s reads back as %v, %v", f, out, back, err)
		}
		x := math.Float32frombits(rng.Uint32())
		if x != x || math.IsInf(float64(x), 0) {
			continue
		}
		out, _ = ToJSON(Vector([]float32{x}))
		back, err = FromJSON(out)
		if vec, ok := back.Vector(); err != nil || !ok || math.Float32bits(vec[0]) != math.Float32bits(x) {
			t.Fatalf("%v: %s reads back as %v, %v", x, out, back, err)
		}
	}
}

// benchDocJSON is a 10-field document: the shape of a typical stored record.
const benchDocJSON = `{"id":12345,"name":"Ada Lovelace","email":"ada@example.com","age":36,"score":98.5,` +
	`"active":true,"tags":["math","poetry","engines"],"address":{"city":"London","zip":"W1"},` +
	`"created":"2024-01-02T03:04:05Z","embedding":{"$vector":[0.12,-0.5,0.33,0.9,-0.01,0.25,0.75,-0.66]}}`

func BenchmarkFromJSON(b *testing.B) {
	data := []byte(benchDocJSON)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingJSONAny is the reference: encoding/json into any, with
// numbers kept as text (no order, no wrappers).
func BenchmarkEncodingJSONAny(b *testing.B) {
	data := []byte(benchDocJSON)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToJSON(b *testing.B) {
	v, err := FromJSON([]byte(benchDocJSON))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		if buf, err = AppendJSON(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}
