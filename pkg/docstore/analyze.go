package docstore

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"github.com/kljensen/snowball/french"
	"github.com/kljensen/snowball/hungarian"
	"github.com/kljensen/snowball/norwegian"
	"github.com/kljensen/snowball/russian"
	"github.com/kljensen/snowball/spanish"
	"github.com/kljensen/snowball/swedish"
	"github.com/rivo/uniseg"
	"golang.org/x/text/unicode/norm"
)

// The text analyzer turns text into terms with positions, the same way
// for indexed text and for queries:
//
//  1. words are found by Unicode word segmentation (UAX #29, through
//     github.com/rivo/uniseg); a segment without a letter or a digit
//     (spaces, punctuation) is not a word;
//  2. each word is normalized (NFKC, golang.org/x/text) and lowercased;
//  3. with stop words on, the language's stop words are dropped (they
//     keep their position, so a phrase does not close the gap);
//  4. with stemming on, each word is reduced to its Snowball stem
//     (github.com/kljensen/snowball, which also holds the stop lists).
//
// A word's position is its number among the words of its field (0
// first), stop words included; each further value of an array field
// starts positionGap after the previous one, so that a phrase never spans
// two values.

// TextLanguages are the languages a text index may stem and drop stop
// words in.
var TextLanguages = []string{"english", "french", "hungarian", "norwegian", "russian", "spanish", "swedish"}

// snowballLanguages are the Snowball stemmer and stop list of each of
// TextLanguages.
var snowballLanguages = map[string]struct {
	stem func(word string, stemStopWords bool) string
	stop func(word string) bool
}{
	"english":   {english.Stem, english.IsStopWord},
	"french":    {french.Stem, french.IsStopWord},
	"hungarian": {hungarian.Stem, hungarian.IsStopWord},
	"norwegian": {norwegian.Stem, norwegian.IsStopWord},
	"russian":   {russian.Stem, russian.IsStopWord},
	"spanish":   {spanish.Stem, spanish.IsStopWord},
	"swedish":   {swedish.Stem, swedish.IsStopWord},
}

// MaxTermBytes is the longest word indexed, in bytes after
// normalization; a longer word keeps its position but is not indexed
// (nor matched in a query).
const MaxTermBytes = 256

// positionGap separates the values of an array field: the first word of
// a value is positionGap+1 positions after the last word of the previous
// one, more than MaxSlop.
const positionGap = 128

// analyzer is a text index's analysis.
type analyzer struct {
	stem func(string, bool) string // nil: no stemming
	stop func(string) bool         // nil: no stop words
}

// newAnalyzer returns def's analyzer; def is valid (checkTextDef).
func newAnalyzer(def TextIndexDef) analyzer {
	var a analyzer
	l := snowballLanguages[def.Language]
	if def.Stem {
		a.stem = l.stem
	}
	if def.StopWords {
		a.stop = l.stop
	}
	return a
}

// terms calls fn with each term of text and its position, numbering
// words from pos, and returns the position after the last word.
func (a analyzer) terms(text string, pos int, fn func(term string, pos int)) int {
	word := func(w string) {
		p := pos
		pos++
		t := fold(w)
		if len(t) > MaxTermBytes || (a.stop != nil && a.stop(t)) {
			return
		}
		if a.stem != nil {
			t = a.stem(t, true)
		}
		fn(t, p)
	}
	if isASCII(text) {
		asciiWords(text, word)
		return pos
	}
	state := -1
	for len(text) > 0 {
		var w string
		w, text, state = uniseg.FirstWordInString(text, state)
		if isWord(w) {
			word(w)
		}
	}
	return pos
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Word break classes of ASCII characters (UAX #29), as far as words with
// a letter or a digit depend on them.
const (
	wbOther     = iota
	wbLetter    // ALetter
	wbDigit     // Numeric
	wbUnderline // ExtendNumLet
	wbMidLetter // ':'
	wbMidNum    // ',' ';'
	wbMidNumLet // '.' and the single quote (MidNumLetQ)
)

var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for r := 'a'; r <= 'z'; r++ {
		c[r], c[r-'a'+'A'] = wbLetter, wbLetter
	}
	for r := '0'; r <= '9'; r++ {
		c[r] = wbDigit
	}
	c['_'], c[':'], c[','], c[';'], c['.'], c['\''] = wbUnderline, wbMidLetter, wbMidNum, wbMidNum, wbMidNumLet, wbMidNumLet
	return c
}()

// asciiWords calls fn with the words of an ASCII text that hold a letter
// or a digit, as Unicode word segmentation finds them (rules WB5 to WB13b
// of UAX #29; uniseg is the reference the tests compare with), without
// its general machinery.
func asciiWords(s string, fn func(string)) {
	for i := 0; i < len(s); {
		c := asciiClass[s[i]]
		if c != wbLetter && c != wbDigit && c != wbUnderline {
			i++
			continue
		}
		start, word := i, c != wbUnderline
		prev := c
	scan:
		for i++; i < len(s); i++ {
			c := asciiClass[s[i]]
			switch {
			case c == wbLetter || c == wbDigit || c == wbUnderline: // WB5, WB8-10, WB13a-b
			case i+1 < len(s) && prev == wbLetter && (c == wbMidLetter || c == wbMidNumLet) && asciiClass[s[i+1]] == wbLetter: // WB6-7
				i++
				c = wbLetter
			case i+1 < len(s) && prev == wbDigit && (c == wbMidNum || c == wbMidNumLet) && asciiClass[s[i+1]] == wbDigit: // WB11-12
				i++
				c = wbDigit
			default:
				break scan
			}
			word = word || c != wbUnderline
			prev = c
		}
		if word {
			fn(s[start:i])
		}
	}
}

// isWord reports whether a word segment holds a letter or a digit.
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) >= 0
		}
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			return true
		}
	}
	return false
}

// fold normalizes and lowercases a word.
func fold(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			return strings.ToLower(norm.NFKC.String(w))
		}
	}
	for i := 0; i < len(w); i++ {
		if 'A' <= w[i] && w[i] <= 'Z' {
			return strings.ToLower(w)
		}
	}
	return w
}

// textValues calls fn with each text reached by the dotted path in doc,
// in document order: through maps, and into every element of the arrays
// on the way (and at its end).
func textValues(doc Value, path string, fn func(string)) {
	key, rest, more := strings.Cut(path, ".")
	var walk func(v Value, key, rest string, more bool)
	walk = func(v Value, key, rest string, more bool) {
		if items, ok := v.Array(); ok {
			for _, x := range items {
				walk(x, key, rest, more)
			}
			return
		}
		f, ok := v.Get(key)
		if !ok {
			return
		}
		if more {
			k, r, m := strings.Cut(rest, ".")
			walk(f, k, r, m)
			return
		}
		emitText(f, fn)
	}
	walk(doc, key, rest, more)
}

// emitText calls fn with v when it is a text, and with the texts of an
// array, at any depth.
func emitText(v Value, fn func(string)) {
	if t, ok := v.Text(); ok {
		fn(t)
		return
	}
	if items, ok := v.Array(); ok {
		for _, x := range items {
			emitText(x, fn)
		}
	}
}

// queryTerms analyzes a query: its distinct terms, in order of first
// appearance.
func (a analyzer) queryTerms(text string) []string {
	var terms []string
	a.terms(text, 0, func(t string, _ int) {
		if !slices.Contains(terms, t) {
			terms = append(terms, t)
		}
	})
	return terms
}
