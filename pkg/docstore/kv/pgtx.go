package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tidwall/btree"
)

// Reads fetch pages: a Get that misses fetches one row (the key or the
// next), a cursor's Seek seekPage rows, and a cursor walking on pages from
// minPage rows doubling to maxPage. A
// transaction keeps what it fetched up to maxCached bytes per bucket, then
// starts over (what it returned stays valid: nothing is reused).
const (
	seekPage  = 8
	minPage   = 32
	maxPage   = 1024
	maxCached = 64 << 20
	// Writes are sent in statements of at most maxChunkRows rows or
	// maxChunkBytes bytes.
	maxChunkRows  = 10_000
	maxChunkBytes = 32 << 20
	// A Batch whose commit conflicts is re-run, up to maxConflictRuns
	// times; a write's begin, where no function ran yet, too.
	maxConflictRuns = 10
)

// pgBucketInfo is a bucket's row.
type pgBucketInfo struct {
	id  int64
	seq uint64
}

// pgBucketSet is the bucket set as of meta generation gen; never modified.
type pgBucketSet struct {
	gen    int64
	byName map[string]pgBucketInfo
}

// pgTx is a PostgreSQL transaction on one connection.
type pgTx struct {
	txState
	d    *pgDB
	c    *pgConn
	gen  int64 // the meta row's bgen when the transaction began
	base map[string]pgBucketInfo
	// set is the transaction's own bucket set once it created or deleted
	// one; nil until then (base is the set).
	set     map[string]pgBucketInfo
	handles map[string]*pgBucket
	dropped []int64 // ids of the buckets deleted
	nextb   int64   // the last bucket id allocated
	nextb0  int64
	epoch0  uint64
}

var _ Tx = (*pgTx)(nil)

var bg = context.Background()

// View implements DB.
func (d *pgDB) View(fn func(Tx) error) error {
	if err := d.closedErr("view"); err != nil {
		return err
	}
	t, err := d.begin(false)
	if err != nil {
		return d.fail("view", err)
	}
	return t.run(fn)
}

// Update implements DB.
func (d *pgDB) Update(fn func(Tx) error) error {
	if d.readOnly {
		return fmt.Errorf("kv: update %s: %w", d.path, ErrReadOnly)
	}
	if err := d.closedErr("update"); err != nil {
		return err
	}
	t, err := d.beginWrite()
	if err != nil {
		return d.fail("update", err)
	}
	return t.run(fn)
}

// Batch implements DB.
func (d *pgDB) Batch(fn func(Tx) error) error {
	if d.readOnly {
		return fmt.Errorf("kv: batch %s: %w", d.path, ErrReadOnly)
	}
	if err := d.closedErr("batch"); err != nil {
		return err
	}
	return d.batch.do(fn)
}

// batchUpdate is the batcher's Update: a commit that conflicts re-runs the
// functions, which Batch's contract makes safe.
func (d *pgDB) batchUpdate(fn func(Tx) error) error {
	for run := 1; ; run++ {
		err := d.Update(fn)
		if !errors.Is(err, ErrConflict) || run == maxConflictRuns {
			return err
		}
		time.Sleep(time.Duration(run) * time.Millisecond)
	}
}

// beginWrite begins a write transaction, retrying a conflict on the lock
// (no function has run yet).
func (d *pgDB) beginWrite() (*pgTx, error) {
	for run := 1; ; run++ {
		t, err := d.begin(true)
		var pgErr *pgconn.PgError
		if err == nil || run == maxConflictRuns || !errors.As(err, &pgErr) || !isConflict(pgErr) {
			return t, err
		}
		time.Sleep(time.Duration(run) * time.Millisecond)
	}
}

// begin begins a transaction on a connection of the pool. A connection
// taken idle that fails (the server restarted since) is dropped and the
// next one tried: nothing ran on it.
func (d *pgDB) begin(writable bool) (*pgTx, error) {
	for {
		c, err := d.pool.acquire(bg)
		if err != nil {
			return nil, err
		}
		t, err := d.beginOn(c, writable)
		if err == nil {
			return t, nil
		}
		c.fail(err)
		if !c.broken && c.c.PgConn().TxStatus() != 'I' {
			c.sendEnd(d.sql.rollback)
		}
		d.pool.release(c)
		if !c.reused || !c.broken {
			return nil, err
		}
	}
}

// beginOn sends, in one round trip, BEGIN, the lock (a write) or the read
// of the meta row (a View), and the read of the bucket set if it moved.
func (d *pgDB) beginOn(c *pgConn, writable bool) (*pgTx, error) {
	cached := d.buckets.Load()
	b := &pgx.Batch{}
	var m pgMetaRow
	if writable {
		b.Queue(d.sql.beginWrite)
		b.Queue(d.sql.lock).QueryRow(func(row pgx.Row) error { return m.scan(row) })
		b.Queue(d.sql.bucketsIfMoved, cached.gen).Query(func(rows pgx.Rows) error {
			if m.gen != cached.gen {
				return m.scanBuckets(rows, false)
			}
			return nil
		})
	} else {
		b.Queue(d.sql.beginView)
		b.Queue(d.sql.viewMeta, cached.gen).Query(func(rows pgx.Rows) error { return m.scanBuckets(rows, true) })
	}
	d.trips.Add(1)
	if err := c.c.SendBatch(bg, b).Close(); err != nil {
		return nil, err
	}
	if !m.found {
		return nil, pgOwnError{fmt.Errorf("the store's meta row is missing: %w", ErrInvalidFile)}
	}
	set := cached.byName
	if m.gen != cached.gen {
		set = m.set
		d.noteBuckets(&pgBucketSet{gen: m.gen, byName: set})
	}
	t := &pgTx{
		txState: txState{writable: writable, epoch: uint64(m.epoch)},
		d:       d, c: c, gen: m.gen, base: set, nextb: m.nextb, nextb0: m.nextb, epoch0: uint64(m.epoch),
	}
	return t, nil
}

// pgMetaRow is the meta row and, when it moved, the bucket set.
type pgMetaRow struct {
	found                  bool
	rev, epoch, gen, nextb int64
	set                    map[string]pgBucketInfo
}

func (m *pgMetaRow) scan(row pgx.Row) error {
	if err := row.Scan(&m.rev, &m.epoch, &m.gen, &m.nextb); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	}
	m.found = true
	return nil
}

// scanBuckets reads bucket rows, after the meta row's columns when withMeta.
func (m *pgMetaRow) scanBuckets(rows pgx.Rows, withMeta bool) error {
	m.set = map[string]pgBucketInfo{}
	var id, seq *int64
	var name []byte
	dest := []any{&id, &name, &seq}
	if withMeta {
		dest = append([]any{&m.rev, &m.epoch, &m.gen, &m.nextb}, dest...)
	}
	_, err := pgx.ForEachRow(rows, dest, func() error {
		m.found = true
		if id != nil {
			m.set[string(name)] = pgBucketInfo{id: *id, seq: uint64(*seq)}
		}
		return nil
	})
	return err
}

// noteBuckets keeps s as the bucket set to reuse, unless a newer one is
// kept already.
func (d *pgDB) noteBuckets(s *pgBucketSet) {
	for {
		cur := d.buckets.Load()
		if cur.gen >= s.gen || d.buckets.CompareAndSwap(cur, s) {
			return
		}
	}
}

// run runs fn in t, then commits (a write) or ends t, and releases its
// connection. A read that failed (pgFailure) returns its error.
func (t *pgTx) run(fn func(Tx) error) (err error) {
	ended := false
	defer func() {
		t.done = true
		if !ended && !t.c.broken {
			t.c.sendEnd(t.d.sql.rollback)
		}
		t.d.pool.release(t.c)
		if p := recover(); p != nil {
			f, ok := p.(*pgFailure)
			if !ok {
				panic(p)
			}
			err = f.err
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if !t.writable {
		return nil
	}
	ended = true
	return t.commit()
}

// commit sends the transaction's writes and COMMIT in one round trip.
func (t *pgTx) commit() error {
	if err := t.probe(); err != nil {
		t.c.fail(err)
		if !t.c.broken {
			t.c.sendEnd(t.d.sql.rollback)
		}
		return t.d.fail("commit", err)
	}
	b := &pgx.Batch{}
	published := t.queueWrites(b)
	if published == nil {
		t.c.sendEnd(t.d.sql.rollback) // nothing to write: let the lock go
		return nil
	}
	b.Queue(t.d.sql.commit)
	t.d.trips.Add(1)
	err := t.c.c.SendBatch(bg, b).Close()
	if err == nil {
		t.d.noteBuckets(published)
		return nil
	}
	t.c.fail(err)
	if !t.c.broken && t.c.c.PgConn().TxStatus() != 'I' {
		t.c.sendEnd(t.d.sql.rollback)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return t.d.fail("commit", err)
	}
	return fmt.Errorf("kv: commit %s: connection lost during the commit, whose outcome is unknown: %w: %s",
		t.d.path, ErrUnavailable, scrub(err.Error(), t.d.secrets))
}

// minProbe is how many puts of keys the transaction does not know absent
// make probing worth a round trip before the commit.
const minProbe = 64

// probe fetches, in one round trip, the last key of every bucket the
// transaction puts keys in that it does not know absent, when they are at
// least minProbe: the keys after it (ids that grow, or times) are then
// known absent and inserted rather than upserted (an upsert of a new key
// costs PostgreSQL a speculative insertion: measured, a quarter of an
// ingest's time). Asking which of the keys exist costs as much as the
// upserts save. The writer holds the lock: no one inserts meanwhile.
func (t *pgTx) probe() error {
	b := &pgx.Batch{}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(t.handles)) {
		h := t.handles[name]
		if h.created || h.writes.Len() == 0 {
			continue
		}
		n := 0
		h.writes.Scan(func(w pgWrite) bool {
			if !w.del && !h.knownAbsent(w.k) {
				n++
			}
			return true
		})
		if n == 0 {
			continue
		}
		total += n
		b.Queue(t.d.sql.pageLast, h.id, 1).Query(func(rows pgx.Rows) error {
			var k, v []byte
			var last []item
			_, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
				last = append(last, item{k: k, v: v})
				return nil
			})
			if err == nil {
				h.learn(last, 1, true, nil)
			}
			return err
		})
	}
	if total < minProbe {
		return nil
	}
	t.d.trips.Add(1)
	return t.c.c.SendBatch(bg, b).Close()
}

// queueWrites queues the transaction's writes and returns the bucket set
// it leaves, or nil when it wrote nothing.
func (t *pgTx) queueWrites(b *pgx.Batch) *pgBucketSet {
	sql := &t.d.sql
	setChanged := len(t.dropped) > 0
	if len(t.dropped) > 0 {
		b.Queue(sql.deleteBucketKeys, t.dropped)
		b.Queue(sql.deleteBuckets, t.dropped)
	}
	var ids, seqs []int64
	var names [][]byte
	wrote := false
	for _, name := range slices.Sorted(maps.Keys(t.handles)) {
		h := t.handles[name]
		if h.created || h.seqDirty {
			ids, names, seqs = append(ids, h.id), append(names, []byte(name)), append(seqs, int64(h.seq))
		}
		wrote = h.queueWrites(b) || wrote
	}
	if len(ids) > 0 {
		setChanged = true
		// Before the keys: a new bucket's row goes first (nothing refers
		// to it, but a reader of the rows should find it).
		b.Queue(sql.upsertBuckets, ids, names, seqs)
	}
	if !setChanged && !wrote && !t.bumped {
		return nil
	}
	gen := t.gen
	if setChanged {
		gen++
	}
	if setChanged || t.bumped || t.nextb != t.nextb0 {
		b.Queue(sql.updateMeta, int64(t.epoch), gen, t.nextb)
	}
	set := maps.Clone(t.buckets())
	for name, h := range t.handles {
		set[name] = pgBucketInfo{id: h.id, seq: h.seq}
	}
	return &pgBucketSet{gen: gen, byName: set}
}

// buckets is the transaction's bucket set.
func (t *pgTx) buckets() map[string]pgBucketInfo {
	if t.set != nil {
		return t.set
	}
	return t.base
}

// ownSet gives the transaction its own bucket set.
func (t *pgTx) ownSet() map[string]pgBucketInfo {
	if t.set == nil {
		t.set = maps.Clone(t.base)
	}
	return t.set
}

// Writable implements Tx.
func (t *pgTx) Writable() bool { return t.writable }

// Bucket implements Tx.
func (t *pgTx) Bucket(name []byte) Bucket {
	t.checkRead()
	if h := t.bucket(name); h != nil {
		return h
	}
	return nil
}

// bucket returns the handle on the bucket named name, or nil.
func (t *pgTx) bucket(name []byte) *pgBucket {
	if h, ok := t.handles[string(name)]; ok {
		return h
	}
	info, ok := t.buckets()[string(name)]
	if !ok {
		return nil
	}
	return t.newHandle(string(name), info, false)
}

func (t *pgTx) newHandle(name string, info pgBucketInfo, created bool) *pgBucket {
	h := &pgBucket{
		bucketState: bucketState{tx: &t.txState, name: name},
		t:           t, id: info.id, seq: info.seq, created: created,
		writes: btree.NewBTreeGOptions(pgWriteLess, btree.Options{NoLocks: true}),
		cache:  newTree(),
	}
	if t.handles == nil {
		t.handles = make(map[string]*pgBucket)
	}
	t.handles[name] = h
	return h
}

// CreateBucketIfNotExists implements Tx.
func (t *pgTx) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	if err := t.checkWrite(); err != nil {
		return nil, fmt.Errorf("kv: create bucket %q: %w", name, err)
	}
	if err := checkBucketName(name); err != nil {
		return nil, err
	}
	if len(name) > PostgresMaxKeySize {
		return nil, fmt.Errorf("kv: create bucket: name of %d bytes exceeds %d on PostgreSQL: %w", len(name), PostgresMaxKeySize, ErrKeyTooLarge)
	}
	if h := t.bucket(name); h != nil {
		return h, nil
	}
	t.nextb++
	info := pgBucketInfo{id: t.nextb}
	t.ownSet()[string(name)] = info
	h := t.newHandle(string(name), info, true)
	h.wrote()
	return h, nil
}

// DeleteBucket implements Tx.
func (t *pgTx) DeleteBucket(name []byte) error {
	if err := t.checkWrite(); err != nil {
		return fmt.Errorf("kv: delete bucket %q: %w", name, err)
	}
	info, ok := t.buckets()[string(name)]
	if !ok {
		return fmt.Errorf("kv: delete bucket %q: %w", name, ErrBucketNotFound)
	}
	delete(t.ownSet(), string(name))
	t.dropped = append(t.dropped, info.id)
	if h, ok := t.handles[string(name)]; ok {
		h.deleted = true
		delete(t.handles, string(name))
	}
	return nil
}

// ForEachBucket implements Tx.
func (t *pgTx) ForEachBucket(fn func(name []byte, b Bucket) error) error {
	t.checkRead()
	for _, name := range slices.Sorted(maps.Keys(t.buckets())) {
		if err := fn([]byte(name), t.bucket([]byte(name))); err != nil {
			return err
		}
	}
	return nil
}

// fetch runs a read and returns its rows, copied; a failure ends the
// transaction (see pgFailure).
func (t *pgTx) fetch(sql string, args ...any) []item {
	t.d.trips.Add(1)
	rows, _ := t.c.c.Query(bg, sql, args...)
	var out []item
	var k, v []byte
	_, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
		out = append(out, item{k: k, v: v})
		return nil
	})
	if err != nil {
		t.failRead(err)
	}
	return out
}

// count runs a count.
func (t *pgTx) count(sql string, args ...any) int {
	var n int64
	t.d.trips.Add(1)
	if err := t.c.c.QueryRow(bg, sql, args...).Scan(&n); err != nil {
		t.failRead(err)
	}
	return int(n)
}

// failRead ends the transaction on a failed read.
func (t *pgTx) failRead(err error) {
	t.c.fail(err)
	panic(&pgFailure{err: t.d.fail("read", err)})
}

// pgWrite is a write of a transaction: a put or a delete.
type pgWrite struct {
	k, v []byte
	del  bool
}

func pgWriteLess(a, b pgWrite) bool { return bytes.Compare(a.k, b.k) < 0 }

// pgBucket is a handle on a bucket in a PostgreSQL transaction: the
// transaction's writes to it (an overlay) over the server's keys it
// fetched (cache), of which it knows the ranges cov completely.
type pgBucket struct {
	bucketState
	t        *pgTx
	id       int64
	created  bool // in this transaction: the server holds no key of it
	seq      uint64
	seqDirty bool
	writes   *btree.BTreeG[pgWrite]
	cache    *tree
	cov      coverage
	cached   int
	serverN  int // the server's key count, once counted, plus one
}

var _ Bucket = (*pgBucket)(nil)

// learn records rows fetched: ascending from from (inclusive), or, when
// desc, descending before before (nil: from the end); limit is the page
// size asked for, so fewer rows means the range ends there.
func (h *pgBucket) learn(rows []item, limit int, desc bool, from []byte) {
	h.remember(rows)
	full := len(rows) == limit
	switch {
	case !desc && !full:
		h.cov.add(span{lo: from})
	case !desc:
		h.cov.add(span{lo: from, hi: successor(rows[len(rows)-1].k)})
	case !full:
		h.cov.add(span{lo: []byte{}, hi: from})
	default:
		h.cov.add(span{lo: rows[len(rows)-1].k, hi: from})
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
		s, ok := h.cov.containing(k)
		if !ok {
			n := size()
			h.learn(h.t.fetch(h.t.d.sql.pageAsc, h.id, k, n), n, false, k)
			continue
		}
		var found item
		ok = false
		h.cache.Ascend(item{k: k}, func(it item) bool { found, ok = it, true; return false })
		if ok && beforeHi(found.k, s.hi) {
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
		s, ok := h.cov.below(k)
		if !ok {
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
		var found item
		ok = false
		visit := func(it item) bool {
			if k != nil && bytes.Compare(it.k, k) >= 0 {
				return true
			}
			found, ok = it, true
			return false
		}
		if k == nil {
			h.cache.Reverse(visit)
		} else {
			h.cache.Descend(item{k: k}, visit)
		}
		if ok && bytes.Compare(found.k, s.lo) >= 0 {
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

func (h *pgBucket) writeFloor(k []byte) (w pgWrite, ok bool) {
	visit := func(it pgWrite) bool {
		if k != nil && bytes.Compare(it.k, k) >= 0 {
			return true
		}
		w, ok = it, true
		return false
	}
	if k == nil {
		h.writes.Reverse(visit)
	} else {
		h.writes.Descend(pgWrite{k: k}, visit)
	}
	return w, ok
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
	if _, ok := h.cov.containing(key); !ok {
		h.learn(h.t.fetch(h.t.d.sql.pageAsc, h.id, key, 1), 1, false, key)
	}
	if it, ok := h.cache.Get(item{k: key}); ok {
		return it.v
	}
	return nil
}

// knownAbsent reports whether the server holds no key k, as far as the
// transaction knows.
func (h *pgBucket) knownAbsent(k []byte) bool {
	if h.created {
		return true
	}
	if _, ok := h.cov.containing(k); !ok {
		return false
	}
	_, ok := h.cache.Get(item{k: k})
	return !ok
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
		if h.serverN == 0 {
			h.serverN = h.t.count(h.t.d.sql.count, h.id) + 1
		}
		return h.serverN - 1
	}
	keys := make([][]byte, 0, h.writes.Len())
	h.writes.Scan(func(w pgWrite) bool { keys = append(keys, w.k); return true })
	return h.t.count(h.t.d.sql.countExcept, h.id, keys) + puts
}

// queueWrites queues the handle's puts and deletes; it reports whether
// there were any. Puts of keys the transaction knows absent are plain
// inserts, the others upserts.
func (h *pgBucket) queueWrites(b *pgx.Batch) bool {
	if h.writes.Len() == 0 {
		return false
	}
	sql := &h.t.d.sql
	var dels chunker
	var ins, ups chunker
	h.writes.Scan(func(w pgWrite) bool {
		switch {
		case w.del && !h.knownAbsent(w.k):
			dels.add(b, w.k, nil, func(k, _ [][]byte) { b.Queue(sql.deleteKeys, h.id, k) })
		case w.del:
		case h.knownAbsent(w.k):
			ins.add(b, w.k, w.v, func(k, v [][]byte) { b.Queue(sql.insertKeys, h.id, k, v) })
		default:
			ups.add(b, w.k, w.v, func(k, v [][]byte) { b.Queue(sql.upsertKeys, h.id, k, v) })
		}
		return true
	})
	dels.flush()
	ins.flush()
	ups.flush()
	return true
}

// chunker gathers rows into statements of bounded size.
type chunker struct {
	keys, values [][]byte
	bytes        int
	queue        func(k, v [][]byte)
}

func (c *chunker) add(_ *pgx.Batch, k, v []byte, queue func(k, v [][]byte)) {
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

// remember caches rows fetched, starting over (cache and coverage) once
// the cache holds more than maxCached bytes.
func (h *pgBucket) remember(rows []item) {
	if h.cached > maxCached {
		h.cache, h.cov, h.cached = newTree(), coverage{}, 0
	}
	for _, it := range rows {
		h.cache.Set(it)
		h.cached += len(it.k) + len(it.v)
	}
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
