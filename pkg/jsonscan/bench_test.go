package jsonscan

import (
	"fmt"
	"strings"
	"testing"
)

// benchLines are messages of the shapes the scanner sees: a 128-command
// resp_execute call (many short strings), 48-byte strings, short strings
// with escapes, and a call carrying one 64 KiB string.
var benchLines = func() []struct {
	name string
	b    []byte
} {
	cmds := make([]string, 128)
	for i := range cmds {
		cmds[i] = fmt.Sprintf(`["SET","bench:%d","value-%010d"]`, i, i)
	}
	return []struct {
		name string
		b    []byte
	}{
		{"execute-128", []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"resp_execute","arguments":{"commands":[` +
			strings.Join(cmds, ",") + `]}}}`)},
		{"strings-48", []byte(`{"jsonrpc":"2.0","id":7,"method":"x","params":[` +
			strings.Repeat(`"abcdefghijklmnopqrstuvwxyz0123456789abcdefghijkl",`, 100) + `1]}`)},
		{"escaped-16", []byte(`{"jsonrpc":"2.0","id":7,"method":"x","params":[` +
			strings.Repeat(`"abcdef\"ghijklmn",`, 300) + `1]}`)},
		{"string-64KiB", []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
			strings.Repeat("x", 64<<10) + `"}}}`)},
	}
}()

// BenchmarkScan measures each way of passing over a message: SkipValue,
// Depth, Extent (the two at once) and Members over its top level, on
// messages with many short strings, longer ones, escaped ones and one
// long string.
func BenchmarkScan(b *testing.B) {
	for _, l := range benchLines {
		scans := []struct {
			name string
			fn   func([]byte) int
		}{
			{"SkipValue", func(v []byte) int { return SkipValue(v, 0) }},
			{"Depth", Depth},
			{"Extent", func(v []byte) int { end, _ := Extent(v, 0); return end }},
			{"Members", func(v []byte) int {
				m := NewMembers(v)
				for m.Next() {
				}
				return m.End()
			}},
		}
		for _, s := range scans {
			b.Run(l.name+"/"+s.name, func(b *testing.B) {
				b.SetBytes(int64(len(l.b)))
				for b.Loop() {
					if s.fn(l.b) < 0 {
						b.Fatal("not scanned")
					}
				}
			})
		}
	}
}
