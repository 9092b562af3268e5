package jsonscan

import "bytes"

// MemberFinder finds one top-level member of a JSON object whose text
// arrives in pieces ([MemberFinder.Write]), keeping nothing of it but the
// member's key while it is read and the member's value: its memory use is
// bounded by the longest value it keeps, whatever the length of the text.
// It matches brackets outside strings and does not validate, as [Members]
// does, and it decides on the first member with the name: a later one is
// not looked for. Only a value that is a string, a number or a literal is
// kept (an object or an array is not), and only when it is at most the
// given size and certainly complete: a number or a literal must be followed
// by a delimiter.
//
// It lets a reader recover the id of a request line too long to keep (see
// package stdio), wherever the id is in the line.
type MemberFinder struct {
	name  string
	max   int
	st    uint8
	depth int    // nesting inside a member's object or array value
	inStr bool   // inside a string within such a value
	esc   bool   // the last byte read in a string is an unescaped backslash
	key   []byte // the current key's text, quotes included, while it is short
	long  bool   // the current key is longer than any spelling of name
	match bool   // the current member is the one looked for
	value []byte // the value kept (match), or nil
	found bool
}

const (
	fsBefore     uint8 = iota // before the object's opening brace
	fsKeyOrEnd                // after the brace or a comma: a key, or the closing brace
	fsKey                     // inside a key
	fsColon                   // after a key
	fsValueStart              // after the colon
	fsString                  // inside a string value
	fsNested                  // inside an object or array value
	fsScalar                  // inside a number or literal value
	fsAfterValue              // after a value: a comma or the closing brace
	fsDone                    // decided
)

// NewMemberFinder returns a MemberFinder looking for the member name (as
// [KeyIs] compares keys) whose value has at most maxValue bytes.
func NewMemberFinder(name string, maxValue int) MemberFinder {
	return MemberFinder{name: name, max: maxValue}
}

// Done reports whether the search is decided: the member was found, or
// the text can no longer hold it (the object ended, it is not an object,
// or the member's value is not one that is kept). Write ignores what it is
// given once the search is decided.
func (f *MemberFinder) Done() bool { return f.st == fsDone }

// Value returns the member's value as raw JSON once found, or nil.
func (f *MemberFinder) Value() []byte {
	if !f.found {
		return nil
	}
	return f.value
}

// maxKeyBytes is the longest key text kept: every key of name's length
// spelled with \u escapes, quotes included, is at most this long.
func (f *MemberFinder) maxKeyBytes() int { return 6*len(f.name) + 2 }

// Write scans the next piece of the text and reports whether the search
// is decided (see Done). p is not kept.
func (f *MemberFinder) Write(p []byte) bool {
	for i := 0; i < len(p) && f.st != fsDone; {
		i = f.step(p, i)
	}
	return f.st == fsDone
}

// step scans p from i in the current state and returns where to go on.
func (f *MemberFinder) step(p []byte, i int) int {
	c := p[i]
	switch f.st {
	case fsBefore:
		if isSpace(c) {
			return i + 1
		}
		if c != '{' {
			return f.stop()
		}
		f.st = fsKeyOrEnd
	case fsKeyOrEnd:
		switch {
		case isSpace(c):
		case c == '"':
			f.key, f.long, f.esc = append(f.key[:0], c), false, false
			f.st = fsKey
		default: // the closing brace, or not an object
			return f.stop()
		}
	case fsKey:
		return f.keyBytes(p, i)
	case fsColon:
		switch {
		case isSpace(c):
		case c == ':':
			f.match = !f.long && KeyIs(f.key, f.name)
			f.st = fsValueStart
		default:
			return f.stop()
		}
	case fsValueStart:
		return f.valueStart(p, i)
	case fsString:
		return f.stringBytes(p, i)
	case fsNested:
		return f.nestedBytes(p, i)
	case fsScalar:
		return f.scalarBytes(p, i)
	case fsAfterValue:
		switch {
		case isSpace(c):
		case c == ',':
			f.st = fsKeyOrEnd
		default:
			return f.stop()
		}
	}
	return i + 1
}

// keyBytes reads a key's text from p[i], keeping it while it could be name.
func (f *MemberFinder) keyBytes(p []byte, i int) int {
	end, closed := f.stringEnd(p, i)
	if !f.long {
		if len(f.key)+end-i > f.maxKeyBytes() {
			f.long = true
		} else {
			f.key = append(f.key, p[i:end]...)
		}
	}
	if closed {
		f.st = fsColon
	}
	return end
}

// valueStart begins a member's value at p[i].
func (f *MemberFinder) valueStart(p []byte, i int) int {
	c := p[i]
	switch {
	case isSpace(c):
		return i + 1
	case c == '{' || c == '[':
		if f.match {
			return f.stop() // not a value that is kept
		}
		f.depth, f.inStr, f.esc = 1, false, false
		f.st = fsNested
		return i + 1
	case c == ',' || c == '}' || c == ']' || c == ':':
		return f.stop() // no value
	case c == '"':
		f.esc = false
		f.st = fsString
	default:
		f.st = fsScalar
	}
	if f.match {
		f.value = append(f.value[:0], c)
	}
	return i + 1
}

// stringBytes reads a string value from p[i].
func (f *MemberFinder) stringBytes(p []byte, i int) int {
	end, closed := f.stringEnd(p, i)
	if f.match && !f.keep(p[i:end]) {
		return f.stop()
	}
	if closed {
		if f.match {
			f.found = true
			return f.stop()
		}
		f.st = fsAfterValue
	}
	return end
}

// scalarBytes reads a number or literal from p[i], up to its delimiter.
func (f *MemberFinder) scalarBytes(p []byte, i int) int {
	j := i
	for j < len(p) && !isDelimiter(p[j]) {
		j++
	}
	if f.match && !f.keep(p[i:j]) {
		return f.stop()
	}
	if j == len(p) {
		return j
	}
	if f.match {
		f.found = true
		return f.stop()
	}
	f.st = fsAfterValue
	return j // the delimiter is read in fsAfterValue
}

// nestedBytes skips an object or array value from p[i].
func (f *MemberFinder) nestedBytes(p []byte, i int) int {
	for ; i < len(p); i++ {
		if f.inStr {
			end, closed := f.stringEnd(p, i)
			if !closed {
				return end
			}
			f.inStr, i = false, end-1
			continue
		}
		switch p[i] {
		case '"':
			f.inStr, f.esc = true, false
		case '{', '[':
			f.depth++
		case '}', ']':
			if f.depth--; f.depth == 0 {
				f.st = fsAfterValue
				return i + 1
			}
		}
	}
	return i
}

// stringEnd finds, from p[i] inside a string, the index after its closing
// quote (closed) or len(p) (not closed yet), carrying an escape across
// pieces in f.esc.
func (f *MemberFinder) stringEnd(p []byte, i int) (end int, closed bool) {
	for i < len(p) {
		if f.esc {
			f.esc = false
			i++
			continue
		}
		k := bytes.IndexAny(p[i:], `"\`)
		if k < 0 {
			return len(p), false
		}
		i += k
		if p[i] == '\\' {
			f.esc = true
			i++
			continue
		}
		return i + 1, true
	}
	return len(p), false
}

// keep appends b to the value kept, reporting false when it grows past max.
func (f *MemberFinder) keep(b []byte) bool {
	if len(f.value)+len(b) > f.max {
		f.value = nil
		return false
	}
	f.value = append(f.value, b...)
	return true
}

// stop decides the search.
func (f *MemberFinder) stop() int {
	f.st = fsDone
	return int(^uint(0) >> 1) // past any piece: Write's loop ends
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDelimiter(c byte) bool {
	return c == ',' || c == '}' || c == ']' || isSpace(c)
}
