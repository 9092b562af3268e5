package docstore

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"
)

// Kind is the type of a [Value].
type Kind uint8

// The kinds of value, in the order [Compare] sorts values of different
// kinds (numbers, int and float, sort together).
const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindText
	KindBytes
	KindVector
	KindArray
	KindMap
)

var kindNames = [...]string{"null", "bool", "int", "float", "text", "bytes", "vector", "array", "map"}

// String returns the kind's name as schemas spell it ("int", "text", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// ParseKind returns the kind named s, as [Kind.String] spells it.
func ParseKind(s string) (Kind, bool) {
	i := slices.Index(kindNames[:], s)
	return Kind(max(i, 0)), i >= 0
}

// Value is a typed document value: null, bool, int (int64), float
// (float64), text, bytes, vector (float32 components), array, or map
// (string keys, in the order given). The zero Value is null. Values are
// immutable: constructors copy nothing, so do not change a slice after
// passing it in, nor one returned by an accessor.
//
// A Value is two words (16 bytes on 64-bit machines), so that a decoded
// document, its fields and every copy of it stay small: a number (a
// scalar's bits, or the length of a text, bytes, vector, array or map with
// the kind in its top byte) and a pointer (to the first byte, component,
// item or field, or for a bool, int or float to its kind's tag).
type Value struct {
	num uint64         // bool (0/1), int (two's complement), float (IEEE bits); else kind<<56 | length
	p   unsafe.Pointer // text and bytes: *byte; vector: *float32; array: *Value; map: *Field; else &scalarTags[kind]
}

// scalarTags gives bool, int and float values a pointer that says their
// kind (their number takes all 64 bits).
var scalarTags [KindFloat + 1]byte

// lenMask keeps the length of a num that holds a kind and a length.
const lenMask = 1<<56 - 1

// kind returns v's kind.
func (v Value) kind() Kind {
	if d := uintptr(v.p) - uintptr(unsafe.Pointer(&scalarTags)); d < uintptr(len(scalarTags)) {
		return Kind(d)
	}
	return Kind(v.num >> 56)
}

// scalar returns a bool, int or float value of bits n.
func scalar(k Kind, n uint64) Value { return Value{num: n, p: unsafe.Pointer(&scalarTags[k])} }

// stringValue returns a text or bytes value of s.
func stringValue(k Kind, s string) Value {
	return Value{num: uint64(k)<<56 | uint64(len(s)), p: unsafe.Pointer(unsafe.StringData(s))}
}

// vectorValue, arrayValue and mapValue return a value of the slice's
// elements (kept, not copied).
func vectorValue(x []float32) Value { return sliceValue(KindVector, x) }
func arrayValue(x []Value) Value    { return sliceValue(KindArray, x) }
func mapValue(x []Field) Value      { return sliceValue(KindMap, x) }

func sliceValue[T any](k Kind, x []T) Value {
	return Value{num: uint64(k)<<56 | uint64(len(x)), p: unsafe.Pointer(unsafe.SliceData(x))}
}

// str returns a text's or bytes' contents ("" for other kinds).
func (v Value) str() string {
	if v.kind() != KindText && v.kind() != KindBytes {
		return ""
	}
	return unsafe.String((*byte)(v.p), int(v.num&lenMask))
}

// vec, arr and m return a vector's components, an array's items and a
// map's fields: nil for a value of another kind, empty (not nil) when there
// are none.
func (v Value) vec() []float32 { return elems[float32](v, KindVector) }
func (v Value) arr() []Value   { return elems[Value](v, KindArray) }
func (v Value) m() []Field     { return elems[Field](v, KindMap) }

func elems[T any](v Value, k Kind) []T {
	if v.kind() != k {
		return nil
	}
	if v.num&lenMask == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(v.p), int(v.num&lenMask))
}

// Field is one entry of a map value.
type Field struct {
	Key   string
	Value Value
}

// Null returns the null value.
func Null() Value { return Value{} }

// Bool returns a bool value.
func Bool(b bool) Value {
	if b {
		return scalar(KindBool, 1)
	}
	return scalar(KindBool, 0)
}

// Int returns an int value.
func Int(i int64) Value { return scalar(KindInt, uint64(i)) }

// Float returns a float value.
func Float(f float64) Value { return scalar(KindFloat, math.Float64bits(f)) }

// Text returns a text value.
func Text(s string) Value { return stringValue(KindText, s) }

// Bytes returns a bytes value (b is copied).
func Bytes(b []byte) Value { return stringValue(KindBytes, string(b)) }

// Vector returns a vector value (never null, possibly empty).
func Vector(v []float32) Value {
	return vectorValue(v)
}

// Array returns an array value.
func Array(items ...Value) Value {
	return arrayValue(items)
}

// Map returns a map value with fields in the given order. A repeated key
// keeps its first position and its last value.
func Map(fields ...Field) Value {
	return mapValue(dedupFields(slices.Clone(fields)))
}

// Kind returns v's kind.
func (v Value) Kind() Kind { return v.kind() }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind() == KindNull }

// Bool returns v's bool, and whether v is a bool.
func (v Value) Bool() (bool, bool) { return v.num == 1, v.kind() == KindBool }

// Int returns v's int, and whether v is an int.
func (v Value) Int() (int64, bool) { return int64(v.num), v.kind() == KindInt }

// Float returns v's float, and whether v is a float.
func (v Value) Float() (float64, bool) { return math.Float64frombits(v.num), v.kind() == KindFloat }

// Number returns v as a float64 when v is an int or a float.
func (v Value) Number() (float64, bool) {
	switch v.kind() {
	case KindInt:
		return float64(int64(v.num)), true
	case KindFloat:
		return math.Float64frombits(v.num), true
	}
	return 0, false
}

// Text returns v's text, and whether v is text.
func (v Value) Text() (string, bool) { return v.str(), v.kind() == KindText }

// Bytes returns v's bytes, and whether v is bytes.
func (v Value) Bytes() ([]byte, bool) {
	if v.kind() != KindBytes {
		return nil, false
	}
	return []byte(v.str()), true
}

// Vector returns v's components, and whether v is a vector.
func (v Value) Vector() ([]float32, bool) { return v.vec(), v.kind() == KindVector }

// Array returns v's items, and whether v is an array.
func (v Value) Array() ([]Value, bool) { return v.arr(), v.kind() == KindArray }

// Fields returns v's fields in order, and whether v is a map.
func (v Value) Fields() ([]Field, bool) { return v.m(), v.kind() == KindMap }

// Get returns the value of the map field key, and whether v is a map that
// has it.
func (v Value) Get(key string) (Value, bool) {
	fields := v.m()
	for i := range fields {
		if fields[i].Key == key {
			return fields[i].Value, true
		}
	}
	return Value{}, false
}

// Path returns the value at a dotted path into nested maps ("a.b.c"), and
// whether it exists.
func (v Value) Path(path string) (Value, bool) {
	for {
		key, rest, more := strings.Cut(path, ".")
		f, ok := v.Get(key)
		if !ok {
			return Value{}, false
		}
		if !more {
			return f, true
		}
		v, path = f, rest
	}
}

// With returns a copy of map v with field key set to x (appended when
// new). v must be a map or null (then an empty map is used).
func (v Value) With(key string, x Value) Value {
	out := slices.Clone(v.m())
	if i := slices.IndexFunc(out, func(f Field) bool { return f.Key == key }); i >= 0 {
		out[i].Value = x
	} else {
		out = append(out, Field{Key: key, Value: x})
	}
	return mapValue(out)
}

// Without returns a copy of map v without field key.
func (v Value) Without(key string) Value {
	out := slices.DeleteFunc(slices.Clone(v.m()), func(f Field) bool { return f.Key == key })
	return mapValue(out)
}

// Equal reports whether a and b are the same value: same kind (an int is
// never equal to a float), same contents, maps with the same fields in any
// order.
func Equal(a, b Value) bool {
	if a.kind() != b.kind() {
		return false
	}
	switch a.kind() {
	case KindFloat:
		fa, _ := a.Float()
		fb, _ := b.Float()
		return fa == fb || (math.IsNaN(fa) && math.IsNaN(fb))
	case KindArray:
		return slices.EqualFunc(a.arr(), b.arr(), Equal)
	case KindVector:
		return slices.EqualFunc(a.vec(), b.vec(), func(x, y float32) bool { return x == y || (x != x && y != y) })
	case KindMap:
		if len(a.m()) != len(b.m()) {
			return false
		}
		for _, f := range a.m() {
			g, ok := b.Get(f.Key)
			if !ok || !Equal(f.Value, g) {
				return false
			}
		}
		return true
	}
	return a.num == b.num && a.str() == b.str()
}

// Compare orders values: by kind (see the Kind constants; ints and floats
// compare together, numerically, an int before an equal float), then by
// content (text and bytes bytewise, arrays and vectors element by element,
// maps field by field in order). NaN sorts before every other number.
func Compare(a, b Value) int {
	if an, ok := a.Number(); ok {
		if bn, ok := b.Number(); ok {
			if c := compareNumbers(a, b, an, bn); c != 0 {
				return c
			}
			return cmp.Compare(a.kind(), b.kind())
		}
	}
	if c := cmp.Compare(rank(a.kind()), rank(b.kind())); c != 0 {
		return c
	}
	switch a.kind() {
	case KindBool:
		return cmp.Compare(a.num, b.num)
	case KindText, KindBytes:
		return strings.Compare(a.str(), b.str())
	case KindVector:
		return slices.CompareFunc(a.vec(), b.vec(), func(x, y float32) int { return cmp.Compare(x, y) })
	case KindArray:
		return slices.CompareFunc(a.arr(), b.arr(), Compare)
	case KindMap:
		return slices.CompareFunc(a.m(), b.m(), func(x, y Field) int {
			if c := strings.Compare(x.Key, y.Key); c != 0 {
				return c
			}
			return Compare(x.Value, y.Value)
		})
	}
	return 0
}

// rank merges the number kinds for Compare.
func rank(k Kind) Kind {
	if k == KindFloat {
		return KindInt
	}
	return k
}

// compareNumbers compares two numbers exactly (an int64 beyond 2^53 is not
// rounded through float64 against another int).
func compareNumbers(a, b Value, an, bn float64) int {
	ai, aInt := a.Int()
	bi, bInt := b.Int()
	switch {
	case aInt && bInt:
		return cmp.Compare(ai, bi)
	case math.IsNaN(an) || math.IsNaN(bn):
		return cmp.Compare(an, bn) // cmp.Compare puts NaN first
	case aInt:
		return compareIntFloat(ai, bn)
	case bInt:
		return -compareIntFloat(bi, an)
	}
	return cmp.Compare(an, bn)
}

// compareIntFloat compares i with the non-NaN float f exactly.
func compareIntFloat(i int64, f float64) int {
	switch {
	case f >= 9.223372036854775807e18:
		return -1
	case f < -9.223372036854775808e18:
		return 1
	}
	t := math.Trunc(f)
	if c := cmp.Compare(i, int64(t)); c != 0 {
		return c
	}
	return cmp.Compare(0, f-t) // i == trunc(f): f's fraction decides
}

// depthOver reports whether v nests arrays and maps more than max deep.
func depthOver(v Value, max int) bool {
	if max < 0 {
		return true
	}
	switch v.kind() {
	case KindArray:
		for _, x := range v.arr() {
			if depthOver(x, max-1) {
				return true
			}
		}
	case KindMap:
		for _, f := range v.m() {
			if depthOver(f.Value, max-1) {
				return true
			}
		}
	}
	return false
}
