package kv

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
