package docstore

import (
	"math/bits"
	"slices"
	"sync"
)

// keySet is a set of doc keys: the documents a search's filter allows,
// which every ranked candidate is tested against. A filter may pass most
// of a large collection, so the set is built for its cost per key: the
// keys of non-negative integer ids (the usual ids, and insert_auto's) are
// bits of a bitmap over the ids' span when they are dense enough, or else
// a map of the integers; any other key is in a map of strings. Building
// it for 50,000 ids took a fifth of the time a map of strings took.
type keySet struct {
	lo    uint64   // the id of bits' first bit
	bits  []uint64 // the integer ids, dense (nil when ints holds them)
	ints  map[uint64]struct{}
	other map[string]struct{}
	n     int
}

// keySetBuilder collects the keys of a keySet, which may come more than
// once; release returns its buffer.
type keySetBuilder struct {
	ints  *[]uint64 // from intBuffers
	other map[string]struct{}
}

// intBuffers recycles the builders' buffers of integer ids: a filter
// passing 50,000 documents fills 400 KB, which growing by doubling each
// search copied and cleared again.
var intBuffers = sync.Pool{New: func() any { return new([]uint64) }}

// maxPooledInts is the largest buffer put back in intBuffers (8 MB).
const maxPooledInts = 1 << 20

// intKey returns the id of a key that is a non-negative integer's, as
// AppendKey writes it (the tag of its length, its shortest big-endian
// bytes, numInt).
func intKey(k []byte) (uint64, bool) {
	if len(k) < 2 || k[0] < keyIntZero || k[0] > keyIntZero+8 {
		return 0, false
	}
	n := int(k[0] - keyIntZero)
	if len(k) != n+2 || k[n+1] != numInt || (n > 0 && k[1] == 0) {
		return 0, false
	}
	var u uint64
	for _, c := range k[1 : n+1] {
		u = u<<8 | uint64(c)
	}
	return u, true
}

// add adds the doc key k (not kept: it is copied if need be).
func (b *keySetBuilder) add(k []byte) {
	if u, ok := intKey(k); ok {
		if b.ints == nil {
			b.ints = intBuffers.Get().(*[]uint64)
		}
		*b.ints = append(*b.ints, u)
		return
	}
	if b.other == nil {
		b.other = map[string]struct{}{}
	}
	b.other[string(k)] = struct{}{}
}

// bitmapSlack is how many bits per integer id a bitmap may spend over
// the ids' span before a map holds them instead (a map's entry takes
// about 16 bytes).
const bitmapSlack = 64

// set returns the set of the keys added, and puts the builder's buffer
// back.
func (b *keySetBuilder) set() *keySet {
	s := &keySet{other: b.other, n: len(b.other)}
	if b.ints == nil {
		return s
	}
	ints := *b.ints
	defer func() {
		if cap(ints) <= maxPooledInts {
			*b.ints = ints[:0]
			intBuffers.Put(b.ints)
		}
		b.ints = nil
	}()
	lo, hi := slices.Min(ints), slices.Max(ints)
	if span := hi - lo; span/bitmapSlack > uint64(len(ints)) {
		s.ints = make(map[uint64]struct{}, len(ints))
		for _, u := range ints {
			s.ints[u] = struct{}{}
		}
		s.n += len(s.ints)
		return s
	}
	s.lo = lo
	s.bits = make([]uint64, (hi-lo)/64+1)
	for _, u := range ints {
		u -= lo
		s.bits[u/64] |= 1 << (u % 64)
	}
	for _, w := range s.bits {
		s.n += bits.OnesCount64(w)
	}
	return s
}

// len returns the number of keys in the set.
func (s *keySet) len() int { return s.n }

// has reports whether the doc key k is in the set.
func (s *keySet) has(k []byte) bool {
	u, ok := intKey(k)
	switch {
	case !ok:
		_, ok = s.other[string(k)]
		return ok
	case s.bits != nil:
		u -= s.lo // below lo wraps around, past the end
		return u/64 < uint64(len(s.bits)) && s.bits[u/64]&(1<<(u%64)) != 0
	}
	_, ok = s.ints[u]
	return ok
}

// pass returns the set's membership test, nil for a nil set (no filter:
// everything passes).
func (s *keySet) pass() func(idKey []byte) bool {
	if s == nil {
		return nil
	}
	return s.has
}

// sortedKeys returns the set's keys, in order.
func (s *keySet) sortedKeys() []string {
	keys := make([]string, 0, s.n)
	add := func(u uint64) { keys = append(keys, string(AppendKey(nil, Int(int64(u))))) }
	for i, w := range s.bits {
		for w != 0 {
			add(s.lo + uint64(i)*64 + uint64(bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	for u := range s.ints {
		add(u)
	}
	for k := range s.other {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
