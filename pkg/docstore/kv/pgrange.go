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

// add records s as known, merging it with the spans it overlaps or touches.
func (c *coverage) add(s span) {
	if s.hi != nil && bytes.Compare(s.lo, s.hi) >= 0 {
		return
	}
	// The spans' his are sorted as their los are.
	start := sort.Search(len(c.spans), func(j int) bool {
		h := c.spans[j].hi
		return h == nil || bytes.Compare(h, s.lo) >= 0
	})
	end := start
	for end < len(c.spans) && (s.hi == nil || bytes.Compare(c.spans[end].lo, s.hi) <= 0) {
		if bytes.Compare(c.spans[end].lo, s.lo) < 0 {
			s.lo = c.spans[end].lo
		}
		if s.hi != nil && (c.spans[end].hi == nil || bytes.Compare(c.spans[end].hi, s.hi) > 0) {
			s.hi = c.spans[end].hi
		}
		end++
	}
	c.spans = slices.Replace(c.spans, start, end, s)
}

// successor is the least key after k: k followed by a zero byte.
func successor(k []byte) []byte {
	s := make([]byte, len(k)+1)
	copy(s, k)
	return s
}
