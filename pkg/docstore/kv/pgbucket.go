package kv

import (
	"bytes"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/btree"
)

// pgWrite is a write of a transaction: a put or a delete.
type pgWrite struct {
	k, v []byte
	del  bool
}

func pgWriteLess(a, b pgWrite) bool { return bytes.Compare(a.k, b.k) < 0 }

// pgBucket is a handle on a bucket in a PostgreSQL transaction: the
// transaction's writes to it (an overlay) over what is known of the
// server's keys (known: the transaction's own, or the process's read
// cache at the transaction's revision).
type pgBucket struct {
	bucketState
	t        *pgTx
	id       int64
	created  bool // in this transaction: the server holds no key of it
	seq      uint64
	seqDirty bool
	writes   *btree.BTreeG[pgWrite]
	known    *pgKnown
}

var _ Bucket = (*pgBucket)(nil)

// learn records rows fetched: ascending from from (inclusive), or, when
// desc, descending before before (nil: from the end); limit is the page
// size asked for, so fewer rows means the range ends there.
func (h *pgBucket) learn(rows []item, limit int, desc bool, from []byte) {
	full := len(rows) == limit
	switch {
	case !desc && !full:
		h.known.add(rows, span{lo: from})
	case !desc:
		h.known.add(rows, span{lo: from, hi: successor(rows[len(rows)-1].k)})
	case !full:
		h.known.add(rows, span{lo: []byte{}, hi: from})
	default:
		h.known.add(rows, span{lo: rows[len(rows)-1].k, hi: from})
	}
}

// serverCeil returns the server's first key at or after k.
func (h *pgBucket) serverCeil(k []byte, size pageSizer) (item, bool) {
	if h.created {
		return item{}, false
	}
	if k == nil {
		k = []byte{} // nil would be SQL NULL
	}
	for {
		found, ok, s, known := h.known.ceil(k)
		if known && h.t.confirm(h) {
			continue
		}
		if !known {
			n := size()
			h.learn(h.t.fetch(h.t.d.sql.pageAsc, h.id, k, n), n, false, k)
			continue
		}
		if ok {
			return found, true
		}
		if s.hi == nil {
			return item{}, false
		}
		k = s.hi
	}
}

// serverFloor returns the server's last key before k (nil: the last key).
func (h *pgBucket) serverFloor(k []byte, size pageSizer) (item, bool) {
	if h.created {
		return item{}, false
	}
	for {
		found, ok, s, known := h.known.floor(k)
		if known && h.t.confirm(h) {
			continue
		}
		if !known {
			n := size()
			var rows []item
			if k == nil {
				rows = h.t.fetch(h.t.d.sql.pageLast, h.id, n)
			} else {
				rows = h.t.fetch(h.t.d.sql.pageDesc, h.id, k, n)
			}
			h.learn(rows, n, true, k)
			continue
		}
		if ok {
			return found, true
		}
		if len(s.lo) == 0 {
			return item{}, false
		}
		k = s.lo
	}
}

// writeCeil and writeFloor find the transaction's first write at or after
// k, and its last before k (nil: the last).
func (h *pgBucket) writeCeil(k []byte) (w pgWrite, ok bool) {
	h.writes.Ascend(pgWrite{k: k}, func(it pgWrite) bool { w, ok = it, true; return false })
	return w, ok
}

func (h *pgBucket) writeFloor(k []byte) (pgWrite, bool) {
	return lastBefore(h.writes, pgWrite{k: k}, k, func(w pgWrite) []byte { return w.k })
}

// lastBefore returns the last element of t whose key (keyOf) is before
// key (nil: the last element); pivot is an element of key.
func lastBefore[T any](t *btree.BTreeG[T], pivot T, key []byte, keyOf func(T) []byte) (last T, ok bool) {
	visit := func(it T) bool {
		if key != nil && bytes.Compare(keyOf(it), key) >= 0 {
			return true
		}
		last, ok = it, true
		return false
	}
	if key == nil {
		t.Reverse(visit)
	} else {
		t.Descend(pivot, visit)
	}
	return last, ok
}

// ceil returns the first key at or after k as the transaction sees it.
func (h *pgBucket) ceil(k []byte, size pageSizer) ([]byte, []byte) {
	for {
		s, sok := h.serverCeil(k, size)
		w, wok := h.writeCeil(k)
		switch {
		case wok && (!sok || bytes.Compare(w.k, s.k) <= 0):
			if !w.del {
				return w.k, w.v
			}
			k = successor(w.k)
		case sok:
			return s.k, s.v
		default:
			return nil, nil
		}
	}
}

// floor returns the last key before k (nil: the last key) as the
// transaction sees it.
func (h *pgBucket) floor(k []byte, size pageSizer) ([]byte, []byte) {
	for {
		s, sok := h.serverFloor(k, size)
		w, wok := h.writeFloor(k)
		switch {
		case wok && (!sok || bytes.Compare(w.k, s.k) >= 0):
			if !w.del {
				return w.k, w.v
			}
			k = w.k
		case sok:
			return s.k, s.v
		default:
			return nil, nil
		}
	}
}

// Get implements Bucket.
func (h *pgBucket) Get(key []byte) []byte {
	if !h.readable() {
		return nil
	}
	if w, ok := h.writes.Get(pgWrite{k: key}); ok {
		if w.del {
			return nil
		}
		return w.v
	}
	if h.created || len(key) == 0 {
		return nil
	}
	v, present, known := h.known.get(key)
	if known && h.t.confirm(h) {
		v, present, known = h.known.get(key)
	}
	if !known {
		h.learn(h.t.fetch(h.t.d.sql.pageAsc, h.id, key, 1), 1, false, key)
		v, present, _ = h.known.get(key)
	}
	if present {
		return v
	}
	return nil
}

// knownKey reports whether the server holds key k, and whether the
// transaction knows.
func (h *pgBucket) knownKey(k []byte) (present, known bool) {
	if h.created {
		return false, true
	}
	_, present, known = h.known.get(k)
	return present, known
}

// Put implements Bucket; it copies key and value.
func (h *pgBucket) Put(key, value []byte) error {
	if err := h.checkPut(key, value); err != nil {
		return err
	}
	switch {
	case len(key) > PostgresMaxKeySize:
		return fmt.Errorf("kv: bucket %q: put: key of %d bytes exceeds %d on PostgreSQL: %w", h.name, len(key), PostgresMaxKeySize, ErrKeyTooLarge)
	case len(value) > PostgresMaxValueSize:
		return fmt.Errorf("kv: bucket %q: put: value of %d bytes exceeds %d on PostgreSQL: %w", h.name, len(value), PostgresMaxValueSize, ErrValueTooLarge)
	}
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	h.writes.Set(pgWrite{k: buf[:len(key):len(key)], v: buf[len(key):]})
	h.wrote()
	return nil
}

// Delete implements Bucket.
func (h *pgBucket) Delete(key []byte) error {
	if err := h.checkWrite("delete"); err != nil {
		return err
	}
	if len(key) == 0 {
		return nil
	}
	h.writes.Set(pgWrite{k: bytes.Clone(key), del: true})
	h.wrote()
	return nil
}

// Cursor implements Bucket.
func (h *pgBucket) Cursor() Cursor {
	h.tx.checkRead()
	return newCursor(&pgCursor{h: h}, &h.bucketState, h.Delete)
}

// NextSequence implements Bucket.
func (h *pgBucket) NextSequence() (uint64, error) {
	if err := h.checkWrite("next sequence"); err != nil {
		return 0, err
	}
	h.seq++
	h.seqDirty = true
	h.dirty = true
	return h.seq, nil
}

// Sequence implements Bucket.
func (h *pgBucket) Sequence() uint64 {
	if !h.readable() {
		return 0
	}
	if h.t.spec.seqStale {
		h.t.askRerun() // an optimistic View that has not read the new one
	}
	h.t.spec.sawSeq = true
	return h.seq
}

// KeyN implements Bucket: a count(*) on the server (a scan of the
// bucket's index entries), corrected by the transaction's writes.
func (h *pgBucket) KeyN() int {
	if !h.readable() {
		return 0
	}
	puts := 0
	h.writes.Scan(func(w pgWrite) bool {
		if !w.del {
			puts++
		}
		return true
	})
	switch {
	case h.created:
		return puts
	case h.writes.Len() == 0:
		n, known := h.known.keyN()
		if known && h.t.confirm(h) {
			n, known = h.known.keyN()
		}
		if !known {
			n = h.t.count(h.t.d.sql.count, h.id)
			h.known.setKeyN(n)
		}
		return n
	}
	keys := make([][]byte, 0, h.writes.Len())
	h.writes.Scan(func(w pgWrite) bool { keys = append(keys, w.k); return true })
	return h.t.count(h.t.d.sql.countExcept, h.id, keys) + puts
}

// queueWrites queues the handle's puts and deletes; it reports whether
// there were any. Puts of keys the transaction knows absent are plain
// inserts, of keys it knows present updates (checked to match them all),
// the others upserts.
func (h *pgBucket) queueWrites(b *pgx.Batch) bool {
	if h.writes.Len() == 0 {
		return false
	}
	sql := &h.t.d.sql
	var dels chunker
	var ins, upd, ups chunker
	h.writes.Scan(func(w pgWrite) bool {
		present, known := h.knownKey(w.k)
		switch {
		case w.del && known && !present:
		case w.del:
			dels.add(w.k, nil, func(k, _ [][]byte) { b.Queue(sql.deleteKeys, h.id, k) })
		case known && !present:
			ins.add(w.k, w.v, func(k, v [][]byte) { b.Queue(sql.insertKeys, h.id, k, v) })
		case known:
			upd.add(w.k, w.v, func(k, v [][]byte) { b.Queue(sql.updateKeys, h.id, k, v, int64(len(k))) })
		default:
			ups.add(w.k, w.v, func(k, v [][]byte) { b.Queue(sql.upsertKeys, h.id, k, v) })
		}
		return true
	})
	dels.flush()
	ins.flush()
	upd.flush()
	ups.flush()
	return true
}

// chunker gathers rows into statements of bounded size.
type chunker struct {
	keys, values [][]byte
	bytes        int
	queue        func(k, v [][]byte)
}

func (c *chunker) add(k, v []byte, queue func(k, v [][]byte)) {
	c.queue = queue
	c.keys = append(c.keys, k)
	if v != nil {
		c.values = append(c.values, v)
	}
	c.bytes += len(k) + len(v)
	if len(c.keys) >= maxChunkRows || c.bytes >= maxChunkBytes {
		c.flush()
	}
}

func (c *chunker) flush() {
	if len(c.keys) > 0 {
		c.queue(c.keys, c.values)
	}
	c.keys, c.values, c.bytes = nil, nil, 0
}

// pgCursor is the raw cursor of the PostgreSQL backend: each move finds
// its key from where the cursor is, through the bucket's merged view.
type pgCursor struct {
	h   *pgBucket
	pos []byte
	// walk sizes the pages fetched by First, Last, Next and Prev, which
	// grow while the cursor walks on; a Seek starts a new walk.
	walk pageSizer
}

// pageSizer gives the size of each page a read fetches, one call a page.
type pageSizer func() int

// walkPages sizes the pages of a walk (a cursor moving on with Next or
// Prev): from minPage rows, doubling to maxPage.
func walkPages() pageSizer {
	n := 0
	return func() int {
		size := min(minPage<<min(n, 5), maxPage)
		n++
		return size
	}
}

// seekPages sizes the pages of a jump (Seek): seekPage rows, enough for a
// point read and a short walk, so that reading documents by id through a
// cursor (as the docstore does) does not fetch large pages.
func seekPages() int { return seekPage }

func (r *pgCursor) at(k, v []byte) ([]byte, []byte) {
	r.pos = k
	return k, v
}

// jump starts a new walk and returns the sizer of the jump itself.
func (r *pgCursor) jump() pageSizer {
	r.walk = walkPages()
	return seekPages
}

// step returns the sizer of the walk under way.
func (r *pgCursor) step() pageSizer {
	if r.walk == nil {
		r.walk = walkPages()
	}
	return r.walk
}

func (r *pgCursor) first() ([]byte, []byte)          { return r.at(r.h.ceil([]byte{}, r.step())) }
func (r *pgCursor) last() ([]byte, []byte)           { return r.at(r.h.floor(nil, r.step())) }
func (r *pgCursor) seek(key []byte) ([]byte, []byte) { return r.at(r.h.ceil(key, r.jump())) }
func (r *pgCursor) next() ([]byte, []byte)           { return r.at(r.h.ceil(successor(r.pos), r.step())) }
func (r *pgCursor) prev(from []byte) ([]byte, []byte) {
	return r.at(r.h.floor(from, r.step()))
}
