package kv

import (
	"bytes"

	"github.com/jackc/pgx/v5"
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
	if want := h.unknownKeys(keys); len(want) > 0 {
		h.learnKeys(want, h.t.fetch(h.t.d.sql.getMany, h.id, want))
	}
}

// unknownKeys returns those of keys the transaction has neither written
// nor fetched before (none when the bucket cannot be read or is new).
func (h *pgBucket) unknownKeys(keys [][]byte) [][]byte {
	if !h.readable() || h.created {
		return nil
	}
	var want [][]byte
	for _, k := range keys {
		if len(k) == 0 {
			continue
		}
		if _, ok := h.writes.Get(pgWrite{k: k}); ok {
			continue
		}
		_, _, known := h.known.get(k)
		if known && h.t.confirm(h) {
			_, _, known = h.known.get(k)
		}
		if !known {
			want = append(want, k)
		}
	}
	return want
}

// learnKeys records the rows fetched for the keys want, and each of want
// as known (present or not).
func (h *pgBucket) learnKeys(want [][]byte, rows []item) {
	spans := make([]span, len(want))
	for i, k := range want {
		spans[i] = span{lo: k, hi: successor(k)}
	}
	h.known.add(rows, spans...)
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
// it learned.
func (h *pgBucket) prefetchRanges(ranges []Range) {
	if los, his := h.unknownRanges(ranges); len(los) > 0 {
		h.learnRanges(los, h.t.fetchRanges(h.id, los, his, rangeRows))
	}
}

// unknownRanges returns the bounds of those of ranges the transaction does
// not know whole (none when the bucket cannot be read or is new).
func (h *pgBucket) unknownRanges(ranges []Range) (los, his [][]byte) {
	if !h.readable() || h.created {
		return nil, nil
	}
	for _, r := range ranges {
		if r.Hi == nil || len(r.Lo) == 0 || bytes.Compare(r.Lo, r.Hi) >= 0 {
			continue
		}
		known := h.known.knowsRange(r.Lo, r.Hi)
		if known && h.t.confirm(h) {
			known = h.known.knowsRange(r.Lo, r.Hi)
		}
		if known {
			continue
		}
		los, his = append(los, r.Lo), append(his, r.Hi)
	}
	return los, his
}

// learnRanges records the rows fetched for the ranges starting at los:
// the span from the key before each range to the key after it, or to its
// last row when a page was not enough.
func (h *pgBucket) learnRanges(los [][]byte, rows fetchedRanges) {
	spans := make([]span, 0, 2*len(los))
	for i, lo := range los {
		got := rows.perRange[i]
		if got.before == nil {
			spans = append(spans, span{lo: []byte{}, hi: lo})
		} else {
			spans = append(spans, span{lo: got.before, hi: lo})
		}
		switch {
		case got.n == rangeRows:
			spans = append(spans, span{lo: lo, hi: successor(got.last)})
		case got.after == nil:
			spans = append(spans, span{lo: lo}) // nothing from lo on but the rows
		default:
			spans = append(spans, span{lo: lo, hi: successor(got.after)})
		}
	}
	h.known.add(rows.items, spans...)
}

// PrefetchWithNext is Prefetch and PrefetchRanges of b at once, sent with
// the transaction's next read instead of on their own: on PostgreSQL the
// keys and ranges (two statements) ride in the round trip of whatever the
// transaction reads next, of any bucket. A caller that knows early what
// it will read, before reads it must make first, saves their round trips
// so. Announced reads that no read follows are never sent; the other
// backends do nothing.
func PrefetchWithNext(b Bucket, keys [][]byte, ranges []Range) {
	if p, ok := b.(interface{ prefetchWithNext([][]byte, []Range) }); ok {
		p.prefetchWithNext(keys, ranges)
	}
}

// prefetchWithNext queues the statements of prefetch and prefetchRanges
// on the transaction, to be sent with its next read (pgTx.read).
func (h *pgBucket) prefetchWithNext(keys [][]byte, ranges []Range) {
	if want := h.unknownKeys(keys); len(want) > 0 {
		var rows []item
		h.t.queue(h.t.d.sql.getMany, []any{h.id, want}, func(r pgx.Rows) error {
			err := scanItems(r, &rows)
			if err == nil {
				h.learnKeys(want, rows)
			}
			return err
		})
	}
	if los, his := h.unknownRanges(ranges); len(los) > 0 {
		out := fetchedRanges{perRange: make([]rangeFound, len(los))}
		h.t.queue(h.t.d.sql.getRanges, []any{h.id, los, his, rangeRows}, func(r pgx.Rows) error {
			err := out.scan(r, los, his)
			if err == nil {
				h.learnRanges(los, out)
			}
			return err
		})
	}
}

// KeyNWithNext tells b that its transaction is about to ask b.KeyN(): on
// PostgreSQL the count is sent with the transaction's next read (see
// PrefetchWithNext) rather than in a round trip of its own. The others
// backends do nothing.
func KeyNWithNext(b Bucket) {
	if p, ok := b.(interface{ keyNWithNext() }); ok {
		p.keyNWithNext()
	}
}

// keyNWithNext queues the count KeyN reads when it would read one: the
// bucket holds no write of the transaction and was not counted yet. A
// write before KeyN is asked makes KeyN count again (with the writes).
func (h *pgBucket) keyNWithNext() {
	if !h.readable() || h.created || h.writes.Len() > 0 {
		return
	}
	if _, known := h.known.keyN(); known {
		return
	}
	h.t.queue(h.t.d.sql.count, []any{h.id}, func(rows pgx.Rows) error {
		n, err := scanCount(rows)
		if err == nil {
			h.known.setKeyN(n)
		}
		return err
	})
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
