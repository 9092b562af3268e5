package kv

import "bytes"

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

// Range is a key range [Lo, Hi) of a bucket.
type Range struct{ Lo, Hi []byte }

// rangeRows is the most rows PrefetchRanges fetches for one range; a
// reader of a longer range fetches the rest as it walks.
const rangeRows = maxPage

// PrefetchRanges tells b that its transaction is about to read every key
// of each range (a Hi of nil is left out: it is read as usual), and the
// keys on either side: the last before Lo (a reader that finds a block of
// entries by its first key, as the document store's indexes do, starts
// there) and the first from Hi on (where a walk of the range stops). A backend
// whose reads each cost a round trip (PostgreSQL) fetches them all in one
// (up to a page of rows per range); the others do nothing.
func PrefetchRanges(b Bucket, ranges []Range) {
	if p, ok := b.(interface{ prefetchRanges([]Range) }); ok {
		p.prefetchRanges(ranges)
	}
}

// prefetchRanges fetches, in one statement, the ranges (with the keys on
// either side) that the transaction does not know whole, and records what
// it learned: the span from the key before each range to the key after it,
// or to its last row when a page was not enough.
func (h *pgBucket) prefetchRanges(ranges []Range) {
	if !h.readable() || h.created {
		return
	}
	var los, his [][]byte
	for _, r := range ranges {
		if r.Hi == nil || len(r.Lo) == 0 || bytes.Compare(r.Lo, r.Hi) >= 0 {
			continue
		}
		if s, ok := h.cov.containing(r.Lo); ok && (s.hi == nil || bytes.Compare(r.Hi, s.hi) <= 0) {
			continue // known already
		}
		los, his = append(los, r.Lo), append(his, r.Hi)
	}
	if len(los) == 0 {
		return
	}
	rows := h.t.fetchRanges(h.id, los, his, rangeRows)
	h.remember(rows.items)
	for i, lo := range los {
		got := rows.perRange[i]
		if got.before == nil {
			h.cov.add(span{lo: []byte{}, hi: lo})
		} else {
			h.cov.add(span{lo: got.before, hi: lo})
		}
		switch {
		case got.n == rangeRows:
			h.cov.add(span{lo: lo, hi: successor(got.last)})
		case got.after == nil:
			h.cov.add(span{lo: lo}) // nothing from lo on but the rows
		default:
			h.cov.add(span{lo: lo, hi: successor(got.after)})
		}
	}
}

// RoundTrips returns how many round trips db has made to its server, and
// false when db's reads cost none (a file, memory): tests and benchmarks
// check with it that a read costs the round trips it should.
func RoundTrips(db DB) (int64, bool) {
	if d, ok := db.(*pgDB); ok {
		return d.trips.Load(), true
	}
	return 0, false
}
