package kv

import (
	"bytes"
	"slices"
	"sort"
)

// span is a key range [lo, hi) of a bucket whose server keys a transaction
// has all fetched; hi nil is no end, and lo empty is the start (keys are
// never empty).
type span struct{ lo, hi []byte }

// coverage is the set of spans a transaction knows, sorted by lo, disjoint,
// and merged where they touch.
type coverage struct{ spans []span }

// beforeHi reports k < hi (hi nil: no end).
func beforeHi(k, hi []byte) bool { return hi == nil || bytes.Compare(k, hi) < 0 }

// containing returns the span holding key k.
func (c *coverage) containing(k []byte) (span, bool) {
	i := sort.Search(len(c.spans), func(i int) bool { return bytes.Compare(c.spans[i].lo, k) > 0 }) - 1
	if i >= 0 && beforeHi(k, c.spans[i].hi) {
		return c.spans[i], true
	}
	return span{}, false
}

// below returns the span holding the keys just before k (k nil: the last
// keys of the bucket), that is lo < k <= hi.
func (c *coverage) below(k []byte) (span, bool) {
	n := len(c.spans)
	if k == nil {
		if n > 0 && c.spans[n-1].hi == nil {
			return c.spans[n-1], true
		}
		return span{}, false
	}
	i := sort.Search(n, func(i int) bool { return bytes.Compare(c.spans[i].lo, k) >= 0 }) - 1
	if i >= 0 && (c.spans[i].hi == nil || bytes.Compare(k, c.spans[i].hi) <= 0) {
		return c.spans[i], true
	}
	return span{}, false
}

// addAll records the spans ss as known, merging them with the spans they
// overlap or touch, in one pass over the spans known (a cache shared by
// many transactions holds many: a key read by id is one).
func (c *coverage) addAll(ss []span) {
	in := make([]span, 0, len(ss))
	for _, s := range ss {
		if s.hi == nil || bytes.Compare(s.lo, s.hi) < 0 {
			in = append(in, s)
		}
	}
	slices.SortFunc(in, func(a, b span) int { return bytes.Compare(a.lo, b.lo) })
	merged := make([]span, 0, len(c.spans)+len(in))
	for i, j := 0, 0; i < len(c.spans) || j < len(in); {
		var s span
		if j == len(in) || (i < len(c.spans) && bytes.Compare(c.spans[i].lo, in[j].lo) <= 0) {
			s, i = c.spans[i], i+1
		} else {
			s, j = in[j], j+1
		}
		if n := len(merged); n > 0 && (merged[n-1].hi == nil || bytes.Compare(s.lo, merged[n-1].hi) <= 0) {
			// s overlaps or touches the last span: it extends it.
			if merged[n-1].hi != nil && (s.hi == nil || bytes.Compare(s.hi, merged[n-1].hi) > 0) {
				merged[n-1].hi = s.hi
			}
			continue
		}
		merged = append(merged, s)
	}
	c.spans = merged
}

// successor is the least key after k: k followed by a zero byte.
func successor(k []byte) []byte {
	s := make([]byte, len(k)+1)
	copy(s, k)
	return s
}
