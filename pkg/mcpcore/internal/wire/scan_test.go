package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
)

// TestScan: Scan reports the object's end and depth as SkipValue and Depth
// find them, and InboundScanned says when it rewrote the message, which it
// does exactly when Inbound would.
func TestScan(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	deep := `{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`
	for _, tt := range []struct {
		msg        string
		end, depth int
		rewritten  bool
	}{
		{string(call("1")), len(call("1")), 2, false},
		{string(call(`"a\"}"`)), len(call(`"a\"}"`)), 2, false},
		{string(call("1.5")), len(call("1.5")), 2, true},
		{string(cancelled("1.5")), len(cancelled("1.5")), 2, true}, // names the request above
		{string(cancelled("2")), len(cancelled("2")), 2, false},
		{`{"jsonrpc":"2.0","id":1.5,"result":{"a":[1]}}`, 45, 3, false}, // a response is never rewritten
		{`{"jsonrpc":"2.0","id":3,"method":"x","params":{"a":[[1]]}} tail`, 58, 4, false},
		{deep, len(deep), 1000, false},
		{`{"jsonrpc":"2.0","id":1,"method":"x"`, -1, 1, false},
		{`[1]`, -1, 0, false},
	} {
		msg := []byte(tt.msg)
		s := Scan(msg)
		if s.End() != tt.end || (tt.end >= 0 && s.Depth() != tt.depth) {
			t.Errorf("Scan(%.60s): end %d depth %d, want %d and %d", msg, s.End(), s.Depth(), tt.end, tt.depth)
		}
		out, rewritten := tab.InboundScanned(s)
		if rewritten != tt.rewritten || rewritten == bytes.Equal(out, msg) || !rewritten && &out[0] != &msg[0] {
			t.Errorf("InboundScanned(%.60s): rewritten %v, want %v; out %s", msg, rewritten, tt.rewritten, out)
		}
	}
}

// TestScanDoesNotAllocate: Scan and InboundScanned keep Inbound's promise
// of no allocation on the fast path.
func TestScanDoesNotAllocate(t *testing.T) {
	tab := NewTable()
	in := call("12345")
	if n := testing.AllocsPerRun(100, func() { tab.InboundScanned(Scan(in)) }); n != 0 {
		t.Errorf("Scan and InboundScanned allocate %v times per call", n)
	}
}

// FuzzScan checks Scan against the scanner's own functions (End is
// SkipValue's end and Depth is Depth on a valid object) and InboundScanned
// against Inbound: on two tables fed the same messages, it rewrites what
// Inbound rewrites, returns the message itself otherwise, and leaves the
// same number of entries.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		string(call("1")),
		string(call("1.5")),
		string(cancelled("1.5")),
		`{"jsonrpc":"2.0","id":3,"method":"x","params":{"a":[[1]]}} tail`,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
		`{"a":x"y,"b":1}`,
		`[1.5]`,
	} {
		f.Add([]byte(s), []byte(string(call("1.5"))))
	}
	f.Fuzz(func(t *testing.T, first, msg []byte) {
		scanned, plain := NewTable(), NewTable()
		scanned.InboundScanned(Scan(first))
		plain.Inbound(first)
		s := Scan(msg)
		if end := s.End(); end >= 0 && json.Valid(msg[:end]) {
			if want := jsonscan.SkipValue(msg, jsonscan.SkipWS(msg, 0)); end != want {
				t.Fatalf("Scan(%q).End() = %d, SkipValue %d", msg, end, want)
			}
			if got, want := s.Depth(), jsonscan.Depth(msg[:end]); got != want {
				t.Fatalf("Scan(%q).Depth() = %d, Depth %d", msg, got, want)
			}
		}
		orig := bytes.Clone(msg)
		out, rewritten := scanned.InboundScanned(s)
		want := plain.Inbound(msg)
		switch {
		case !bytes.Equal(msg, orig):
			t.Fatalf("InboundScanned modified its input")
		case rewritten != !sameSlice(want, msg):
			t.Fatalf("InboundScanned(%q) rewritten %v, Inbound gave %q", msg, rewritten, want)
		case !rewritten && !sameSlice(out, msg):
			t.Fatalf("InboundScanned(%q) returned another slice without rewriting", msg)
		case len(out) != len(want):
			t.Fatalf("InboundScanned(%q) = %q, Inbound %q", msg, out, want)
		case scanned.Len() != plain.Len():
			t.Fatalf("after %q: %d entries, Inbound's table %d", msg, scanned.Len(), plain.Len())
		}
	})
}
