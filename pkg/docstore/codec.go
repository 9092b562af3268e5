package docstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// MaxDepth is the deepest nesting of arrays and maps that FromJSON,
// ToJSON, DecodeValue and DecodeKey accept: [1] nests one level, [[1]]
// two; a scalar, bytes or a vector none (JSON wrappers do not count, so the
// three forms of a value agree). AppendValue and AppendKey write deeper
// values, which DecodeValue and DecodeKey then refuse: a caller that builds
// values in Go checks their depth before storing them (values from FromJSON
// and DecodeValue never exceed it).
const MaxDepth = 512

var tooDeepDetail = fmt.Sprintf("arrays and maps nested more than %d levels", MaxDepth)

// The reasons a conversion fails, wrapped by a *ValueError (test with
// errors.Is).
var (
	ErrBadJSON    = errors.New("invalid JSON")                             // FromJSON: syntax, UTF-8, a number beyond float64
	ErrNoJSONForm = errors.New("no JSON form")                             // ToJSON: NaN, ±Inf, text that is not UTF-8
	ErrTooDeep    = errors.New("nested too deeply")                        // deeper than MaxDepth
	ErrCorrupt    = errors.New("corrupt or truncated encoding of a value") // DecodeValue, DecodeKey
)

// ValueError is the error of every conversion of this file, json.go and
// keys.go: which conversion (Op), where in the value (Path), where in the
// input (Offset) and why (Err, wrapping one of ErrBadJSON, ErrNoJSONForm,
// ErrTooDeep and ErrCorrupt).
type ValueError struct {
	Op     string // "FromJSON", "ToJSON", "DecodeValue" or "DecodeKey"
	Path   string // JSON Pointer (RFC 6901) to the part at fault ("/a/3"); "" for the whole value
	Offset int    // byte offset in the input where decoding failed; -1 when encoding
	Err    error
}

func (e *ValueError) Error() string {
	var s strings.Builder
	s.WriteString("docstore: ")
	s.WriteString(e.Op)
	if e.Path != "" {
		s.WriteString(" at ")
		s.WriteString(e.Path)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&s, " (byte %d)", e.Offset)
	}
	s.WriteString(": ")
	s.WriteString(e.Err.Error())
	return s.String()
}

func (e *ValueError) Unwrap() error { return e.Err }

// prefixPath puts a map key or array index in front of the path of a
// *ValueError as it returns through the level holding it.
func prefixPath(err error, seg string) error {
	if e, ok := err.(*ValueError); ok {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~", "~0"), "/", "~1")
		e.Path = "/" + seg + e.Path
	}
	return err
}

// dedupFields returns fields with a repeated key merged as [Map] merges it
// (first position, last value), in time linear in len(fields). It reuses
// fields' array.
func dedupFields(fields []Field) []Field {
	if !hasDupKey(fields) {
		return fields
	}
	at := make(map[string]int, len(fields))
	out := fields[:0]
	for _, f := range fields {
		if i, ok := at[f.Key]; ok {
			out[i].Value = f.Value
			continue
		}
		at[f.Key] = len(out)
		out = append(out, f)
	}
	return out
}

// hasDupKey reports whether a key repeats in fields.
func hasDupKey(fields []Field) bool {
	if len(fields) <= 16 {
		for i := 1; i < len(fields); i++ {
			for j := range i {
				if fields[i].Key == fields[j].Key {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, len(fields))
	for _, f := range fields {
		if _, ok := seen[f.Key]; ok {
			return true
		}
		seen[f.Key] = struct{}{}
	}
	return false
}

// The binary form of values (AppendValue, DecodeValue) is one format
// version byte, then one CBOR data item (RFC 8949):
//
//	null, false, true  simple values 22, 20, 21
//	int                major type 0 (n >= 0) or 1 (n < 0), shortest argument
//	float              float32 (0xfa) when exact, else float64 (0xfb); never
//	                   an integer, so an integral float stays a float
//	text, bytes        major types 3 and 2
//	vector             tag 85 (RFC 8746: little-endian float32 typed array)
//	                   over a byte string of 4 bytes per component
//	array              major type 4, definite length
//	map                major type 5, definite length, text keys in field order
//
// fxamacker/cbor is not used: it decodes a CBOR map into a Go map (its order
// lost) or a struct, and offers no token-level reader, so an order-keeping
// decoder would parse the bytes by hand anyway.

// formatV1 is the first byte of the binary form this code writes.
const formatV1 = 1

// CBOR initial bytes and numbers used here.
const (
	majorUint   = 0 << 5
	majorNeg    = 1 << 5
	majorBytes  = 2 << 5
	majorText   = 3 << 5
	majorArray  = 4 << 5
	majorMap    = 5 << 5
	majorTag    = 6 << 5
	cborFalse   = 0xf4
	cborTrue    = 0xf5
	cborNull    = 0xf6
	cborFloat32 = 0xfa
	cborFloat64 = 0xfb
	tagF32LE    = 85 // RFC 8746 typed array: IEEE 754 binary32, little endian
)

// AppendValue appends the binary form of v to dst: a version byte, then v
// as CBOR (see above). DecodeValue reads it back Equal, with every map's
// order and every float's bits (a NaN's payload aside). v should nest no
// deeper than [MaxDepth] (see there).
func AppendValue(dst []byte, v Value) []byte {
	return appendCBOR(append(dst, formatV1), v)
}

func appendCBOR(b []byte, v Value) []byte {
	switch v.kind() {
	case KindNull:
		return append(b, cborNull)
	case KindBool:
		return append(b, cborFalse+byte(v.num))
	case KindInt:
		if n := int64(v.num); n < 0 {
			return appendHead(b, majorNeg, uint64(^n))
		}
		return appendHead(b, majorUint, v.num)
	case KindFloat:
		f := math.Float64frombits(v.num)
		if f32 := float32(f); float64(f32) == f {
			return binary.BigEndian.AppendUint32(append(b, cborFloat32), math.Float32bits(f32))
		}
		return binary.BigEndian.AppendUint64(append(b, cborFloat64), v.num)
	case KindText:
		return append(appendHead(b, majorText, uint64(len(v.str()))), v.str()...)
	case KindBytes:
		return append(appendHead(b, majorBytes, uint64(len(v.str()))), v.str()...)
	case KindVector:
		b = appendHead(appendHead(b, majorTag, tagF32LE), majorBytes, 4*uint64(len(v.vec())))
		n := len(b)
		b = slices.Grow(b, 4*len(v.vec()))[:n+4*len(v.vec())] // one growth, not one per doubling
		for i, x := range v.vec() {
			binary.LittleEndian.PutUint32(b[n+4*i:], math.Float32bits(x))
		}
		return b
	case KindArray:
		b = appendHead(b, majorArray, uint64(len(v.arr())))
		for _, x := range v.arr() {
			b = appendCBOR(b, x)
		}
		return b
	}
	b = appendHead(b, majorMap, uint64(len(v.m())))
	for _, f := range v.m() {
		b = append(appendHead(b, majorText, uint64(len(f.Key))), f.Key...)
		b = appendCBOR(b, f.Value)
	}
	return b
}

// appendHead appends a CBOR head: major type and argument n, shortest.
func appendHead(b []byte, major byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(b, major|byte(n))
	case n <= math.MaxUint8:
		return append(b, major|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, major|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, major|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, major|27), n)
}

// DecodeValue decodes the binary form AppendValue wrote. It fails with a
// *ValueError wrapping [ErrCorrupt] on input that is not one whole value
// of a known format version (truncated, trailing bytes, an unknown kind,
// a length beyond the input, a repeated map key), and [ErrTooDeep] beyond
// [MaxDepth]; it never panics. Text is taken as is (UTF-8 is not checked).
func DecodeValue(b []byte) (Value, error) { return decodeValue(b, nil) }

// decodeValue is DecodeValue keeping the text it decodes in strs, or, when
// strs is nil, in one copy of b.
func decodeValue(b []byte, strs *stringStore) (Value, error) {
	if len(b) == 0 {
		return Value{}, &ValueError{Op: "DecodeValue", Offset: 0, Err: fmt.Errorf("%w: empty input", ErrCorrupt)}
	}
	if b[0] != formatV1 {
		return Value{}, &ValueError{Op: "DecodeValue", Offset: 0, Err: fmt.Errorf("%w: unknown format version %d", ErrCorrupt, b[0])}
	}
	d := cborDecoder{b: b, strs: strs, i: 1}
	if strs == nil {
		// One copy of the input as a string backs every text, key and
		// bytes value decoded: one allocation instead of one per string.
		d.s = string(b)
	}
	v, err := d.value(0)
	if err != nil {
		return Value{}, err
	}
	if d.i != len(b) {
		return Value{}, d.fail(ErrCorrupt, "bytes after the value")
	}
	return v, nil
}

type cborDecoder struct {
	b    []byte
	s    string       // b, copied once, when strs is nil
	strs *stringStore // else where texts go
	i    int
}

// stringStore keeps the texts of the many documents one read decodes (a
// page) in fewer and smaller allocations than a copy of each document:
// map keys, which documents of a collection repeat, once each (nearly: a
// small cache), and other texts and bytes appended to shared chunks
// (never changed once written, so that strings may view them).
type stringStore struct {
	keys  [128]string // by a hash (FNV-1a) of the key
	chunk []byte
}

// storeChunkBytes is the size of a stringStore's chunks; a text longer
// than a quarter of it takes a chunk of its own.
const storeChunkBytes = 4 << 10

func newStringStore() *stringStore { return &stringStore{} }

// key returns b as a map key, the copy made for an equal key before when
// it is still cached.
func (p *stringStore) key(b []byte) string {
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := h % uint32(len(p.keys))
	if p.keys[slot] == string(b) {
		return p.keys[slot]
	}
	s := string(b)
	p.keys[slot] = s
	return s
}

// text returns b as a string viewing a chunk.
func (p *stringStore) text(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > storeChunkBytes/4 {
		return string(b)
	}
	if len(b) > cap(p.chunk)-len(p.chunk) {
		p.chunk = make([]byte, 0, storeChunkBytes)
	}
	start := len(p.chunk)
	p.chunk = append(p.chunk, b...)
	return unsafe.String(&p.chunk[start], len(b))
}

func (d *cborDecoder) fail(kind error, detail string) *ValueError {
	return &ValueError{Op: "DecodeValue", Offset: d.i, Err: fmt.Errorf("%w: %s", kind, detail)}
}

// head reads a head of a major type other than 7 and returns its major
// type and argument.
func (d *cborDecoder) head() (byte, uint64, error) {
	if d.i >= len(d.b) {
		return 0, 0, d.fail(ErrCorrupt, "truncated")
	}
	c := d.b[d.i]
	major, info := c&0xe0, c&0x1f
	if info < 24 {
		d.i++
		return major, uint64(info), nil
	}
	if info > 27 {
		return 0, 0, d.fail(ErrCorrupt, fmt.Sprintf("initial byte %#x not written by format 1", c))
	}
	n := 1 << (info - 24)
	if len(d.b)-d.i-1 < n {
		return 0, 0, d.fail(ErrCorrupt, "truncated")
	}
	var arg uint64
	for _, x := range d.b[d.i+1 : d.i+1+n] {
		arg = arg<<8 | uint64(x)
	}
	d.i += 1 + n
	return major, arg, nil
}

// takeString returns the next n bytes as a string: a map key (isKey) or a
// text or bytes value.
func (d *cborDecoder) takeString(n uint64, isKey bool) (string, error) {
	start := d.i
	b, err := d.take(n)
	switch {
	case err != nil:
		return "", err
	case d.strs == nil:
		return d.s[start:d.i], nil
	case isKey:
		return d.strs.key(b), nil
	}
	return d.strs.text(b), nil
}

// take returns the next n bytes.
func (d *cborDecoder) take(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)-d.i) {
		return nil, d.fail(ErrCorrupt, "length beyond the input")
	}
	s := d.b[d.i : d.i+int(n)]
	d.i += int(n)
	return s, nil
}

// value decodes one value at nesting depth.
func (d *cborDecoder) value(depth int) (Value, error) {
	if d.i >= len(d.b) {
		return Value{}, d.fail(ErrCorrupt, "truncated")
	}
	switch c := d.b[d.i]; c {
	case cborNull:
		d.i++
		return Null(), nil
	case cborFalse, cborTrue:
		d.i++
		return Bool(c == cborTrue), nil
	case cborFloat32:
		s, err := d.take1(4)
		if err != nil {
			return Value{}, err
		}
		return Float(float64(math.Float32frombits(binary.BigEndian.Uint32(s)))), nil
	case cborFloat64:
		s, err := d.take1(8)
		if err != nil {
			return Value{}, err
		}
		return Float(math.Float64frombits(binary.BigEndian.Uint64(s))), nil
	}
	at := d.i
	major, n, err := d.head()
	if err != nil {
		return Value{}, err
	}
	switch major {
	case majorUint, majorNeg:
		if n > math.MaxInt64 {
			d.i = at
			return Value{}, d.fail(ErrCorrupt, "integer beyond int64")
		}
		if major == majorNeg {
			return Int(^int64(n)), nil
		}
		return Int(int64(n)), nil
	case majorText, majorBytes:
		s, err := d.takeString(n, false)
		if err != nil {
			return Value{}, err
		}
		if major == majorText {
			return Text(s), nil
		}
		return stringValue(KindBytes, s), nil
	case majorTag:
		if n != tagF32LE {
			d.i = at
			return Value{}, d.fail(ErrCorrupt, fmt.Sprintf("tag %d not written by format 1", n))
		}
		at = d.i
		if major, n, err = d.head(); err != nil {
			return Value{}, err
		}
		if major != majorBytes || n%4 != 0 {
			d.i = at
			return Value{}, d.fail(ErrCorrupt, "a vector is not a byte string of float32s")
		}
		s, err := d.take(n)
		if err != nil {
			return Value{}, err
		}
		vec := make([]float32, n/4)
		for i := range vec {
			vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(s[4*i:]))
		}
		return Vector(vec), nil
	case majorArray, majorMap:
		if depth >= MaxDepth {
			d.i = at
			return Value{}, d.fail(ErrTooDeep, tooDeepDetail)
		}
		if major == majorArray {
			return d.array(n, depth)
		}
		return d.mapValue(at, n, depth)
	}
	d.i = at
	return Value{}, d.fail(ErrCorrupt, fmt.Sprintf("initial byte %#x not written by format 1", d.b[at]))
}

// take1 skips a one-byte head and returns the n bytes after it.
func (d *cborDecoder) take1(n uint64) ([]byte, error) {
	d.i++
	return d.take(n)
}

func (d *cborDecoder) array(n uint64, depth int) (Value, error) {
	if n > uint64(len(d.b)-d.i) { // every item takes a byte at least
		return Value{}, d.fail(ErrCorrupt, "array length beyond the input")
	}
	items := make([]Value, n)
	for k := range items {
		v, err := d.value(depth + 1)
		if err != nil {
			return Value{}, prefixPath(err, strconv.Itoa(k))
		}
		items[k] = v
	}
	return Array(items...), nil
}

func (d *cborDecoder) mapValue(at int, n uint64, depth int) (Value, error) {
	if n > uint64(len(d.b)-d.i)/2 { // every field takes two bytes at least
		return Value{}, d.fail(ErrCorrupt, "map length beyond the input")
	}
	fields := make([]Field, n)
	for k := range fields {
		keyAt := d.i
		major, klen, err := d.head()
		if err != nil {
			return Value{}, err
		}
		if major != majorText {
			d.i = keyAt
			return Value{}, d.fail(ErrCorrupt, "a map key is not text")
		}
		key, err := d.takeString(klen, true)
		if err != nil {
			return Value{}, err
		}
		fields[k].Key = key
		if fields[k].Value, err = d.value(depth + 1); err != nil {
			return Value{}, prefixPath(err, fields[k].Key)
		}
	}
	if hasDupKey(fields) {
		d.i = at
		return Value{}, d.fail(ErrCorrupt, "a map repeats a key")
	}
	return mapValue(fields), nil
}
