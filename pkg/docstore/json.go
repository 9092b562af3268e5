package docstore

import (
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
)

// The JSON form of values.
//
// JSON has no bytes, no vectors, and one kind of number, so FromJSON and
// ToJSON agree on three wrapper objects:
//
//   - {"$vector": [numbers...]} is a vector (float32 components);
//   - {"$bytes": "<standard base64>"} is bytes;
//   - {"$map": {...}} is the map {...} taken literally: its own members are
//     never read as a wrapper (their values are read as usual). ToJSON writes
//     every map of exactly one field named "$vector", "$bytes" or "$map" this
//     way, so such a map reads back as a map.
//
// An object is a wrapper only when it has exactly one member as written and
// that member's value has the wrapper's form (an array of numbers each in
// float32 range; a valid base64 string; an object); any other object is a
// map, so a malformed wrapper stays a map with its "$..." key.
//
// A number with a fraction or an exponent is a float, any other an int (an
// integer beyond int64 becomes the nearest float, losing precision); ToJSON
// always writes a float with a fraction or an exponent (1.0, 1e+21), so the
// int/float distinction survives a round trip, and every float comes back
// bit for bit.

// Reserved wrapper keys.
const (
	vectorKey = "$vector"
	bytesKey  = "$bytes"
	mapKey    = "$map"
)

// FromJSON converts one JSON value (whitespace around it allowed) into a
// Value, reading the wrappers described above. Objects keep their members
// in the order written; a repeated key keeps its first position and its
// last value. It fails with a *ValueError wrapping [ErrBadJSON] on input
// that is not valid UTF-8 JSON or holds a number beyond float64's range,
// and [ErrTooDeep] on arrays and maps nested deeper than [MaxDepth].
func FromJSON(data []byte) (Value, error) {
	p := parserPool.Get().(*jsonParser)
	defer p.release()
	p.b = data
	i := jsonscan.SkipWS(data, 0)
	v, i, err := p.value(i)
	if err != nil {
		return Value{}, err
	}
	if i = jsonscan.SkipWS(data, i); i < len(data) {
		return Value{}, p.fail(i, ErrBadJSON, "data after the value")
	}
	return v, nil
}

// jsonParser is a recursive-descent JSON parser building Values. Its
// stacks hold the members and elements of the objects and arrays being
// parsed (and a vector's components), so each object, array or vector
// allocates once, at its exact size; parsers are pooled with their stacks.
type jsonParser struct {
	b      []byte
	depth  int
	fields []Field
	items  []Value
	floats []float32
	ends   map[int]int // see objectEnd
}

var parserPool = sync.Pool{New: func() any { return new(jsonParser) }}

// maxPooledStack bounds the stacks a pooled parser keeps.
const maxPooledStack = 1 << 10

// release returns p to the pool. Its stacks hold no values: each level
// clears what it pushed as it returns.
func (p *jsonParser) release() {
	if cap(p.fields) > maxPooledStack || cap(p.items) > maxPooledStack || cap(p.floats) > maxPooledStack {
		return
	}
	p.b, p.depth, p.ends = nil, 0, nil
	parserPool.Put(p)
}

func (p *jsonParser) fail(at int, kind error, detail string) *ValueError {
	return &ValueError{Op: "FromJSON", Offset: at, Err: fmt.Errorf("%w: %s", kind, detail)}
}

// value parses the value starting at b[i] (not whitespace) and returns it
// with the index after it.
func (p *jsonParser) value(i int) (Value, int, error) {
	b := p.b
	if i >= len(b) {
		return Value{}, i, p.fail(i, ErrBadJSON, "unexpected end of input")
	}
	switch c := b[i]; {
	case c == '{':
		return p.object(i, false)
	case c == '[':
		return p.array(i)
	case c == '"':
		s, j, err := p.str(i)
		return Text(s), j, err
	case c == '-' || c >= '0' && c <= '9':
		return p.number(i)
	case c == 't' && hasLiteral(b, i, "true"):
		return Bool(true), i + 4, nil
	case c == 'f' && hasLiteral(b, i, "false"):
		return Bool(false), i + 5, nil
	case c == 'n' && hasLiteral(b, i, "null"):
		return Null(), i + 4, nil
	}
	return Value{}, i, p.fail(i, ErrBadJSON, fmt.Sprintf("unexpected %q", b[i]))
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// tooDeep is the error of an array or map at b[i] nested deeper than
// MaxDepth.
func (p *jsonParser) tooDeep(i int) error {
	return p.fail(i, ErrTooDeep, tooDeepDetail)
}

// object parses the object at b[i] == '{'. Unless literal, an object of
// one member may be a wrapper.
func (p *jsonParser) object(i int, literal bool) (Value, int, error) {
	b, start := p.b, i
	base := len(p.fields)
	defer func() {
		clear(p.fields[base:])
		p.fields = p.fields[:base]
	}()
	entered := false // a wrapper nests no level; a map one
	defer func() {
		if entered {
			p.depth--
		}
	}()
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		if p.depth >= MaxDepth {
			return Value{}, start, p.tooDeep(start)
		}
		return mapValue(nil), i + 1, nil
	}
	for first := true; ; first = false {
		if i >= len(b) || b[i] != '"' {
			return Value{}, i, p.fail(i, ErrBadJSON, "expected a member name")
		}
		key, j, err := p.str(i)
		if err != nil {
			return Value{}, j, err
		}
		if i = jsonscan.SkipWS(b, j); i >= len(b) || b[i] != ':' {
			return Value{}, i, p.fail(i, ErrBadJSON, "expected ':' after a member name")
		}
		i = jsonscan.SkipWS(b, i+1)
		if first {
			if !literal && isWrapperKey(key) {
				w, end, ok, err := p.wrapper(key, i)
				if err != nil {
					return Value{}, end, prefixPath(err, key)
				}
				if ok {
					return w, end, nil
				}
			}
			if p.depth >= MaxDepth {
				return Value{}, start, p.tooDeep(start)
			}
			p.depth++
			entered = true
		}
		v, j, err := p.value(i)
		if err != nil {
			return Value{}, j, prefixPath(err, key)
		}
		p.fields = append(p.fields, Field{Key: key, Value: v})
		var done bool
		if i, done, err = p.separator(j, '}'); err != nil || done {
			if err != nil {
				return Value{}, i, err
			}
			return mapValue(dedupFields(slices.Clone(p.fields[base:]))), i, nil
		}
	}
}

// separator reads what follows a member or an element at b[j]: ',' (it
// returns the index of the next one) or close (it returns the index after
// it, and done).
func (p *jsonParser) separator(j int, close byte) (i int, done bool, err error) {
	b := p.b
	if i = jsonscan.SkipWS(b, j); i >= len(b) {
		return i, false, p.fail(i, ErrBadJSON, "unexpected end of input")
	}
	switch b[i] {
	case ',':
		return jsonscan.SkipWS(b, i+1), false, nil
	case close:
		return i + 1, true, nil
	}
	return i, false, p.fail(i, ErrBadJSON, fmt.Sprintf("expected ',' or '%c'", close))
}

// wrapper reads the value at b[i], the first member of an object named
// key, as a wrapper. It reports false, having consumed nothing, unless the
// value has the wrapper's form and the object ends after it; the caller
// then reads the object as a map (and reports any error in it). Reading a
// $vector or $bytes value twice costs a flat array or string; a $map
// value is read once, after a look ahead for its end (reading it again
// on failure would cost twice per level of nested $map objects).
func (p *jsonParser) wrapper(key string, i int) (Value, int, bool, error) {
	b := p.b
	if i >= len(b) {
		return Value{}, i, false, nil
	}
	var w Value
	var end int
	switch {
	case key == vectorKey && b[i] == '[':
		vec, j, ok := p.vector(i)
		if !ok {
			return Value{}, i, false, nil
		}
		w, end = Vector(vec), j
	case key == bytesKey && b[i] == '"':
		s, j, err := p.str(i)
		if err != nil {
			return Value{}, i, false, nil
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return Value{}, i, false, nil
		}
		w, end = Bytes(raw), j
	case key == mapKey && b[i] == '{':
		if e := p.objectEnd(i); e < 0 || !objectCloses(b, e) {
			return Value{}, i, false, nil
		}
		m, j, err := p.object(i, true)
		if err != nil {
			return Value{}, j, false, err
		}
		if !objectCloses(b, j) { // valid JSON ends where the look ahead said
			return Value{}, j, false, p.fail(j, ErrBadJSON, "expected '}' after a $map wrapper's object")
		}
		w, end = m, j
	default:
		return Value{}, i, false, nil
	}
	if !objectCloses(b, end) {
		return Value{}, i, false, nil
	}
	return w, jsonscan.SkipWS(b, end) + 1, true, nil
}

// objectCloses reports whether an object's '}' follows b[i:] (after whitespace).
func objectCloses(b []byte, i int) bool {
	i = jsonscan.SkipWS(b, i)
	return i < len(b) && b[i] == '}'
}

// objectEnd returns the index after the '}' matching the '{' at b[i], or
// -1 if there is none. It matches braces outside strings without
// validating. The first call in a span records the ends of every object
// in it (-1 for those left open), so that looking ahead from nested $map
// objects costs one pass over the input in all.
func (p *jsonParser) objectEnd(i int) int {
	if e, ok := p.ends[i]; ok {
		return e
	}
	if p.ends == nil {
		p.ends = make(map[int]int)
	}
	b := p.b
	var open []int
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
		case '{':
			open = append(open, j)
		case '}':
			p.ends[open[len(open)-1]] = j + 1
			if open = open[:len(open)-1]; len(open) == 0 {
				return j + 1
			}
		}
	}
	for _, o := range open {
		p.ends[o] = -1
	}
	return -1
}

// vector reads the array at b[i] == '[' as float32 components, parsing
// each number's text directly to the nearest float32. It reports false if
// an element is not a number or is beyond float32's range.
func (p *jsonParser) vector(i int) ([]float32, int, bool) {
	b := p.b
	vec := p.floats[:0]
	defer func() { p.floats = vec[:0] }()
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return []float32{}, i + 1, true
	}
	for {
		j, _, ok := scanNumber(b, i)
		if !ok {
			return nil, i, false
		}
		f, err := strconv.ParseFloat(unsafeString(b[i:j]), 32)
		if err != nil {
			return nil, i, false
		}
		vec = append(vec, float32(f))
		var done bool
		if i, done, err = p.separator(j, ']'); err != nil {
			return nil, i, false
		} else if done {
			return slices.Clone(vec), i, true
		}
	}
}

// array parses the array at b[i] == '['.
func (p *jsonParser) array(i int) (Value, int, error) {
	if p.depth >= MaxDepth {
		return Value{}, i, p.tooDeep(i)
	}
	p.depth++
	defer func() { p.depth-- }()
	b := p.b
	base := len(p.items)
	defer func() {
		clear(p.items[base:])
		p.items = p.items[:base]
	}()
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return Array(), i + 1, nil
	}
	for n := 0; ; n++ {
		v, j, err := p.value(i)
		if err != nil {
			return Value{}, j, prefixPath(err, strconv.Itoa(n))
		}
		p.items = append(p.items, v)
		var done bool
		if i, done, err = p.separator(j, ']'); err != nil || done {
			if err != nil {
				return Value{}, i, err
			}
			return Array(slices.Clone(p.items[base:])...), i, nil
		}
	}
}

// number parses the number at b[i].
func (p *jsonParser) number(i int) (Value, int, error) {
	j, isFloat, ok := scanNumber(p.b, i)
	if !ok {
		return Value{}, j, p.fail(j, ErrBadJSON, "malformed number")
	}
	s := p.b[i:j]
	if !isFloat {
		if n, ok := parseSmallInt(s); ok {
			return Int(n), j, nil
		}
		if n, err := strconv.ParseInt(unsafeString(s), 10, 64); err == nil {
			return Int(n), j, nil
		}
		// An integer beyond int64: the nearest float.
	}
	f, err := strconv.ParseFloat(unsafeString(s), 64)
	if err != nil {
		return Value{}, i, p.fail(i, ErrBadJSON, fmt.Sprintf("number %.40s is beyond float64's range", s))
	}
	return Float(f), j, nil
}

// parseSmallInt parses an integer of at most 18 digits (it cannot
// overflow), reporting false for a longer one.
func parseSmallInt(s []byte) (int64, bool) {
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// scanNumber returns the end of the JSON number at b[i], whether it has a
// fraction or an exponent, and whether it is well-formed.
func scanNumber(b []byte, i int) (end int, isFloat, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, false, false
	}
	if i < len(b) && b[i] == '.' {
		isFloat = true
		if k := skipDigits(b, i+1); k > i+1 {
			i = k
		} else {
			return k, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isFloat = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if k := skipDigits(b, i); k > i {
			i = k
		} else {
			return k, false, false
		}
	}
	return i, isFloat, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// unsafeString views b as a string for a call that does not keep it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// str parses the string at b[i] == '"' and returns it with the index after
// the closing quote. Its text must be valid UTF-8; an escaped lone
// surrogate becomes U+FFFD, as encoding/json does.
func (p *jsonParser) str(i int) (string, int, error) {
	b := p.b
	start := i + 1
	escaped, ascii := false, true
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			raw := b[start:j]
			if !ascii && !utf8.Valid(raw) {
				return "", i, p.fail(i, ErrBadJSON, "invalid UTF-8 in a string")
			}
			if !escaped {
				return string(raw), j + 1, nil
			}
			s, at := unescape(raw)
			if at >= 0 {
				return "", start + at, p.fail(start+at, ErrBadJSON, "malformed escape in a string")
			}
			return s, j + 1, nil
		case c == '\\':
			escaped = true
			j++ // the escaped byte is never the closing quote
		case c < 0x20:
			return "", j, p.fail(j, ErrBadJSON, "control character in a string")
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", i, p.fail(i, ErrBadJSON, "unterminated string")
}

// unescape decodes the escapes of a string's raw text, or returns the
// index of a malformed one.
func unescape(raw []byte) (string, int) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 >= len(raw) {
			return "", i
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return "", i
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(raw, i+4); ok && i+3 < len(raw) && raw[i+2] == '\\' && raw[i+3] == 'u' {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", i
		}
		i++
	}
	return string(out), -1
}

// hex4 reads the four hex digits at raw[i:].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// ToJSON returns the JSON form of v: compact, maps' members in order, with
// the wrappers described above for bytes, vectors and maps that would read
// as a wrapper. FromJSON(ToJSON(v)) is Equal to v, keeps every map's
// order, and every float's bits. ToJSON fails with a *ValueError naming the
// path of the part at fault: [ErrNoJSONForm] for a NaN or infinite float
// or vector component, or a text or key that is not valid UTF-8;
// [ErrTooDeep] for arrays and maps nested deeper than [MaxDepth] (so
// FromJSON accepts whatever ToJSON writes).
func ToJSON(v Value) ([]byte, error) {
	return AppendJSON(nil, v)
}

// AppendJSON appends the JSON form of v (see [ToJSON]) to dst. On error it
// returns dst with its length unchanged.
func AppendJSON(dst []byte, v Value) ([]byte, error) {
	b, err := appendJSON(dst, v, 0)
	if err != nil {
		return dst, err
	}
	return b, nil
}

func jsonErr(kind error, detail string) *ValueError {
	return &ValueError{Op: "ToJSON", Offset: -1, Err: fmt.Errorf("%w: %s", kind, detail)}
}

// appendJSON appends v's JSON inside depth arrays and maps.
func appendJSON(b []byte, v Value, depth int) ([]byte, error) {
	switch v.kind() {
	case KindNull:
		return append(b, "null"...), nil
	case KindBool:
		if v.num == 1 {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case KindInt:
		return strconv.AppendInt(b, int64(v.num), 10), nil
	case KindFloat:
		f := math.Float64frombits(v.num)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return b, jsonErr(ErrNoJSONForm, fmt.Sprintf("float %v", f))
		}
		return appendFloat(b, f, 64), nil
	case KindText:
		return appendString(b, v.str())
	case KindBytes:
		b = append(b, `{"$bytes":"`...)
		s := v.str()
		b = base64.StdEncoding.AppendEncode(b, unsafe.Slice(unsafe.StringData(s), len(s)))
		return append(b, `"}`...), nil
	case KindVector:
		b = append(b, `{"$vector":[`...)
		for i, x := range v.vec() {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return b, prefixPath(jsonErr(ErrNoJSONForm, fmt.Sprintf("vector component %v", x)), strconv.Itoa(i))
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFloat(b, float64(x), 32)
		}
		return append(b, "]}"...), nil
	case KindArray:
		if depth >= MaxDepth {
			return b, jsonErr(ErrTooDeep, tooDeepDetail)
		}
		b = append(b, '[')
		for i, x := range v.arr() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, x, depth+1); err != nil {
				return b, prefixPath(err, strconv.Itoa(i))
			}
		}
		return append(b, ']'), nil
	}
	if depth >= MaxDepth {
		return b, jsonErr(ErrTooDeep, tooDeepDetail)
	}
	escape := len(v.m()) == 1 && isWrapperKey(v.m()[0].Key)
	if escape {
		b = append(b, `{"$map":`...)
	}
	b = append(b, '{')
	for i, f := range v.m() {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendString(b, f.Key); err != nil {
			return b, prefixPath(err, f.Key)
		}
		b = append(b, ':')
		if b, err = appendJSON(b, f.Value, depth+1); err != nil {
			return b, prefixPath(err, f.Key)
		}
	}
	b = append(b, '}')
	if escape {
		b = append(b, '}')
	}
	return b, nil
}

func isWrapperKey(k string) bool { return k == vectorKey || k == bytesKey || k == mapKey }

// appendFloat writes a finite float of bits 64 or 32 as encoding/json does
// (the shortest text that reads back to the same bits; exponent form below
// 1e-6 and from 1e21). A float64 always has a fraction or an exponent, so
// that it reads back as a float; a vector's float32 components need not.
func appendFloat(b []byte, f float64, bits int) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// e-07 → e-7, as encoding/json writes it
		if n := len(b); n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b
	}
	if bits == 32 {
		return b
	}
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}

// appendString writes s as a JSON string, escaping only what JSON
// requires. s must be valid UTF-8.
func appendString(b []byte, s string) ([]byte, error) {
	b = append(b, '"')
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			if r, n := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && n == 1 {
				return b, jsonErr(ErrNoJSONForm, fmt.Sprintf("invalid UTF-8 at byte %d of a string", i))
			} else {
				i += n
			}
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[last:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		last = i
	}
	b = append(b, s[last:]...)
	return append(b, '"'), nil
}

const hexDigits = "0123456789abcdef"
