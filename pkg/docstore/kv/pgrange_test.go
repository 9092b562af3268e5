package kv

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestCoverageAddAll: after spans are added, in batches, a key is known
// exactly when one of them holds it, and the spans are sorted, disjoint
// and merged where they touch.
func TestCoverageAddAll(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return []byte{byte('a' + r.IntN(20)), byte('a' + r.IntN(3))} }
	randSpan := func() span {
		s := span{lo: key(), hi: key()}
		switch r.IntN(8) {
		case 0:
			s.hi = nil // no end
		case 1:
			s.lo = []byte{} // the start
		case 2:
			s.hi = successor(s.lo) // one key
		}
		return s
	}
	var probes [][]byte
	for a := byte('a' - 1); a <= 'a'+20; a++ {
		probes = append(probes, []byte{a})
		for b := byte('a' - 1); b <= 'a'+3; b++ {
			probes = append(probes, []byte{a, b}, []byte{a, b, 0})
		}
	}
	for round := range 1000 {
		var c coverage
		var added []span
		for range 1 + r.IntN(3) {
			batch := make([]span, r.IntN(10))
			for i := range batch {
				batch[i] = randSpan()
			}
			added = append(added, batch...)
			c.addAll(batch)
		}
		for i := 1; i < len(c.spans); i++ {
			if prev := c.spans[i-1]; prev.hi == nil || bytes.Compare(prev.hi, c.spans[i].lo) >= 0 {
				t.Fatalf("round %d: spans %q not sorted, disjoint and merged", round, c.spans)
			}
		}
		for _, k := range probes {
			want := false
			for _, s := range added {
				want = want || (bytes.Compare(s.lo, k) <= 0 && beforeHi(k, s.hi))
			}
			if _, got := c.containing(k); got != want {
				t.Fatalf("round %d: added %q: %q known %v, want %v (spans %q)", round, added, k, got, want, c.spans)
			}
		}
	}
}
