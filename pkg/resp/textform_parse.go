package resp

import (
	"bytes"
	"fmt"
	"strconv"
)

// ParseTextForm reads the text form of one value ([AppendTextForm]) back:
// the value it returns has the JSON form of the value written (a null is
// KindNull, as the JSON form does not tell RESP2's nulls apart). Anything
// but exactly one value's text form is an error saying where.
func ParseTextForm(text []byte) (Value, error) {
	v, n, err := ParseTextFormPrefix(text, 0)
	if err != nil {
		return Value{}, err
	}
	if n != len(text) {
		return Value{}, fmt.Errorf("resp: text form: unexpected %q after the value", clip(text[n:]))
	}
	return v, nil
}

// ParseTextFormPrefix reads the value whose text form text begins with,
// written by [AppendTextFormIndent] with indent, and returns it and the
// length of its text (the newline after it is not part of it).
func ParseTextFormPrefix(text []byte, indent int) (Value, int, error) {
	p := tfParser{s: text}
	v, err := p.value(indent, false, 0)
	if err != nil {
		return Value{}, 0, err
	}
	return v, p.i, nil
}

// tfParser reads a text form from s, at i.
type tfParser struct {
	s []byte
	i int
}

func (p *tfParser) errorf(format string, args ...any) error {
	return fmt.Errorf("resp: text form at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// take moves past lit when it comes next.
func (p *tfParser) take(lit string) bool {
	if bytes.HasPrefix(p.s[p.i:], []byte(lit)) {
		p.i += len(lit)
		return true
	}
	return false
}

// The labels of scalars, as appendTF writes them.
var tfScalars = []struct {
	label string
	v     Value
}{
	{"(nil)", Value{Kind: KindNull}},
	{"(true)", Value{Kind: KindBoolean, Bool: true}},
	{"(false)", Value{Kind: KindBoolean}},
	{"(empty array)", Value{Kind: KindArray, Elems: []Value{}}},
	{"(empty set)", Value{Kind: KindSet, Elems: []Value{}}},
	{"(empty push)", Value{Kind: KindPush, Elems: []Value{}}},
	{"(empty hash)", Value{Kind: KindMap, Elems: []Value{}}},
}

// The labels of texts: bare or quoted after the label.
var tfTexts = []struct {
	label  string
	kind   Kind
	quoted bool // always quoted
}{
	{statusLabel, KindSimpleString, false},
	{"(error) ", KindSimpleError, false},
	{"(bulk error) ", KindBulkError, true},
	{"(double) ", KindDouble, false},
	{"(big number) ", KindBigNumber, false},
}

// value reads one value; lines after its first are indented by indent
// spaces. In a map key (key), a bare text ends before " => ".
func (p *tfParser) value(indent int, key bool, depth int) (Value, error) {
	if depth > maxTextDepth {
		return Value{}, p.errorf("nested deeper than %d", maxTextDepth)
	}
	if p.i >= len(p.s) {
		return Value{}, p.errorf("a value is missing")
	}
	switch c := p.s[p.i]; {
	case c == '"':
		s, err := p.quoted()
		return Value{Kind: KindBulkString, Str: s}, err
	case c == ' ' || '0' <= c && c <= '9':
		return p.aggregate(indent, key, depth)
	case c != '(':
		return p.bare(KindBulkString, key, bareStart)
	}
	for _, sc := range tfScalars {
		if p.take(sc.label) {
			return sc.v, nil
		}
	}
	for _, t := range tfTexts {
		if !p.take(t.label) {
			continue
		}
		if t.quoted || p.i < len(p.s) && p.s[p.i] == '"' {
			s, err := p.quoted()
			return Value{Kind: t.kind, Str: s}, err
		}
		return p.bare(t.kind, key, bareAfterLabel)
	}
	switch {
	case p.take("(integer) "):
		start := p.i
		for p.i < len(p.s) && (p.s[p.i] == '-' || '0' <= p.s[p.i] && p.s[p.i] <= '9') {
			p.i++
		}
		n, err := strconv.ParseInt(string(p.s[start:p.i]), 10, 64)
		if err != nil {
			return Value{}, p.errorf("integer %q: %v", p.s[start:p.i], err)
		}
		return Value{Kind: KindInteger, Int: n}, nil
	case p.take("(verbatim "):
		return p.verbatim()
	case p.take(attributeLabel):
		attr := Value{Kind: KindMap, Elems: []Value{}}
		if !p.take(emptyAggregate[KindMap]) {
			var err error
			if attr, err = p.aggregate(indent+len(attributeLabel), key, depth); err != nil {
				return Value{}, err
			}
		}
		if attr.Kind != KindMap {
			return Value{}, p.errorf("an attribute's entries are a map, not %s", attr.Kind)
		}
		if !p.newline(indent) {
			return Value{}, p.errorf("the reply an attribute annotates is missing")
		}
		wrapped, err := p.value(indent, key, depth+1)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: KindAttribute, Elems: attr.Elems, Wrapped: &wrapped}, nil
	}
	return Value{}, p.errorf("unknown label %q", clip(p.s[p.i:]))
}

// bare reads a text of kind written as it is, to the end of the line or,
// in a map key, to " => "; it must be one that reads back as written
// (valid).
func (p *tfParser) bare(kind Kind, key bool, valid func([]byte) bool) (Value, error) {
	start := p.i
	end := bytes.IndexByte(p.s[start:], '\n')
	if end < 0 {
		end = len(p.s) - start
	}
	if key {
		if k := bytes.Index(p.s[start:start+end], []byte(" => ")); k >= 0 {
			end = k
		}
	}
	s := p.s[start : start+end : start+end]
	if !valid(s) {
		return Value{}, p.errorf("%q is not a %s written as it is (quote it)", clip(s), kind)
	}
	p.i = start + end
	return Value{Kind: kind, Str: s}, nil
}

// quoted reads a quoted string (appendQuotedTF).
func (p *tfParser) quoted() ([]byte, error) {
	if !p.take(`"`) {
		return nil, p.errorf("a quoted string is missing")
	}
	var out []byte
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			if out == nil {
				out = []byte{}
			}
			return out, nil
		case '\n':
			return nil, p.errorf("a quoted string ends at the end of its line")
		case '\\':
			if p.i >= len(p.s) {
				return nil, p.errorf("a quoted string ends in an escape")
			}
			e := p.s[p.i]
			p.i++
			switch u := tfUnescapes[e]; {
			case u != 0:
				out = append(out, u)
			case e == 'x':
				if p.i+2 > len(p.s) {
					return nil, p.errorf("a \\x escape needs two hex digits")
				}
				n, err := strconv.ParseUint(string(p.s[p.i:p.i+2]), 16, 8)
				if err != nil {
					return nil, p.errorf("a \\x escape needs two hex digits, not %q", p.s[p.i:p.i+2])
				}
				out = append(out, byte(n))
				p.i += 2
			default:
				return nil, p.errorf("unknown escape \\%c", e)
			}
		default:
			out = append(out, c)
		}
	}
	return nil, p.errorf("a quoted string is not closed")
}

// verbatim reads a verbatim string after its label: the format, ") " and
// the quoted text.
func (p *tfParser) verbatim() (Value, error) {
	var format []byte
	if p.i < len(p.s) && p.s[p.i] == '"' {
		f, err := p.quoted()
		if err != nil {
			return Value{}, err
		}
		format = f
	} else {
		start := p.i
		for p.i < len(p.s) && alnum(string(p.s[p.i:p.i+1])) {
			p.i++
		}
		format = p.s[start:p.i]
	}
	if !p.take(") ") {
		return Value{}, p.errorf("a verbatim string's format ends with \") \"")
	}
	s, err := p.quoted()
	return Value{Kind: KindVerbatim, Format: string(format), Str: s}, err
}

// newline moves past a newline and indent spaces when they come next.
func (p *tfParser) newline(indent int) bool {
	if p.i >= len(p.s) || p.s[p.i] != '\n' || len(p.s)-p.i-1 < indent {
		return false
	}
	for _, c := range p.s[p.i+1 : p.i+1+indent] {
		if c != ' ' {
			return false
		}
	}
	p.i += 1 + indent
	return true
}

// index reads an item's index, right-aligned to width when width > 0 (its
// width otherwise), and the separator and space after it.
func (p *tfParser) index(width int) (n, w int, sep byte, ok bool) {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || p.i+1 >= len(p.s) || p.s[p.i+1] != ' ' || p.s[digits] == '0' {
		p.i = start
		return 0, 0, 0, false
	}
	w, sep = p.i-start, p.s[p.i]
	if width > 0 && w != width {
		p.i = start
		return 0, 0, 0, false
	}
	n, _ = strconv.Atoi(string(p.s[digits:p.i]))
	p.i += 2
	return n, w, sep, true
}

// aggregate reads an array, set, push or map: its items, one a line after
// their indexes. In a map key (key), its last item ends before " => ", and
// so may any of its items: a bare text never holds "=>".
func (p *tfParser) aggregate(indent int, key bool, depth int) (Value, error) {
	n, width, sep, ok := p.index(0)
	if !ok || n != 1 {
		return Value{}, p.errorf("an item's index (1) is expected, not %q", clip(p.s[p.i:]))
	}
	var v Value
	switch sep {
	case ')':
		v.Kind = KindArray
	case '~':
		v.Kind = KindSet
	case '>':
		v.Kind = KindPush
	case '#':
		v.Kind = KindMap
	default:
		return Value{}, p.errorf("unknown index separator %q", sep)
	}
	child := indent + width + 2
	for i := 1; ; i++ {
		if v.Kind == KindMap {
			k, err := p.value(child, true, depth+1)
			if err != nil {
				return Value{}, err
			}
			if !p.take(" => ") {
				return Value{}, p.errorf(`" => " is expected after a map key`)
			}
			val, err := p.value(child, key, depth+1)
			if err != nil {
				return Value{}, err
			}
			v.Elems = append(v.Elems, k, val)
		} else {
			item, err := p.value(child, key, depth+1)
			if err != nil {
				return Value{}, err
			}
			v.Elems = append(v.Elems, item)
		}
		// The next item: a newline, indent spaces and index i+1.
		save := p.i
		if !p.newline(indent) {
			return v, nil
		}
		next, _, nsep, ok := p.index(width)
		if !ok || next != i+1 || nsep != sep {
			p.i = save
			return v, nil
		}
	}
}
