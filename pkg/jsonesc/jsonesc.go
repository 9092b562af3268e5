// Package jsonesc writes text as a JSON string, byte for byte as
// encoding/json does (json.Marshal of a Go string, HTML escaping on), and
// faster, most on JSON text, whose quotes a tool result's text copy is
// dense in: [AppendQuoted] writes a string with its quotes, [Append] its
// contents only. [Pair] writes a JSON text and, beside it, the same text
// escaped as a JSON string's contents, for an encoder that serves both
// (the host's structured content and its text copy) without escaping the
// whole text again.
package jsonesc

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// AppendQuoted appends s to dst as a JSON string, quotes included, and
// returns the extended buffer. The bytes are exactly those encoding/json
// writes for a Go string with HTML escaping on (json.Marshal(s)): `\"`,
// `\\`, `\b`, `\f`, `\n`, `\r`, `\t`; the other control characters and `<`,
// `>`, `&` as `\u00XX`; U+2028 and U+2029 as `\u2028` and `\u2029`; each
// byte of invalid UTF-8 as `\ufffd`; every other byte as it is.
//
// It is faster than encoding/json and segmentio's encoder, most on JSON
// text, dense in quotes: it reads eight bytes at a time, writes them whole
// and then each `\"` or `\\` in place, with no copy call per run between
// escapes; long runs without escapes are copied at once. Other escapes and
// multi-byte characters go one at a time.
func AppendQuoted(dst []byte, s string) []byte {
	return appendEscaped(dst, s, true)
}

// Append appends the contents of the JSON string [AppendQuoted] writes for
// s, without its quotes. Escaping is per character, so the contents for a
// concatenation are the concatenation of the contents for its parts, when
// they are split between characters.
func Append(dst []byte, s string) []byte {
	return appendEscaped(dst, s, false)
}

// appendEscaped writes s escaped, between quotes when quoted.
func appendEscaped(dst []byte, s string, quoted bool) []byte {
	n := len(dst)
	buf := slices.Grow(dst, len(s)+escapeRoom)
	buf = buf[:cap(buf)]
	if quoted {
		buf[n] = '"'
		n++
	}
	for i := 0; ; {
		// Eight bytes at a time while they are ASCII written as they are
		// or with a backslash before them, as much as the room left
		// allows for the worst case (all of them escaped).
		for i+8 <= len(s) {
			if len(buf)-n < 2*escapeRoom {
				buf = growFrom(buf, n, len(s)-i)
			}
			c := min(len(s)-i, (len(buf)-n-escapeRoom)/2) &^ 7
			w, r := escapeWords(buf[n:], s[i:i+c])
			n += w
			i += r
			if r == c {
				continue
			}
			if i+8 > len(s) || !plainWord(loadWord(s, i)) {
				break // at a byte written otherwise
			}
			j := i + 8
			for j+8 <= len(s) && plainWord(loadWord(s, j)) {
				j += 8
			}
			buf, n = appendRun(buf, n, s[i:j], len(s)-j)
			i = j
		}
		if i == len(s) {
			break
		}
		// One byte or character at a time from a byte the words do not
		// handle (or the last bytes) until the next eight bytes are
		// ASCII; runs written as they are are copied at once.
		start, from := i, i
		for i < len(s) {
			c := s[i]
			if c < utf8.RuneSelf {
				e := escapes[c]
				if e == 0 {
					if i > from && i+8 <= len(s) && loadWord(s, i)&eachHigh == 0 {
						break
					}
					i++
					continue
				}
				buf, n = appendRun(buf, n, s[start:i], len(s)-i)
				if e&escapeOther == 0 {
					buf[n], buf[n+1] = byte(e), byte(e>>8)
					n += 2
				} else {
					buf[n], buf[n+1], buf[n+2], buf[n+3], buf[n+4], buf[n+5] = '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]
					n += 6
				}
				i++
				start = i
				continue
			}
			if size := shortChar(s, i); size > 0 {
				i += size
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if size > 1 && r != '\u2028' && r != '\u2029' {
				i += size
				continue
			}
			buf, n = appendRun(buf, n, s[start:i], len(s)-i)
			if size == 1 { // not UTF-8
				n += copy(buf[n:], `\ufffd`)
			} else {
				buf[n], buf[n+1], buf[n+2], buf[n+3], buf[n+4], buf[n+5] = '\\', 'u', '2', '0', '2', hexDigits[r&0xF]
				n += 6
			}
			i += size
			start = i
		}
		buf, n = appendRun(buf, n, s[start:i], len(s)-i)
	}
	if quoted {
		buf[n] = '"'
		n++
	}
	return buf[:n]
}

// shortChar returns the length of the character that begins at s[i], a
// byte >= 0x80, if it is valid UTF-8 of two or three bytes (RFC 3629's
// ranges) and not U+2028 or U+2029, and 0 otherwise: the common cases,
// without the call to utf8.
func shortChar(s string, i int) int {
	c := s[i]
	if c < 0xE0 {
		if c >= 0xC2 && i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			return 2
		}
		return 0
	}
	if c >= 0xF0 || i+2 >= len(s) {
		return 0
	}
	c1, c2 := s[i+1], s[i+2]
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c == 0xE0:
		lo = 0xA0
	case c == 0xED:
		hi = 0x9F // not a surrogate
	case c == 0xE2 && c1 == 0x80 && c2&^1 == 0xA8:
		return 0 // U+2028, U+2029
	}
	if c1 < lo || c1 > hi || c2&0xC0 != 0x80 {
		return 0
	}
	return 3
}

// escapeWords writes the whole words of eight bytes of s to dst, as
// appendEscaped does, as long as every byte is written as it is or is a
// `"` or `\`, which gets a backslash before it. It returns how many bytes
// it wrote and read: all of s, or up to the first byte written otherwise,
// or up to the fourth word in a row without escapes (the caller copies
// their run). A word takes sixteen bytes at most and writes up to 24 from
// where it starts, so dst must hold at least 2*len(s)+escapeRoom bytes.
func escapeWords(dst []byte, s string) (n, i int) {
	plain := 0 // words in a row written as they are
	for i+8 <= len(s) {
		x := loadWord(s, i)
		quotes, other := attention(x)
		o := (*[escapeRoom]byte)(dst[n : n+escapeRoom])
		binary.LittleEndian.PutUint64(o[:8], x)
		if quotes|other == 0 {
			// The fourth such word in a row is left to the caller,
			// which finds the rest of the run with a lighter test
			// and copies it at once.
			if plain++; plain == 4 {
				return n, i
			}
			n += 8
			i += 8
			continue
		}
		plain = 0
		quotes &= other - 1 // those before the first other byte, if any
		// For each quote, a backslash at its place, then it and the
		// bytes after it one place on.
		j := uint(0)
		for ; quotes != 0; quotes &= quotes - 1 {
			b := uint(bits.TrailingZeros64(quotes)) // 8 times its index, plus 7
			k := (b>>3 + j) & 15                    // its index plus the quotes before it: below 16
			binary.LittleEndian.PutUint64(o[k+1:k+9], x>>((b-7)&63))
			o[k] = '\\'
			j++
		}
		if other != 0 {
			k := bits.TrailingZeros64(other) >> 3
			return n + k + int(j), i + k
		}
		n += 8 + int(j)
		i += 8
	}
	return n, i
}

// escapeRoom is the free space appendEscaped keeps after its output:
// what escapeWords sees of a word's output (it writes up to 24 bytes
// from its start), or one escape after a run.
const escapeRoom = 32

// growFrom returns buf, whose first n bytes are kept, with room for at
// least rest+2*escapeRoom more bytes, and resliced to its capacity.
func growFrom(buf []byte, n, rest int) []byte {
	buf = slices.Grow(buf[:n], rest+2*escapeRoom)
	return buf[:cap(buf)]
}

// appendRun copies run to buf[n:] and returns buf and the new n, leaving
// escapeRoom free after it; rest is how much of the input follows the run.
func appendRun(buf []byte, n int, run string, rest int) ([]byte, int) {
	if len(buf)-n < len(run)+escapeRoom {
		buf = growFrom(buf, n, len(run)+rest)
	}
	return buf, n + copy(buf[n:], run)
}

// loadWord returns s[i:i+8] as a little-endian word: s[i] in its low
// byte. The compiler makes it one load.
func loadWord(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// Words of eight equal bytes.
const (
	eachOne  = 0x0101010101010101
	eachHigh = 0x8080808080808080
	eachLow7 = 0x7f7f7f7f7f7f7f7f
)

// attention returns two masks of the bytes of x: the high bit of each `"`
// and `\`, and the high bit of each other byte not written as it is: a
// control character, `<`, `>`, `&`, or a byte >= 0x80. Each test works on
// the low seven bits of a byte, so no carry crosses into the next byte and
// every bit is exact.
func attention(x uint64) (quotes, other uint64) {
	t := x & eachLow7
	// A byte of each sum has its high bit clear exactly when the byte
	// matches: what the xor takes away, or below 0x20.
	quote := (t ^ eachOne*'"') + eachLow7
	backslash := (t ^ eachOne*'\\') + eachLow7
	amp := (t ^ eachOne*'&') + eachLow7
	angle := ((t | eachOne*0x02) ^ eachOne*'>') + eachLow7 // `<` (0x3c) and `>` (0x3e)
	below := t + eachOne*(0x80-0x20)
	return ^(quote&backslash | x) & eachHigh, (x | ^(amp & angle & below)) & eachHigh
}

// plainWord reports whether every byte of x is written as it is: the
// test of attention in fewer steps (`"` and `&` differ in one bit, as do
// `<` and `>`).
func plainWord(x uint64) bool {
	t := x & eachLow7
	quoteAmp := ((t | eachOne*0x04) ^ eachOne*'&') + eachLow7
	angle := ((t | eachOne*0x02) ^ eachOne*'>') + eachLow7
	backslash := (t ^ eachOne*'\\') + eachLow7
	below := t + eachOne*(0x80-0x20)
	return (x|^(quoteAmp&angle&backslash&below))&eachHigh == 0
}

// escapes[c] says how appendEscaped writes the byte c: 0 as it is;
// with escapeTwo, as the entry's low two bytes, a backslash and a letter;
// with escapeOther, as \u00XX, or, for a byte >= 0x80, as its character
// decodes.
var escapes = func() (t [256]uint32) {
	for c := range t {
		switch {
		case c >= utf8.RuneSelf || c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = escapeOther
		case c == '"' || c == '\\':
			t[c] = twoByteEscape(byte(c))
		}
	}
	t['\b'], t['\f'], t['\n'] = twoByteEscape('b'), twoByteEscape('f'), twoByteEscape('n')
	t['\r'], t['\t'] = twoByteEscape('r'), twoByteEscape('t')
	return t
}()

// Flags of the entries of escapes.
const (
	escapeTwo   = 1 << 16 // a two-byte escape
	escapeOther = 1 << 17 // \u00XX, or a byte >= 0x80
)

// twoByteEscape is the entry of escapes for a byte written as a backslash
// and the letter.
func twoByteEscape(letter byte) uint32 {
	return escapeTwo | uint32(letter)<<8 | '\\'
}

const hexDigits = "0123456789abcdef"

// Pair is a JSON text being written together with its text form: the same
// JSON escaped as the contents of a JSON string, what [Append] writes for
// it. An encoder that serves both (a tool result's structured content and
// its text copy) writes its fixed pieces as [Literal]s, escaped once when
// made, and the rest with Write or Mirror, which escape only those bytes:
// the text is then not escaped again as a whole, and its quotes, most of
// the escaping work on JSON, come ready-made with the literals.
//
// With JSONOnly, Text is left as it is: one encoder serves callers that
// want the JSON alone.
type Pair struct {
	JSON, Text []byte
	JSONOnly   bool
}

// Literal is a fixed piece of JSON text and its escaped form.
type Literal struct{ json, text string }

// Lit returns the Literal of json, a piece of JSON text that splits a
// text between characters (as every piece between tokens does).
func Lit(json string) Literal {
	return Literal{json: json, text: string(Append(nil, json))}
}

// Lit appends l.
func (p *Pair) Lit(l Literal) {
	p.JSON = append(p.JSON, l.json...)
	if !p.JSONOnly {
		p.Text = append(p.Text, l.text...)
	}
}

// Write appends b, a piece of JSON text split between characters, to JSON,
// and its escaped form to Text.
func (p *Pair) Write(b []byte) {
	p.JSON = append(p.JSON, b...)
	if !p.JSONOnly {
		p.Text = appendEscapedBytes(p.Text, b)
	}
}

// Mirror appends to Text the escaped form of JSON[from:], what an encoder
// appended to JSON itself since JSON held from bytes (a number, a string
// another encoder escaped); it must end between characters.
func (p *Pair) Mirror(from int) {
	if !p.JSONOnly {
		p.Text = appendEscapedBytes(p.Text, p.JSON[from:])
	}
}

// appendEscapedBytes appends Append's escaped form of b. A short b whose
// bytes are all written as they are (a word, a number) is copied without
// the escaper's setup.
func appendEscapedBytes(dst, b []byte) []byte {
	if len(b) <= shortPiece {
		for _, c := range b {
			if escapes[c] != 0 {
				return appendEscaped(dst, unsafe.String(unsafe.SliceData(b), len(b)), false)
			}
		}
		return append(dst, b...)
	}
	return appendEscaped(dst, unsafe.String(unsafe.SliceData(b), len(b)), false)
}

// shortPiece is the longest piece appendEscapedBytes checks byte by byte
// before it calls the escaper.
const shortPiece = 32
