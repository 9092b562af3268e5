package jsonesc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// marshalString is encoding/json's encoding of s, the reference.
func marshalString(t testing.TB, s string) []byte {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// checkEscape: AppendQuoted writes what json.Marshal writes for s, after
// what dst held, and Append the same without the quotes.
func checkEscape(t *testing.T, dst []byte, s string) {
	t.Helper()
	prefix := string(dst)
	want := string(marshalString(t, s))
	if got := AppendQuoted(dst, s); string(got) != prefix+want {
		t.Errorf("AppendQuoted(%q, %q)\n got %q\nwant %q", prefix, s, got, prefix+want)
	}
	unquoted := want[1 : len(want)-1]
	if got := Append(dst[:len(prefix):len(prefix)], s); string(got) != prefix+unquoted {
		t.Errorf("Append(%q, %q)\n got %q\nwant %q", prefix, s, got, prefix+unquoted)
	}
}

// TestEscapeClasses: each escape class written as encoding/json writes it,
// against the literal bytes, and every string equal to json.Marshal's.
func TestEscapeClasses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`"`, `"\""`},
		{`\`, `"\\"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x0b\x1f", `"\u0000\u0001\u000b\u001f"`},
		{" \x7f~", "\" \x7f~\""},
		{"<a href='x'>&amp;</a>", `"\u003ca href='x'\u003e\u0026amp;\u003c/a\u003e"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"\u2027\u202a", "\"\u2027\u202a\""}, // the neighbours are not escaped
		{"é ü 日本 🙂 \ufffd", "\"é ü 日本 🙂 \ufffd\""},
		{"\xff", `"\ufffd"`},
		{"a\xffb", `"a\ufffdb"`},
		{"\xc3", `"\ufffd"`},                               // truncated two-byte character at the end
		{"\xe2\x80", `"\ufffd\ufffd"`},                     // truncated three-byte character, a byte each
		{"\xe2\x80x", `"\ufffd\ufffdx"`},                   // and not at the end
		{"\xc0\x80", `"\ufffd\ufffd"`},                     // overlong
		{"\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},           // surrogate
		{"\xf4\x90\x80\x80", `"\ufffd\ufffd\ufffd\ufffd"`}, // beyond U+10FFFF
		{"é\xffü\u2028日", `"é\ufffdü\u2028日"`},
		{`{"type":"simple_string","encoding":"utf8","value":"OK"}`,
			`"{\"type\":\"simple_string\",\"encoding\":\"utf8\",\"value\":\"OK\"}"`},
	} {
		if got := AppendQuoted(nil, c.in); string(got) != c.want {
			t.Errorf("AppendQuoted(%q) = %s, want %s", c.in, got, c.want)
		}
		checkEscape(t, nil, c.in)
	}
}

// TestEscapeAllBytes: every single byte, alone and in the middle of a run
// long enough to be read eight bytes at a time.
func TestEscapeAllBytes(t *testing.T) {
	for c := range 256 {
		checkEscape(t, nil, string([]byte{byte(c)}))
		checkEscape(t, nil, "abcdefghij"+string([]byte{byte(c)})+"klmnopqrstuvwxyz")
	}
}

// TestEscapeRunBoundaries: a byte needing attention at every position of
// strings of every length around the eight-byte words, so that it falls
// first, last, inside a word, across words and in the tail; and two of them
// in one word, where the borrow of the first may mark its neighbour.
func TestEscapeRunBoundaries(t *testing.T) {
	t.Parallel()
	specials := []string{`"`, `\`, "\n", "\x00", "\x1f", "<", ">", "&", "é", "\u2028", "\xff", "日", "🙂"}
	for n := range 26 {
		for p := 0; p < n; p++ {
			for _, sp := range specials {
				checkEscape(t, nil, strings.Repeat("a", p)+sp+strings.Repeat("b", n-p))
				for _, sp2 := range specials {
					checkEscape(t, nil, strings.Repeat("a", p)+sp+sp2+strings.Repeat("b", n-p))
				}
			}
		}
	}
	// Runs without escapes long enough to be copied at once (four
	// words and more), between escapes of each kind.
	for n := 24; n < 90; n++ {
		checkEscape(t, nil, `"`+strings.Repeat("p", n)+`\`+strings.Repeat("q", n%13)+"\n"+strings.Repeat("r", n)+"é"+strings.Repeat("s", n))
	}
	// Neighbours of the special bytes that the word test must let through.
	for _, c := range "!#$%'()=;?[]{}@AZaz09 ~\x20\x21\x23\x27\x3b\x3d\x3f\x5b\x5d\x7f" {
		checkEscape(t, nil, strings.Repeat(string(c), 17))
	}
}

// TestEscapeMultiByte: every lead byte >= 0x80 with every second byte and
// the third bytes at the edges of UTF-8's ranges, inside a string and cut
// short at its end: valid characters kept, U+2028/9 escaped, each byte of
// anything else replaced.
func TestEscapeMultiByte(t *testing.T) {
	t.Parallel()
	thirds := []byte{0x7f, 0x80, 0x9f, 0xa0, 0xa8, 0xa9, 0xbf, 0xc0}
	for c := 0x80; c < 0x100; c++ {
		for c1 := range 256 {
			checkEscape(t, nil, string([]byte{'a', byte(c), byte(c1)}))
			for _, c2 := range thirds {
				seq := string([]byte{byte(c), byte(c1), c2})
				checkEscape(t, nil, "ab"+seq+"\x80\x80cd")
				checkEscape(t, nil, "ab"+seq)
			}
		}
	}
}

// TestEscapeAppends: what dst holds is kept, whatever its capacity, and
// outputs many times longer than the input grow the buffer as they go.
func TestEscapeAppends(t *testing.T) {
	long := []string{
		strings.Repeat(`"`, 10_000),        // twice the input
		strings.Repeat("\x00", 10_000),     // six times
		strings.Repeat("\xff", 10_000),     // six times, decoded
		strings.Repeat("\u2028", 3_000),    // twice, decoded
		strings.Repeat("日本語", 3_000),       // copied as runs of characters
		strings.Repeat("a\u2028é<", 3_000), // all of them interleaved
	}
	for _, s := range long {
		for _, room := range []int{0, 1, 7, 16, len(s), 7 * len(s)} {
			dst := make([]byte, 3, 3+room)
			copy(dst, "pre")
			checkEscape(t, dst, s)
		}
	}
}

// TestPair: a Pair's Text is Append of its JSON, whichever way each piece
// was written (literal, Write, Mirror, short or long, plain or not), and
// JSONOnly writes the JSON alone.
func TestPair(t *testing.T) {
	open, closeQuote := Lit(`{"value":"`), Lit(`"}`)
	pieces := []string{"OK", "", "x<y&z", "é日", strings.Repeat("a", 100), strings.Repeat(`\"`, 40), "\u2028", "12345"}
	for _, jsonOnly := range []bool{false, true} {
		p := Pair{JSON: []byte("pre"), Text: []byte("pre"), JSONOnly: jsonOnly}
		for i, piece := range pieces {
			p.Lit(open)
			if i%2 == 0 {
				p.Write([]byte(piece))
			} else {
				from := len(p.JSON)
				p.JSON = append(p.JSON, piece...)
				p.Mirror(from)
			}
			p.Lit(closeQuote)
		}
		json := p.JSON[3:]
		if !jsonOnly {
			if want := Append([]byte("pre"), string(json)); string(p.Text) != string(want) {
				t.Errorf("text\n got %s\nwant %s", p.Text, want)
			}
		} else if string(p.Text) != "pre" {
			t.Errorf("JSONOnly wrote text %q", p.Text)
		}
		if !strings.HasPrefix(string(json), `{"value":"OK"}{"value":""}{"value":"x<y&z"}`) {
			t.Errorf("json %s", json)
		}
	}
}

// FuzzAppendQuoted: for any string and any spare capacity after a
// prefix, AppendQuoted writes json.Marshal's bytes after the prefix.
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{
		"", "plain", `{"a":"b"}`, "\x00\x1f\x7f", "<>&", "\u2028\u2029", "é日🙂", "\xff\xc3\xe2\x80",
		jsonTextSample(3), "0123456789abcdef\"0123456789abcdef",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(9))
	}
	f.Fuzz(func(t *testing.T, s string, room uint8) {
		dst := make([]byte, 3, 3+int(room))
		copy(dst, "pre")
		checkEscape(t, dst, s)
	})
}

// jsonTextSample is the text content of a resp_execute result for a batch
// of n SETs (pkg/resp's JSON form of n +OK replies), the host's commonest
// large text: about 55 bytes a reply, a quarter of them quotes.
func jsonTextSample(n int) string {
	var b strings.Builder
	b.WriteString(`{"session":"default","outcome":"ok","replies":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"simple_string","encoding":"utf8","value":"OK"}`)
	}
	b.WriteString(`],"pushes":[]}`)
	return b.String()
}

// BenchmarkAppendQuoted compares AppendQuoted with segmentio's
// AppendEscape (EscapeHTML, what encode.go used before) and encoding/json
// on texts of about 7 KB: JSON text (a resp_execute result of 128
// replies), ASCII prose, and prose in several scripts. MB/s is the input's.
func BenchmarkAppendQuoted(b *testing.B) {
	prose := "The quick brown fox jumps over the lazy dog; a tool result may hold a paragraph of prose, " +
		"with some punctuation (commas, colons: and the like) and digits 0123456789, but rarely quotes. "
	mixed := "Съешь же ещё этих мягких французских булок, да выпей чаю. 敏捷的棕色狐狸跳过了懒狗。" +
		"Voix ambiguë d'un cœur qui, au zéphyr, préfère les jattes de kiwis. Ελληνικά κείμενα: "
	samples := []struct{ name, s string }{
		{"json-text", jsonTextSample(128)},
		{"prose", strings.Repeat(prose, 7000/len(prose)+1)},
		{"non-ascii", strings.Repeat(mixed, 7000/len(mixed)+1)},
	}
	for _, sample := range samples {
		s := sample.s
		if !utf8.ValidString(s) {
			b.Fatalf("%s: not UTF-8", sample.name)
		}
		buf := make([]byte, 0, 2*len(s))
		b.Run(sample.name+"/mcpkit", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				buf = AppendQuoted(buf[:0], s)
			}
		})
		b.Run(sample.name+"/segjson", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				buf = segjson.AppendEscape(buf[:0], s, segjson.EscapeHTML)
			}
		})
		b.Run(sample.name+"/encoding-json", func(b *testing.B) {
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				out.Reset()
				if err := enc.Encode(s); err != nil {
					b.Fatal(err)
				}
			}
		})
		if got, want := AppendQuoted(nil, s), marshalString(b, s); !bytes.Equal(got, want) {
			b.Fatal(fmt.Sprintf("%s: AppendQuoted differs from encoding/json", sample.name))
		}
	}
}
