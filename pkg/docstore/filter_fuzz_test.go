package docstore

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fuzzWords are the strings a fuzzed value draws from most often: field
// paths, every operator, and mistakes.
var fuzzWords = []string{
	"a", "b", "c", "a.b", "a.c", "b.a", "tags", "x", "", "a..b", "a.$b", "a/b~c",
	"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains", "$not",
	"$and", "$or", "$bogus", "$vector", "$bytes",
}

// Value tags of the fuzz encoding (see fuzzDecoder.filterValue).
const (
	tagNull = iota
	tagBool
	tagSmallInt
	tagInt
	tagSmallFloat
	tagFloat
	tagWord
	tagText
	tagBytes
	tagVector
	tagArray
	tagMap
	numTags
)

// fuzzMaxItems bounds the items of an array or map, and fuzzMaxLen the
// length of text, bytes and vectors, in the fuzz encoding.
const fuzzMaxItems, fuzzMaxLen = 8, 64

// fuzzDecoder turns any bytes into a filter-like Value (running out of
// bytes reads zeros, so decoding always ends); its valueGen makes the
// documents and extra values from the bytes left.
type fuzzDecoder struct{ valueGen }

func (d *fuzzDecoder) take(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = d.next()
	}
	return out
}

func (d *fuzzDecoder) literal() string {
	return string(d.take(int(d.next()) % fuzzMaxLen))
}

func (d *fuzzDecoder) key() string {
	if d.next()%2 == 0 {
		return fuzzWords[int(d.next())%len(fuzzWords)]
	}
	return d.literal()
}

func (d *fuzzDecoder) filterValue() Value {
	switch d.next() % numTags {
	case tagBool:
		return Bool(d.next()%2 == 1)
	case tagSmallInt:
		return Int(int64(int8(d.next())))
	case tagInt:
		return Int(int64(d.u64()))
	case tagSmallFloat:
		return Float(float64(int8(d.next())))
	case tagFloat:
		return Float(math.Float64frombits(d.u64()))
	case tagWord:
		return Text(fuzzWords[int(d.next())%len(fuzzWords)])
	case tagText:
		return Text(d.literal())
	case tagBytes:
		return Bytes([]byte(d.literal()))
	case tagVector:
		v := make([]float32, int(d.next())%fuzzMaxLen)
		for i := range v {
			v[i] = float32(int8(d.next()))
		}
		return Vector(v)
	case tagArray:
		items := make([]Value, int(d.next())%fuzzMaxItems)
		for i := range items {
			items[i] = d.filterValue()
		}
		return Array(items...)
	case tagMap:
		fields := make([]Field, int(d.next())%fuzzMaxItems)
		for i := range fields {
			fields[i].Key = d.key()
			fields[i].Value = d.filterValue()
		}
		return Map(fields...)
	}
	return Null()
}

// fuzzEncode returns the bytes fuzzDecoder decodes to v, for the seed
// corpus; v must fit the encoding.
func fuzzEncode(t testing.TB, v Value) []byte {
	t.Helper()
	var out []byte
	text := func(s string) {
		if len(s) >= fuzzMaxLen {
			t.Fatalf("fuzzEncode: %q is too long", s)
		}
		out = append(append(out, byte(len(s))), s...)
	}
	count := func(n int) byte {
		if n >= fuzzMaxItems {
			t.Fatalf("fuzzEncode: %d items", n)
		}
		return byte(n)
	}
	switch v.Kind() {
	case KindNull:
		out = append(out, tagNull)
	case KindBool:
		b, _ := v.Bool()
		out = append(out, tagBool, map[bool]byte{false: 0, true: 1}[b])
	case KindInt:
		i, _ := v.Int()
		if i == int64(int8(i)) {
			out = append(out, tagSmallInt, byte(int8(i)))
		} else {
			out = binary.BigEndian.AppendUint64(append(out, tagInt), uint64(i))
		}
	case KindFloat:
		f, _ := v.Float()
		if f == float64(int8(f)) && (f != 0 || !math.Signbit(f)) { // not -0
			out = append(out, tagSmallFloat, byte(int8(f)))
		} else {
			out = binary.BigEndian.AppendUint64(append(out, tagFloat), math.Float64bits(f))
		}
	case KindText:
		s, _ := v.Text()
		if i := slices.Index(fuzzWords, s); i >= 0 {
			out = append(out, tagWord, byte(i))
		} else {
			out = append(out, tagText)
			text(s)
		}
	case KindBytes:
		b, _ := v.Bytes()
		out = append(out, tagBytes)
		text(string(b))
	case KindVector:
		vec, _ := v.Vector()
		out = append(out, tagVector, byte(len(vec)))
		for _, x := range vec {
			if x != float32(int8(x)) || len(vec) >= fuzzMaxLen {
				t.Fatalf("fuzzEncode: vector %v does not fit", vec)
			}
			out = append(out, byte(int8(x)))
		}
	case KindArray:
		items, _ := v.Array()
		out = append(out, tagArray, count(len(items)))
		for _, x := range items {
			out = append(out, fuzzEncode(t, x)...)
		}
	case KindMap:
		fields, _ := v.Fields()
		out = append(out, tagMap, count(len(fields)))
		for _, f := range fields {
			if i := slices.Index(fuzzWords, f.Key); i >= 0 {
				out = append(out, 0, byte(i))
			} else {
				out = append(out, 1)
				text(f.Key)
			}
			out = append(out, fuzzEncode(t, f.Value)...)
		}
	}
	return out
}

func TestFuzzEncodeRoundTrips(t *testing.T) {
	t.Parallel()
	for _, v := range fuzzSeeds() {
		d := fuzzDecoder{valueGen{b: fuzzEncode(t, v)}}
		if got := d.filterValue(); !Equal(got, v) || d.i != len(d.b) {
			t.Errorf("decode(encode(%s)) = %s with %d bytes left", show(v), show(got), len(d.b)-d.i)
		}
	}
}

// fuzzSeeds are filters worth starting from.
func fuzzSeeds() []Value {
	return []Value{
		obj(),
		obj("a", 1, "b", "x"),
		obj("a", obj("$gte", 1.5, "$lt", 9), "a.b", obj("$in", arr(1, "x", nil))),
		obj("tags", obj("$contains", "x"), "c", obj("$exists", false)),
		obj("$or", arr(obj("a", obj("$ne", nil)), obj("b", obj("$nin", arr(2.0, []byte("z")))))),
		obj("$and", arr(obj("a", obj("$gt", 1)), obj("a", obj("$gte", 1.0), "b", obj("$lte", "m")))),
		obj("$not", obj("a", obj("$not", obj("$eq", []float32{1, 2})))),
		obj("a", obj("$in", arr(1, 2, 3)), "$and", arr(obj("a", obj("$in", arr(3.0, 4))), obj("b", obj("$gt", true)))),
		obj("a", obj("$bogus", 1)),
		obj("$or", arr()),
		obj("a.b", obj("$eq", obj("$vector", "x"))),
		obj("a", obj("$gt", int64(1)<<53+1, "$lt", 1e300)),
		obj("a", obj("$lt", math.Inf(1), "$gt", math.Inf(-1))),
	}
}

// fuzzCandidates returns the values a fuzzed document's fields draw from:
// every value in filter v, numbers next to its numbers, and a few others.
func fuzzCandidates(v Value) []Value {
	out := []Value{Null(), Bool(true), Int(0), Text(""), Float(math.NaN())}
	var walk func(v Value)
	walk = func(v Value) {
		out = append(out, v)
		if i, ok := v.Int(); ok {
			out = append(out, Float(float64(i)), Int(i+1), Int(i-1))
		}
		if f, ok := v.Float(); ok {
			out = append(out, Int(int64(f)), Float(math.Nextafter(f, math.Inf(1))), Float(math.Nextafter(f, math.Inf(-1))))
		}
		if s, ok := v.Text(); ok && s != "" {
			out = append(out, Text(s[:len(s)-1]), Text(s+"z"), Text("<"+s+">"))
		}
		items, _ := v.Array()
		for _, x := range items {
			walk(x)
		}
		fields, _ := v.Fields()
		for _, f := range fields {
			walk(f.Value)
		}
	}
	walk(v)
	return out
}

// setPath returns map doc with the dotted path set to x, making (or
// replacing with) maps on the way.
func setPath(doc Value, path []string, x Value) Value {
	if len(path) > 1 {
		sub, _ := doc.Get(path[0])
		if sub.Kind() != KindMap {
			sub = Map()
		}
		x = setPath(sub, path[1:], x)
	}
	return doc.With(path[0], x)
}

// fuzzDoc returns a document with the filter's fields drawn from cands
// (or missing, or arrays of candidates).
func fuzzDoc(rng *rand.Rand, fields []string, cands []Value) Value {
	doc := Map()
	pick := func() Value { return cands[rng.IntN(len(cands))] }
	for _, f := range fields {
		switch rng.IntN(6) {
		case 0: // missing
		case 1:
			doc = setPath(doc, strings.Split(f, "."), Array(pick(), pick()))
		default:
			doc = setPath(doc, strings.Split(f, "."), pick())
		}
	}
	return doc
}

// resolvePointer returns the value at JSON Pointer p in v, and whether it
// exists.
func resolvePointer(v Value, p string) (Value, bool) {
	if p == "" {
		return v, true
	}
	if !strings.HasPrefix(p, "/") {
		return Value{}, false
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		if items, ok := v.Array(); ok {
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(items) {
				return Value{}, false
			}
			v = items[i]
			continue
		}
		var ok bool
		if v, ok = v.Get(tok); !ok {
			return Value{}, false
		}
	}
	return v, true
}

// exactNumber returns number v as an exact big.Float (v not NaN).
func exactNumber(v Value) *big.Float {
	if i, ok := v.Int(); ok {
		return new(big.Float).SetInt64(i)
	}
	f, _ := v.Float()
	return big.NewFloat(f)
}

// isNaN reports whether v is a float NaN.
func isNaN(v Value) bool {
	f, ok := v.Float()
	return ok && math.IsNaN(f)
}

// oracleEqual is $eq's equality written independently of filter.go.
func oracleEqual(a, b Value) bool {
	_, aNum := a.Number()
	_, bNum := b.Number()
	if !aNum || !bNum {
		return Equal(a, b)
	}
	if isNaN(a) || isNaN(b) {
		return isNaN(a) && isNaN(b)
	}
	return exactNumber(a).Cmp(exactNumber(b)) == 0
}

// oracleOrder is the range operators' order written independently of
// filter.go: the comparison and whether a and b are comparable.
func oracleOrder(a, b Value) (int, bool) {
	_, aNum := a.Number()
	_, bNum := b.Number()
	switch {
	case aNum && bNum:
		if isNaN(a) || isNaN(b) {
			return 0, false
		}
		return exactNumber(a).Cmp(exactNumber(b)), true
	case a.Kind() != b.Kind():
		return 0, false
	case a.Kind() == KindBool:
		x, _ := a.Bool()
		y, _ := b.Bool()
		return map[bool]int{false: 0, true: 1}[x] - map[bool]int{false: 0, true: 1}[y], true
	case a.Kind() == KindText:
		x, _ := a.Text()
		y, _ := b.Text()
		return strings.Compare(x, y), true
	case a.Kind() == KindBytes:
		x, _ := a.Bytes()
		y, _ := b.Bytes()
		return strings.Compare(string(x), string(y)), true
	}
	return 0, false
}

// satisfies reports whether a field's value v (present or not) satisfies
// c, as Constraint documents it.
func satisfies(c Constraint, v Value, present bool) bool {
	if !present {
		return false
	}
	if c.Eq != nil && !oracleEqual(v, *c.Eq) {
		return false
	}
	if c.In != nil && !slices.ContainsFunc(c.In, func(x Value) bool { return oracleEqual(v, x) }) {
		return false
	}
	if b := c.Lower; b != nil {
		if o, ok := oracleOrder(v, b.Value); !ok || o < 0 || o == 0 && !b.Inclusive {
			return false
		}
	}
	if b := c.Upper; b != nil {
		if o, ok := oracleOrder(v, b.Value); !ok || o > 0 || o == 0 && !b.Inclusive {
			return false
		}
	}
	return true
}

// FuzzParseFilter parses filters decoded from the fuzz input. ParseFilter
// never panics; a refusal is a *FilterError whose Path exists in the
// filter; a parsed filter's Fields are sorted and distinct; Match never
// panics on random documents, agrees with $not, and implies every one of
// the Conjuncts.
func FuzzParseFilter(f *testing.F) {
	for _, v := range fuzzSeeds() {
		f.Add(fuzzEncode(f, v))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := fuzzDecoder{valueGen{b: data}}
		fv := d.filterValue()
		filter, err := ParseFilter(fv)
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) {
				t.Fatalf("ParseFilter error %v is not a *FilterError", err)
			}
			if _, ok := resolvePointer(fv, fe.Path); !ok || fe.Reason == "" {
				t.Fatalf("ParseFilter error %v: path %q not in the filter %s", err, fe.Path, show(fv))
			}
			return
		}
		fields := filter.Fields()
		if !slices.IsSorted(fields) || len(slices.Compact(slices.Clone(fields))) != len(fields) {
			t.Fatalf("Fields %q are not sorted and distinct", fields)
		}
		conj := filter.Conjuncts()
		for path := range conj {
			if !slices.Contains(fields, path) {
				t.Fatalf("Conjuncts has %q, not among Fields %q", path, fields)
			}
		}
		// $not of the filter, when it is still shallow enough.
		negated, _ := ParseFilter(Map(Field{Key: "$not", Value: fv}))
		h := fnv.New64a()
		h.Write(data)
		rng := rand.New(rand.NewPCG(h.Sum64(), 1))
		cands := fuzzCandidates(fv)
		for range 8 { // edge cases from the rest of the input
			cands = append(cands, d.valueGen.value(0))
		}
		docs := []Value{d.valueGen.value(0)} // a random document
		for range 32 {
			docs = append(docs, fuzzDoc(rng, fields, cands))
		}
		for _, doc := range docs {
			m := filter.Match(doc)
			if negated != nil && negated.Match(doc) == m {
				t.Fatalf("Match and $not's Match agree (%v) on %s", m, show(doc))
			}
			if !m {
				continue
			}
			for path, c := range conj {
				v, ok := doc.Path(path)
				if !satisfies(c, v, ok) {
					t.Fatalf("filter %s matches %s, but %q = %s (present %v) breaks %s", show(fv), show(doc), path, show(v), ok, showConstraints(map[string]Constraint{path: c}))
				}
			}
		}
	})
}
