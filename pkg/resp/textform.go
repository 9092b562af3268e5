package resp

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// AppendTextForm appends the text form of v to b: a rendering in the style
// of redis-cli's RESP3 output, which language models know well, and
// lossless against the JSON form ([Value.MarshalJSON]): [ParseTextForm]
// reads it back to a value with the same JSON form. It has no final
// newline. Compared with redis-cli, data costs the least:
//
//   - a bulk string (the data an agent reads) is written as it is, or
//     quoted when it could be mistaken for something else (empty,
//     surrounding space, non-printable bytes, a leading digit, quote or
//     parenthesis, or "=>"): "..." with \" \\ \n \r \t \a \b escaped,
//     other non-printable bytes (and invalid UTF-8) as \xHH; printable
//     UTF-8 as it is
//   - a simple string (a status) is labelled: (status) OK
//   - (integer) 5, (double) 1.5, (big number) 123..., (true), (false),
//     (nil) for every null (RESP3's, RESP2's null bulk string and array)
//   - (error) ERR ... for a simple error, (bulk error) "..." for a bulk
//     one
//   - (verbatim txt) "..." for a verbatim string and its format
//   - arrays as "1) ..." lines, sets "1~ ...", pushes "1> ...", maps
//     `1# key => value`, nested ones indented, and (empty array),
//     (empty set), (empty push), (empty hash)
//   - (attribute) and its entries as a map's, then on the next line the
//     reply it annotates
//
// It fails only for a Value no decoder produces, as MarshalJSON does.
func AppendTextForm(b []byte, v *Value) ([]byte, error) {
	return AppendTextFormIndent(b, v, 0)
}

// AppendTextFormIndent is AppendTextForm for a value written after indent
// columns of something else (a label): its lines after the first are
// indented by indent spaces, which [ParseTextFormPrefix] then expects.
func AppendTextFormIndent(b []byte, v *Value, indent int) ([]byte, error) {
	b, err := appendTF(b, v, indent, 0)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil // the final newline
}

// maxTextDepth bounds the nesting the text form writes and reads, as the
// decoder's own limit bounds what it produces.
const maxTextDepth = 1024

// appendTF appends v and a newline; lines after the first are indented
// by indent spaces.
func appendTF(b []byte, v *Value, indent, depth int) ([]byte, error) {
	if depth > maxTextDepth {
		return nil, fmt.Errorf("resp: text form: nested deeper than %d", maxTextDepth)
	}
	if v.Nil {
		return append(b, "(nil)\n"...), nil
	}
	switch v.Kind {
	case KindSimpleString:
		b = appendBareOrQuoted(append(b, statusLabel...), v.Str)
	case KindSimpleError:
		b = appendBareOrQuoted(append(b, "(error) "...), v.Str)
	case KindBulkError:
		b = appendQuotedTF(append(b, "(bulk error) "...), v.Str)
	case KindBulkString:
		if bareStart(v.Str) {
			b = append(b, v.Str...)
		} else {
			b = appendQuotedTF(b, v.Str)
		}
	case KindInteger:
		b = strconv.AppendInt(append(b, "(integer) "...), v.Int, 10)
	case KindDouble:
		b = appendBareOrQuoted(append(b, "(double) "...), v.Str)
	case KindBigNumber:
		b = appendBareOrQuoted(append(b, "(big number) "...), v.Str)
	case KindNull:
		b = append(b, "(nil)"...)
	case KindBoolean:
		if v.Bool {
			b = append(b, "(true)"...)
		} else {
			b = append(b, "(false)"...)
		}
	case KindVerbatim:
		b = append(b, "(verbatim "...)
		if alnum(v.Format) {
			b = append(b, v.Format...)
		} else {
			b = appendQuotedTF(b, []byte(v.Format))
		}
		b = appendQuotedTF(append(b, ") "...), v.Str)
	case KindArray, KindSet, KindPush, KindMap:
		return appendAggregateTF(b, v, indent, depth)
	case KindAttribute:
		if v.Wrapped == nil {
			return nil, fmt.Errorf("resp: attribute without the reply it annotates")
		}
		b = append(b, attributeLabel...)
		b, err := appendAggregateTF(b, v, indent+len(attributeLabel), depth)
		if err != nil {
			return nil, err
		}
		return appendTF(appendSpaces(b, indent), v.Wrapped, indent, depth+1)
	default:
		return nil, fmt.Errorf("resp: cannot write %s as text", v.Kind)
	}
	return append(b, '\n'), nil
}

const (
	attributeLabel = "(attribute) "
	statusLabel    = "(status) "
)

// aggregateSep is the character after an item's index for each aggregate
// kind, and emptyAggregate what an empty one is written as.
var (
	aggregateSep   = map[Kind]byte{KindArray: ')', KindSet: '~', KindPush: '>', KindMap: '#', KindAttribute: '#'}
	emptyAggregate = map[Kind]string{KindArray: "(empty array)", KindSet: "(empty set)", KindPush: "(empty push)",
		KindMap: "(empty hash)", KindAttribute: "(empty hash)"}
)

// appendAggregateTF appends an array, set, push or map (an attribute's
// entries) as redis-cli does: one item a line, each after its index
// right-aligned to the widest, nested items indented past the index.
func appendAggregateTF(b []byte, v *Value, indent, depth int) ([]byte, error) {
	isMap := v.Kind == KindMap || v.Kind == KindAttribute
	n := len(v.Elems)
	if isMap {
		if n%2 != 0 {
			return nil, fmt.Errorf("resp: %s with %d elements (want key/value pairs)", v.Kind, n)
		}
		n /= 2
	}
	if n == 0 {
		return append(append(b, emptyAggregate[v.Kind]...), '\n'), nil
	}
	width := len(strconv.Itoa(n))
	child := indent + width + 2
	var err error
	for i := range n {
		if i > 0 {
			b = appendSpaces(b, indent)
		}
		num := strconv.Itoa(i + 1)
		b = append(appendSpaces(b, width-len(num)), num...)
		b = append(b, aggregateSep[v.Kind], ' ')
		if !isMap {
			if b, err = appendTF(b, &v.Elems[i], child, depth+1); err != nil {
				return nil, err
			}
			continue
		}
		if b, err = appendTF(b, &v.Elems[2*i], child, depth+1); err != nil {
			return nil, err
		}
		b = append(b[:len(b)-1], " => "...)
		if b, err = appendTF(b, &v.Elems[2*i+1], child, depth+1); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendSpaces(b []byte, n int) []byte {
	for range n {
		b = append(b, ' ')
	}
	return b
}

// appendBareOrQuoted appends s after a type label: as it is when it reads
// back unchanged (bareAfterLabel), else quoted.
func appendBareOrQuoted(b, s []byte) []byte {
	if bareAfterLabel(s) {
		return append(b, s...)
	}
	return appendQuotedTF(b, s)
}

// bareAfterLabel reports whether s can be written unquoted after a type
// label: printable text, not empty, without surrounding space, not
// starting with a quote, without "=>" (which ends a map key).
func bareAfterLabel(s []byte) bool {
	if len(s) == 0 || s[0] == '"' || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c > 0x7e || c == '=' && i+1 < len(s) && s[i+1] == '>' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n <= 1 || !unicode.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}

// bareStart reports whether s can be written unquoted where a value
// starts (a bulk string): bareAfterLabel, and not starting as another
// value does (a label's parenthesis, an index's digit).
func bareStart(s []byte) bool {
	return bareAfterLabel(s) && s[0] != '(' && (s[0] < '0' || s[0] > '9')
}

// alnum reports whether s is a non-empty run of ASCII letters and digits.
func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

const hexDigits = "0123456789abcdef"

// tfEscapes is, for each byte a quoted string writes as a backslash
// escape other than \xHH, the letter after the backslash; tfUnescapes the
// reverse.
var (
	tfEscapes   = [256]byte{'\\': '\\', '"': '"', '\n': 'n', '\r': 'r', '\t': 't', '\a': 'a', '\b': 'b'}
	tfUnescapes = func() (u [256]byte) {
		for c, e := range tfEscapes {
			if e != 0 {
				u[e] = byte(c)
			}
		}
		return u
	}()
)

// appendQuotedTF appends s quoted as redis-cli quotes a bulk string
// (sdscatrepr), but with printable UTF-8 as it is: every byte exact.
func appendQuotedTF(b, s []byte) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(s[i:])
			if (r != utf8.RuneError || n > 1) && unicode.IsPrint(r) {
				b = append(b, s[i:i+n]...)
				i += n
				continue
			}
		}
		switch e := tfEscapes[c]; {
		case e != 0:
			b = append(b, '\\', e)
		case c < 0x20 || c > 0x7e:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
