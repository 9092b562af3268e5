package kv

import (
	"bytes"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/tidwall/btree"
)

// What a transaction knows of a bucket's server keys (pgKnown) is its own
// (a write, which reads the state it is about to change) or shared by the
// Views of the process that read the same state (pgReadCache): the rows a
// search reads again and again (an index's blocks, a term's postings)
// then cost the server nothing once read, as a file's pages cost nothing
// once the OS caches them.
//
// A shared cache holds what was read at one revision of the store (the
// meta row's rev, which every commit of every process moves) and answers
// only the transactions that read that revision. An ordinary View learns
// its revision as it begins (BEGIN and the meta row); an optimistic View
// (pgSpec), which begins nothing until its first read, is answered by the
// cache of the revision it assumes only while that revision keeps being
// found current, and then checks it with its first read or at its end,
// running again if a write committed since; else it reads the meta row
// before the cache may answer it (pgTx.confirm). A write on another
// instance is thus seen as soon as its commit returned, as without the
// cache; a write of another process makes the whole cache stale (the
// next View, at the new revision, starts another), one of this process
// advances it (below).
//
// A write reads through the cache too: it holds the meta row's lock from
// its first statement to its commit, so it reads the state of revision r
// (the meta row's rev before its lock counted it) throughout, and its
// commit makes r+1 with nothing between. When the commit is known done
// and the process's cache is still r's, the cache of r+1 is r's with the
// write's puts and deletes applied (advance): a single writer's next
// transaction, and the Views after it, read what the writes left without
// asking the server again. A write that fails, rolls back or whose commit
// has an unknown outcome advances nothing: r's cache stays true of r,
// and the next transaction, at another revision, starts another.

// defaultReadCache is the byte budget of the shared read cache when the
// URL's mcpkit_read_cache does not set one.
const defaultReadCache = 64 << 20

// pgReadCache is the shared read cache at one revision of the store.
type pgReadCache struct {
	rev    int64
	budget int64
	mu     sync.Mutex
	// buckets maps a bucket id (never reused by the store) to what is
	// known of it; size is the bytes of their rows; tick orders uses.
	buckets map[int64]*pgKnown
	size    int64
	tick    uint64
}

// readCache returns the shared cache of revision rev, starting it when
// rev is newer than the cache's, or nil (no cache, or it is newer: the
// transaction is the one behind).
func (d *pgDB) readCache(rev int64) *pgReadCache {
	if d.cacheBudget <= 0 || rev < 0 {
		return nil
	}
	for {
		cur := d.rcache.Load()
		switch {
		case cur != nil && cur.rev == rev:
			return cur
		case cur != nil && cur.rev > rev:
			return nil
		}
		c := &pgReadCache{rev: rev, budget: d.cacheBudget, buckets: map[int64]*pgKnown{}}
		if d.rcache.CompareAndSwap(cur, c) {
			return c
		}
	}
}

// advanceCache makes the process's cache that of the revision t's commit
// made (t.rev+1): the cache t read through, with t's writes applied. It
// does nothing unless t read through the process's cache and that cache
// is still the current one: a View of a newer revision may have started
// another, which is kept (the one of t.rev+1 would be exact too, being
// labelled with its revision, but older).
func (d *pgDB) advanceCache(t *pgTx) {
	old := t.rc
	if old == nil || d.rcache.Load() != old {
		return
	}
	d.rcache.CompareAndSwap(old, old.next(t))
}

// next returns the cache of revision c.rev+1 that t's commit made: c's
// buckets but those t deleted, a copy of each (the trees are copied on
// write: c keeps answering the Views of c.rev), with t's puts and deletes
// applied; the buckets t created are known whole.
func (c *pgReadCache) next(t *pgTx) *pgReadCache {
	n := &pgReadCache{rev: c.rev + 1, budget: c.budget, buckets: map[int64]*pgKnown{}}
	c.mu.Lock()
	old := maps.Clone(c.buckets)
	used := make(map[int64]uint64, len(old))
	for id, k := range old {
		used[id] = k.used
	}
	n.tick = c.tick
	c.mu.Unlock()
	for _, id := range t.dropped {
		delete(old, id)
	}
	for id, k := range old {
		n.buckets[id] = k.copyFor(n, used[id])
	}
	for _, h := range t.handles {
		k := n.buckets[h.id]
		if h.created {
			k = &pgKnown{owner: n, id: h.id, used: n.tick, rows: newTree(), limit: min(n.budget, maxCached),
				cov: coverage{spans: []span{{lo: []byte{}}}}, keys: 1}
			n.buckets[h.id] = k
		}
		if k != nil && h.writes.Len() > 0 {
			k.apply(h.writes)
		}
	}
	for _, k := range n.buckets {
		n.size += k.size.Load()
	}
	n.evict(nil)
	return n
}

// bucket returns what the cache knows of bucket id.
func (c *pgReadCache) bucket(id int64) *pgKnown {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	k := c.buckets[id]
	if k == nil {
		k = &pgKnown{owner: c, id: id, rows: newTree(), limit: min(c.budget, maxCached)}
		c.buckets[id] = k
	}
	k.used = c.tick
	return k
}

// resize sets the size of k's rows and, over budget, drops the buckets
// used least recently but k (their transactions keep what they hold).
// The sizes of the cache's buckets change only under c.mu, so that c.size
// is their sum.
func (c *pgReadCache) resize(k *pgKnown, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := k.size.Swap(size)
	if c.buckets[k.id] != k {
		return // dropped already
	}
	c.size += size - old
	c.evict(k)
}

// evict drops, while c is over budget, the buckets used least recently
// but keep; under c.mu, or before c is shared.
func (c *pgReadCache) evict(keep *pgKnown) {
	for c.size > c.budget {
		var victim *pgKnown
		for _, o := range c.buckets {
			if o != keep && (victim == nil || o.used < victim.used) {
				victim = o
			}
		}
		if victim == nil {
			return // keep alone, within budget by its limit
		}
		delete(c.buckets, victim.id)
		c.size -= victim.size.Load()
	}
}

// spanSize is what a span known costs beside its keys' bytes, counted in
// a shared pgKnown's size (its spans last as long as its rows).
const spanSize = 48

// pgKnown is what is known of a bucket's server keys at one state: the
// rows fetched and the key ranges known whole (cov). Each method takes
// the lock, so that a lookup sees one state of it.
type pgKnown struct {
	mu    sync.Mutex
	owner *pgReadCache // nil: a transaction's own
	id    int64
	used  uint64 // owner's tick at the last use (under owner.mu)
	rows  *tree
	cov   coverage
	// size is the bytes of rows (and, shared, of the spans added); past
	// limit, rows and cov start over (what was returned stays valid:
	// nothing is reused).
	size  atomic.Int64
	limit int64
	// keys is the bucket's key count, once counted, plus one.
	keys int
}

// keyN returns the bucket's key count, and whether it is known.
func (k *pgKnown) keyN() (int, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys - 1, k.keys != 0
}

// setKeyN records the bucket's key count.
func (k *pgKnown) setKeyN(n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = n + 1
}

// newOwnKnown returns a transaction's own pgKnown.
func newOwnKnown() *pgKnown { return &pgKnown{rows: newTree(), limit: maxCached} }

// copyFor returns a copy of k for cache n, last used at tick used,
// sharing k's rows (copied on write) and spans (never modified in place:
// addAll makes new ones).
func (k *pgKnown) copyFor(n *pgReadCache, used uint64) *pgKnown {
	k.mu.Lock()
	defer k.mu.Unlock()
	nk := &pgKnown{owner: n, id: k.id, used: used, rows: k.rows.Copy(), cov: k.cov, limit: k.limit, keys: k.keys}
	nk.size.Store(k.size.Load())
	return nk
}

// apply applies a committed transaction's writes to k, not yet shared: a
// put of a key in a span known is recorded, a delete removes the key's
// row; a key in no span stays unknown (no row lies outside the spans).
// The key count is kept when every write's key is known, else forgotten.
func (k *pgKnown) apply(writes *btree.BTreeG[pgWrite]) {
	size := k.size.Load()
	writes.Scan(func(w pgWrite) bool {
		_, present, known := k.get(w.k)
		switch {
		case !known:
			k.keys = 0
		case k.keys != 0 && present == w.del: // a delete of a key present, a put of one absent
			if w.del {
				k.keys--
			} else {
				k.keys++
			}
		}
		if old, ok := k.rows.Delete(item{k: w.k}); ok {
			size -= int64(len(old.k) + len(old.v))
		}
		if known && !w.del {
			k.rows.Set(item{k: w.k, v: w.v})
			size += int64(len(w.k) + len(w.v))
		}
		return true
	})
	k.size.Store(size)
}

// add records rows fetched and the spans they tell are known whole.
func (k *pgKnown) add(rows []item, spans ...span) {
	k.mu.Lock()
	size := k.size.Load()
	if size > k.limit {
		k.rows, k.cov = newTree(), coverage{}
		size = 0
	}
	for _, it := range rows {
		if old, replaced := k.rows.Set(it); replaced {
			size -= int64(len(old.k) + len(old.v))
		}
		size += int64(len(it.k) + len(it.v))
	}
	if k.owner != nil {
		for i, s := range spans { // outlive the transaction, whose keys may be reused
			spans[i] = span{lo: append([]byte{}, s.lo...), hi: bytes.Clone(s.hi)}
			size += int64(len(s.lo) + len(s.hi) + spanSize)
		}
	}
	k.cov.addAll(spans)
	if k.owner != nil {
		k.owner.resize(k, size)
	} else {
		k.size.Store(size)
	}
	k.mu.Unlock()
}

// ceil returns the first row at or after key within the span known whole
// that holds key (s), and whether such a span is known.
func (k *pgKnown) ceil(key []byte) (found item, ok bool, s span, known bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, known = k.cov.containing(key); !known {
		return item{}, false, s, false
	}
	k.rows.Ascend(item{k: key}, func(it item) bool { found, ok = it, true; return false })
	return found, ok && beforeHi(found.k, s.hi), s, true
}

// floor returns the last row before key (nil: the last) within the span
// known whole that holds the keys just before it (s), and whether such a
// span is known.
func (k *pgKnown) floor(key []byte) (found item, ok bool, s span, known bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, known = k.cov.below(key); !known {
		return item{}, false, s, false
	}
	found, ok = lastBefore(k.rows, item{k: key}, key, func(it item) []byte { return it.k })
	return found, ok && bytes.Compare(found.k, s.lo) >= 0, s, true
}

// get returns key's value, whether it is present, and whether it is known.
func (k *pgKnown) get(key []byte) (v []byte, present, known bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, known = k.cov.containing(key); !known {
		return nil, false, false
	}
	it, present := k.rows.Get(item{k: key})
	return it.v, present, true
}

// knowsRange reports whether every key of [lo, hi) is known.
func (k *pgKnown) knowsRange(lo, hi []byte) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.cov.containing(lo)
	return ok && (s.hi == nil || bytes.Compare(hi, s.hi) <= 0)
}
