package kv

import (
	"bytes"
	"sort"
)

// Prefetch tells b that its transaction is about to read keys, in any
// order: a backend whose reads each cost a round trip (PostgreSQL) fetches
// those it does not hold yet in one, so that the Gets and Seeks of them
// that follow are answered without another; the others do nothing. The
// keys must not be modified until the transaction ends.
func Prefetch(b Bucket, keys [][]byte) {
	if p, ok := b.(interface{ prefetch(keys [][]byte) }); ok {
		p.prefetch(keys)
	}
}

// prefetch fetches, in one statement, the keys the transaction has neither
// written nor fetched before, and records each as known (present or not).
func (h *pgBucket) prefetch(keys [][]byte) {
	if !h.readable() || h.created {
		return
	}
	var want [][]byte
	for _, k := range keys {
		if len(k) == 0 {
			continue
		}
		if _, ok := h.writes.Get(pgWrite{k: k}); ok {
			continue
		}
		if _, ok := h.cov.containing(k); !ok {
			want = append(want, k)
		}
	}
	if len(want) == 0 {
		return
	}
	h.remember(h.t.fetch(h.t.d.sql.getMany, h.id, want))
	for _, k := range want {
		h.cov.add(span{lo: k, hi: successor(k)})
	}
}

// Prefetches reports whether Prefetch and PrefetchAround do anything for
// b, so that a caller computes the keys to announce only when they help.
func Prefetches(b Bucket) bool {
	_, ok := b.(interface{ prefetch(keys [][]byte) })
	return ok
}

// PrefetchAround tells b that its transaction is about to look, for each
// of keys, for the last key at or before it and the first after it (as a
// Seek and a Prev do): a backend whose reads each cost a round trip
// (PostgreSQL) fetches all of those keys in one, so that the moves that
// follow are answered without another; the others do nothing. The keys
// must not be modified until the transaction ends.
func PrefetchAround(b Bucket, keys [][]byte) {
	if p, ok := b.(interface{ prefetchAround(keys [][]byte) }); ok {
		p.prefetchAround(keys)
	}
}

// prefetchAround fetches, in one statement, the keys just before and just
// after each of keys the transaction does not know yet, and records the
// ranges between them as known: no key lies between a key's floor and its
// ceiling but the key itself, which is then its floor.
func (h *pgBucket) prefetchAround(keys [][]byte) {
	if !h.readable() || h.created {
		return
	}
	var want [][]byte
	for _, k := range keys {
		if _, ok := h.cov.containing(k); !ok && len(k) > 0 {
			want = append(want, k)
		}
	}
	if len(want) == 0 {
		return
	}
	rows := h.t.fetch(h.t.d.sql.around, h.id, want)
	h.remember(rows)
	// rows are distinct and in key order; each key's floor and ceiling
	// are among them.
	for _, k := range want {
		i := sort.Search(len(rows), func(i int) bool { return bytes.Compare(rows[i].k, k) > 0 })
		s := span{lo: []byte{}}
		if i > 0 {
			s.lo = rows[i-1].k
		}
		if i < len(rows) {
			s.hi = successor(rows[i].k)
		}
		h.cov.add(s)
	}
}
