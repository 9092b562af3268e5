package docstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
)

// Sortable keys (AppendKey, DecodeKey) order as Compare orders values, so
// an index is a sorted byte-keyed store. A key is a tag byte, then:
//
//	0x02 null, 0x04 false, 0x05 true      nothing
//	0x10 NaN                              nothing
//	0x11 a float below -2^63              8 bytes: ^bits, big-endian
//	0x12–0x22 a number in [-2^63, 2^63)   its integer part t (rounded toward
//	                                      zero) in the tag and 0–8 bytes, then
//	                                      0x01 + 8 bytes: a float t+f, f in (-1, 0)
//	                                      0x02: the int t
//	                                      0x03: the float t
//	                                      0x04 + 8 bytes: a float t+f, f in (0, 1)
//	0x23 a float from 2^63 up             8 bytes: bits, big-endian
//	0x30 text, 0x40 bytes                 the bytes, 0x00 written 0x00 0xff,
//	                                      then 0x00 0x01
//	0x50 vector                           per component 0x01 + 4 sortable
//	                                      float32 bytes, then 0x00
//	0x60 array                            each item's key, then 0x00
//	0x70 map                              per field its key's text key, then
//	                                      its value's key; then 0x00
//
// The integer part's tag is 0x1a for 0, 0x1a+n for a positive t of n
// big-endian bytes (shortest), and 0x1a-n for a negative t whose
// complement (-t-1) takes n bytes, written as the complement's ones'
// complement (n is at least 1). A float's bits sort as its value when
// positive, inverted when negative; a vector component's bits are
// inverted when negative and have the sign bit set otherwise, and every
// NaN component is 0x00000000. Every NaN has one key, below every other
// number, and -0 the key of +0 (Compare holds them equal).
//
// No key is a prefix of the key of a value Compare does not hold equal, so
// a concatenation of keys sorts as the tuple of their values, and a key
// followed by anything still sorts by its value first.
const (
	keyNull      = 0x02
	keyFalse     = 0x04
	keyTrue      = 0x05
	keyNaN       = 0x10
	keyFloatLow  = 0x11
	keyIntZero   = 0x1a // ±8 for the integer part's length
	keyFloatHigh = 0x23
	keyText      = 0x30
	keyBytes     = 0x40
	keyVector    = 0x50
	keyArray     = 0x60
	keyMap       = 0x70

	keyEnd  = 0x00 // ends a vector, array or map
	keyItem = 0x01 // starts a vector component

	// after the integer part
	numNegFrac     = 0x01
	numInt         = 0x02
	numIntegralFlt = 0x03
	numPosFrac     = 0x04
)

const twoTo63 float64 = 1 << 63

// AppendKey appends v's sortable key to dst: for any values a and b,
// bytes.Compare(AppendKey(nil, a), AppendKey(nil, b)) has the sign of
// Compare(a, b) (numbers exactly across int and float; an int before an
// equal float; NaN first), for values of every kind. Keys concatenate: no
// key is a prefix of the key of a value Compare does not hold equal, so a
// key followed by others sorts as a tuple, and the keys with a given key
// as prefix are those of its value followed by more. Values Compare holds
// equal have the same key (every NaN; -0 and +0). The layout is described
// above; scalars are compact (an int from -256 to 255 takes three bytes or
// less).
func AppendKey(dst []byte, v Value) []byte {
	switch v.kind() {
	case KindNull:
		return append(dst, keyNull)
	case KindBool:
		return append(dst, keyFalse+byte(v.num))
	case KindInt:
		return append(appendIntPart(dst, int64(v.num)), numInt)
	case KindFloat:
		return appendFloatKey(dst, math.Float64frombits(v.num))
	case KindText:
		return appendEscaped(append(dst, keyText), v.str())
	case KindBytes:
		return appendEscaped(append(dst, keyBytes), v.str())
	case KindVector:
		dst = append(dst, keyVector)
		for _, x := range v.vec() {
			dst = binary.BigEndian.AppendUint32(append(dst, keyItem), sortableFloat32(x))
		}
		return append(dst, keyEnd)
	case KindArray:
		dst = append(dst, keyArray)
		for _, x := range v.arr() {
			dst = AppendKey(dst, x)
		}
		return append(dst, keyEnd)
	}
	dst = append(dst, keyMap)
	for _, f := range v.m() {
		dst = appendEscaped(append(dst, keyText), f.Key)
		dst = AppendKey(dst, f.Value)
	}
	return append(dst, keyEnd)
}

func appendFloatKey(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, keyNaN)
	case f < -twoTo63:
		return binary.BigEndian.AppendUint64(append(b, keyFloatLow), ^math.Float64bits(f))
	case f >= twoTo63:
		return binary.BigEndian.AppendUint64(append(b, keyFloatHigh), math.Float64bits(f))
	}
	t := math.Trunc(f)
	b = appendIntPart(b, int64(t))
	switch fr := f - t; { // exact: t is f without its fraction
	case fr < 0:
		return binary.BigEndian.AppendUint64(append(b, numNegFrac), ^math.Float64bits(fr))
	case fr > 0:
		return binary.BigEndian.AppendUint64(append(b, numPosFrac), math.Float64bits(fr))
	}
	return append(b, numIntegralFlt)
}

// appendIntPart appends the tag and bytes of an integer part (see above).
func appendIntPart(b []byte, t int64) []byte {
	u, neg := uint64(t), t < 0
	if neg {
		u = uint64(^t) // -t-1
	}
	n := 8 - bits.LeadingZeros64(u)/8
	if neg {
		n = max(n, 1)
		b = append(b, keyIntZero-byte(n))
		u = ^u
	} else {
		b = append(b, keyIntZero+byte(n))
	}
	for k := n - 1; k >= 0; k-- {
		b = append(b, byte(u>>(8*k)))
	}
	return b
}

// appendEscaped appends s with each 0x00 written 0x00 0xff, then 0x00 0x01.
func appendEscaped(b []byte, s string) []byte {
	for {
		i := indexZero(s)
		if i < 0 {
			return append(append(b, s...), 0x00, 0x01)
		}
		b = append(append(b, s[:i]...), 0x00, 0xff)
		s = s[i+1:]
	}
}

func indexZero(s string) int {
	for i := range len(s) {
		if s[i] == 0 {
			return i
		}
	}
	return -1
}

// sortableFloat32 returns bits of x that sort as Compare sorts float32s.
func sortableFloat32(x float32) uint32 {
	switch {
	case x != x:
		return 0
	case x == 0:
		return 1 << 31
	}
	if u := math.Float32bits(x); u>>31 == 1 {
		return ^u
	} else {
		return u | 1<<31
	}
}

// DecodeKey decodes the key at the start of b, as AppendKey wrote it, and
// returns its value and the bytes after it. The value is Compare-equal to
// the one written, of the same kind, and Equal to it but for a NaN's
// payload and the sign of a zero. It fails with a *ValueError wrapping
// [ErrCorrupt] (truncated, an unknown tag, a form AppendKey never writes)
// or [ErrTooDeep] (beyond [MaxDepth]); it never panics.
func DecodeKey(b []byte) (Value, []byte, error) {
	d := keyDecoder{b: b}
	v, err := d.value(0)
	if err != nil {
		return Value{}, nil, err
	}
	return v, b[d.i:], nil
}

type keyDecoder struct {
	b []byte
	i int
}

func (d *keyDecoder) fail(kind error, detail string) *ValueError {
	return &ValueError{Op: "DecodeKey", Offset: d.i, Err: fmt.Errorf("%w: %s", kind, detail)}
}

// take returns the next n bytes.
func (d *keyDecoder) take(n int) ([]byte, error) {
	if len(d.b)-d.i < n {
		return nil, d.fail(ErrCorrupt, "truncated")
	}
	s := d.b[d.i : d.i+n]
	d.i += n
	return s, nil
}

func (d *keyDecoder) value(depth int) (Value, error) {
	at := d.i
	tag, err := d.take(1)
	if err != nil {
		return Value{}, err
	}
	switch t := tag[0]; {
	case t == keyNull:
		return Null(), nil
	case t == keyFalse || t == keyTrue:
		return Bool(t == keyTrue), nil
	case t == keyNaN:
		return Float(math.NaN()), nil
	case t == keyFloatLow || t == keyFloatHigh:
		s, err := d.take(8)
		if err != nil {
			return Value{}, err
		}
		u := binary.BigEndian.Uint64(s)
		if t == keyFloatLow {
			u = ^u
		}
		if f := math.Float64frombits(u); t == keyFloatLow && f < -twoTo63 || t == keyFloatHigh && f >= twoTo63 {
			return Float(f), nil
		}
		d.i = at
		return Value{}, d.fail(ErrCorrupt, "a float out of its tag's range")
	case t >= keyIntZero-8 && t <= keyIntZero+8:
		d.i = at
		return d.number()
	case t == keyText || t == keyBytes:
		s, err := d.escaped()
		if err != nil {
			return Value{}, err
		}
		if t == keyText {
			return Text(s), nil
		}
		return stringValue(KindBytes, s), nil
	case t == keyVector:
		return d.vector()
	case t == keyArray || t == keyMap:
		if depth >= MaxDepth {
			d.i = at
			return Value{}, d.fail(ErrTooDeep, tooDeepDetail)
		}
		if t == keyArray {
			return d.array(depth)
		}
		return d.mapValue(at, depth)
	}
	d.i = at
	return Value{}, d.fail(ErrCorrupt, fmt.Sprintf("unknown tag %#x", tag[0]))
}

// number decodes a number in [-2^63, 2^63), refusing a form AppendKey
// never writes (so that every key decodes to a value whose key it is).
func (d *keyDecoder) number() (Value, error) {
	at := d.i
	tag := d.b[d.i]
	d.i++
	n := int(tag) - keyIntZero
	neg := n < 0
	if neg {
		n = -n
	}
	s, err := d.take(n)
	if err != nil {
		return Value{}, err
	}
	var u uint64
	for _, c := range s {
		u = u<<8 | uint64(c)
	}
	var t int64
	if neg {
		u = ^u & (math.MaxUint64 >> (64 - 8*n)) // the complement, -t-1
		t = ^int64(u)
		if u>>63 != 0 || n > 1 && u>>(8*n-8) == 0 {
			d.i = at
			return Value{}, d.fail(ErrCorrupt, "a negative integer part not written shortest")
		}
	} else {
		t = int64(u)
		if u>>63 != 0 || n > 0 && s[0] == 0 {
			d.i = at
			return Value{}, d.fail(ErrCorrupt, "an integer part not written shortest")
		}
	}
	kind, err := d.take(1)
	if err != nil {
		return Value{}, err
	}
	if kind[0] == numInt {
		return Int(t), nil
	}
	tf := float64(t)
	if tf >= twoTo63 || int64(tf) != t {
		d.i = at
		return Value{}, d.fail(ErrCorrupt, "an integer part no float has")
	}
	switch kind[0] {
	case numIntegralFlt:
		return Float(tf), nil
	case numNegFrac, numPosFrac:
		s, err := d.take(8)
		if err != nil {
			return Value{}, err
		}
		u := binary.BigEndian.Uint64(s)
		if kind[0] == numNegFrac {
			u = ^u
		}
		fr := math.Float64frombits(u)
		f := tf + fr
		if kind[0] == numNegFrac && !(fr < 0 && fr > -1) || kind[0] == numPosFrac && !(fr > 0 && fr < 1) ||
			math.Trunc(f) != tf || f-tf != fr {
			d.i = at
			return Value{}, d.fail(ErrCorrupt, "a fraction no float has")
		}
		return Float(f), nil
	}
	d.i--
	return Value{}, d.fail(ErrCorrupt, fmt.Sprintf("unknown number kind %#x", kind[0]))
}

// escaped decodes the bytes of a text or bytes key after its tag.
func (d *keyDecoder) escaped() (string, error) {
	b := d.b
	start := d.i
	end := bytes.IndexByte(b[start:], 0)
	if end < 0 {
		return "", d.fail(ErrCorrupt, "unterminated text")
	}
	end += start
	if end+1 < len(b) && b[end+1] == 0x01 { // no escapes
		d.i = end + 2
		return string(b[start:end]), nil
	}
	var out []byte
	for i := start; i < len(b); i++ {
		if b[i] != 0 {
			out = append(out, b[i])
			continue
		}
		if i+1 >= len(b) {
			break
		}
		switch b[i+1] {
		case 0xff:
			out = append(out, 0)
			i++
		case 0x01:
			d.i = i + 2
			return string(out), nil
		default:
			d.i = i
			return "", d.fail(ErrCorrupt, "a 0x00 in text neither escaped nor ending it")
		}
	}
	return "", d.fail(ErrCorrupt, "unterminated text")
}

func (d *keyDecoder) vector() (Value, error) {
	vec := []float32{}
	for {
		m, err := d.take(1)
		if err != nil {
			return Value{}, err
		}
		switch m[0] {
		case keyEnd:
			return Vector(vec), nil
		case keyItem:
		default:
			d.i--
			return Value{}, d.fail(ErrCorrupt, "a vector component without its marker")
		}
		s, err := d.take(4)
		if err != nil {
			return Value{}, err
		}
		x, ok := unsortableFloat32(binary.BigEndian.Uint32(s))
		if !ok {
			d.i -= 4
			return Value{}, d.fail(ErrCorrupt, "a vector component AppendKey never writes")
		}
		vec = append(vec, x)
	}
}

// unsortableFloat32 inverts sortableFloat32, refusing the bits it never
// returns.
func unsortableFloat32(u uint32) (float32, bool) {
	var x float32
	switch {
	case u == 0:
		return float32(math.NaN()), true
	case u>>31 == 1:
		x = math.Float32frombits(u &^ (1 << 31))
	default:
		x = math.Float32frombits(^u)
	}
	return x, sortableFloat32(x) == u
}

func (d *keyDecoder) array(depth int) (Value, error) {
	items := []Value{}
	for k := 0; ; k++ {
		if d.i < len(d.b) && d.b[d.i] == keyEnd {
			d.i++
			return Array(items...), nil
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return Value{}, prefixPath(err, strconv.Itoa(k))
		}
		items = append(items, v)
	}
}

func (d *keyDecoder) mapValue(at, depth int) (Value, error) {
	fields := []Field{}
	for {
		if d.i >= len(d.b) {
			return Value{}, d.fail(ErrCorrupt, "truncated")
		}
		if d.b[d.i] == keyEnd {
			d.i++
			break
		}
		if d.b[d.i] != keyText {
			return Value{}, d.fail(ErrCorrupt, "a map key is not text")
		}
		d.i++
		key, err := d.escaped()
		if err != nil {
			return Value{}, err
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return Value{}, prefixPath(err, key)
		}
		fields = append(fields, Field{Key: key, Value: v})
	}
	if hasDupKey(fields) {
		d.i = at
		return Value{}, d.fail(ErrCorrupt, "a map repeats a key")
	}
	return mapValue(fields), nil
}
