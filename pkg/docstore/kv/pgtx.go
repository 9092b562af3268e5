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

// pgBucketSet is the bucket set, and the epoch, of the state after the
// commit that made the meta row's rev rev; never modified.
type pgBucketSet struct {
	rev, gen, sgen int64
	epoch          uint64
	byName         map[string]pgBucketInfo
}

// pgTx is a PostgreSQL transaction on one connection.
type pgTx struct {
	txState
	d *pgDB
	c *pgConn
	// inTx: BEGIN was sent (an optimistic View sends none until its
	// second read).
	inTx bool
	// rev, gen, sgen: the meta row's when the transaction began.
	rev, gen, sgen int64
	base           map[string]pgBucketInfo
	spec           pgSpec
	rerun          bool // an optimistic View found fn was told something stale
	// set is the transaction's own bucket set once it created or deleted
	// one; nil until then (base is the set).
	set     map[string]pgBucketInfo
	handles map[string]*pgBucket
	dropped []int64 // ids of the buckets deleted
	nextb   int64   // the last bucket id allocated
	nextb0  int64
	// queued are reads to send with the next (PrefetchWithNext).
	queued []pgQueued
	// rc is the read cache of the revision the transaction reads (rev); an
	// optimistic View assumes that revision until its first round trip,
	// and rc answers it before then only as confirm allows. nil: none.
	rc *pgReadCache
}

var _ Tx = (*pgTx)(nil)

var bg = context.Background()

// View implements DB. With Options.ViewsMayRerun, the View is optimistic
// (see pgSpec), and runs fn again in an ordinary View when what fn was told
// before its first read turns out stale.
func (d *pgDB) View(fn func(Tx) error) error {
	if d.rerunViews {
		err := d.view(fn, true)
		if err != errRerun {
			return err
		}
		d.reruns.Add(1)
	}
	return d.view(fn, false)
}

// view runs fn in a View, optimistic or not.
func (d *pgDB) view(fn func(Tx) error, optimistic bool) error {
	if err := d.closedErr("view"); err != nil {
		return err
	}
	var t *pgTx
	var err error
	if optimistic {
		t, err = d.beginOptimistic()
	} else {
		t, err = d.begin(false)
	}
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
		b.Queue(d.sql.bucketsIfMoved, cached.gen, cached.sgen).Query(func(rows pgx.Rows) error {
			if m.moved(cached) {
				return m.scanBuckets(rows, false)
			}
			return nil
		})
	} else {
		b.Queue(d.sql.beginView)
		m.queueView(b, d, cached)
	}
	d.trips.Add(1)
	if err := c.c.SendBatch(bg, b).Close(); err != nil {
		return nil, err
	}
	if !m.found {
		return nil, errNoMeta
	}
	if writable {
		m.rev-- // the lock counted this transaction's commit: the state read is the one before
	}
	set := d.noteMeta(&m, cached)
	t := &pgTx{
		txState: txState{writable: writable, epoch: uint64(m.epoch)},
		d:       d, c: c, inTx: true, rev: m.rev, gen: m.gen, sgen: m.sgen, base: set,
		nextb: m.nextb, nextb0: m.nextb,
	}
	t.rc = d.readCache(m.rev)
	return t, nil
}

var errNoMeta = pgOwnError{fmt.Errorf("the store's meta row is missing: %w", ErrInvalidFile)}

// pgMetaRow is the meta row and, when it moved, the bucket set.
type pgMetaRow struct {
	found                        bool
	rev, epoch, gen, sgen, nextb int64
	set                          map[string]pgBucketInfo
}

// moved reports whether the bucket set differs from cached.
func (m *pgMetaRow) moved(cached *pgBucketSet) bool {
	return m.gen != cached.gen || m.sgen != cached.sgen
}

// queueView queues a View's read of the meta row (and of the bucket set
// if it moved from cached) into m.
func (m *pgMetaRow) queueView(b *pgx.Batch, d *pgDB, cached *pgBucketSet) {
	b.Queue(d.sql.viewMeta, cached.gen, cached.sgen).Query(func(rows pgx.Rows) error { return m.scanBuckets(rows, true) })
}

func (m *pgMetaRow) scan(row pgx.Row) error {
	if err := row.Scan(&m.rev, &m.epoch, &m.gen, &m.sgen, &m.nextb); err != nil {
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
		dest = append([]any{&m.rev, &m.epoch, &m.gen, &m.sgen, &m.nextb}, dest...)
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

// noteMeta returns the bucket set of the snapshot m describes (cached's
// when it did not move) and keeps what m says for the next transactions.
func (d *pgDB) noteMeta(m *pgMetaRow, cached *pgBucketSet) map[string]pgBucketInfo {
	set := cached.byName
	if m.moved(cached) {
		set = m.set
	}
	d.noteBuckets(&pgBucketSet{rev: m.rev, epoch: uint64(m.epoch), gen: m.gen, sgen: m.sgen, byName: set})
	return set
}

// noteBuckets keeps s as what the next transactions start from, unless
// what is kept is as recent.
func (d *pgDB) noteBuckets(s *pgBucketSet) {
	for {
		cur := d.buckets.Load()
		if cur.rev >= s.rev || d.buckets.CompareAndSwap(cur, s) {
			return
		}
	}
}

// run runs fn in t, then commits (a write) or ends t, and releases its
// connection. A read that failed (pgFailure) returns its error.
func (t *pgTx) run(fn func(Tx) error) (err error) {
	ended := false
	defer func() {
		if p := recover(); p != nil {
			switch f := p.(type) {
			case *pgFailure:
				err = f.err
			case pgRerun:
				err = errRerun
			default:
				t.end(ended)
				panic(p)
			}
		}
		t.end(ended)
	}()
	fnErr := fn(t)
	if !t.writable {
		// fn may have recovered the panic that asked for a re-run; an
		// optimistic View not yet checked is checked now, whatever fn
		// returned (its error may come from what it was told).
		if t.rerun || !t.checkOptimistic() {
			return errRerun
		}
		return fnErr
	}
	if fnErr != nil {
		return fnErr
	}
	ended = true
	return t.commit()
}

// end ends t unless ended (committed), and releases its connection.
func (t *pgTx) end(ended bool) {
	t.done = true
	if !ended && t.inTx && !t.c.broken {
		t.c.sendEnd(t.d.sql.rollback)
	}
	t.d.pool.release(t.c)
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
		t.d.advanceCache(t) // first: a View that starts from published finds it
		t.d.noteBuckets(published)
		return nil
	}
	t.c.fail(err)
	if !t.c.broken && t.c.c.PgConn().TxStatus() != 'I' {
		t.c.sendEnd(t.d.sql.rollback)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == errKeyGone {
		t.d.rcache.Store(nil) // what the process knows of the store is not what it holds
		return fmt.Errorf("kv: commit %s: a key the transaction read is no longer in the store, whose rows were changed outside mcpkit; nothing was written: %w",
			t.d.path, ErrInvalidFile)
	}
	if errors.As(err, &pgErr) {
		return t.d.fail("commit", err)
	}
	return fmt.Errorf("kv: commit %s: connection lost during the commit, whose outcome is unknown: %w: %s",
		t.d.path, ErrUnavailable, scrub(err.Error(), t.d.secrets))
}

// errKeyGone is the SQLSTATE (division_by_zero) with which the update of
// keys known present fails when fewer rows matched (updateKeys).
const errKeyGone = "22012"

// minProbe is how many puts of keys the transaction knows neither present
// nor absent make probing worth a round trip before the commit.
const minProbe = 64

// probe fetches, in one round trip, the last key of every bucket the
// transaction puts keys in that it does not know absent, when they are at
// least minProbe (a key known present is updated either way): the keys
// after it (ids that grow, or times) are then
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
			if _, known := h.knownKey(w.k); !w.del && !known {
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
	wrote, seqChanged := false, false
	for _, name := range slices.Sorted(maps.Keys(t.handles)) {
		h := t.handles[name]
		if h.created || h.seqDirty {
			ids, names, seqs = append(ids, h.id), append(names, []byte(name)), append(seqs, int64(h.seq))
			setChanged = setChanged || h.created
			seqChanged = seqChanged || !h.created
		}
		wrote = h.queueWrites(b) || wrote
	}
	if len(ids) > 0 {
		// After the deletes of dropped buckets, whose names a new bucket
		// may take; within the transaction, order is otherwise free.
		b.Queue(sql.upsertBuckets, ids, names, seqs)
	}
	if !setChanged && !seqChanged && !wrote && !t.bumped {
		return nil
	}
	gen, sgen := t.gen, t.sgen
	if setChanged {
		gen++
	}
	if seqChanged {
		sgen++
	}
	if setChanged || seqChanged || t.bumped || t.nextb != t.nextb0 {
		b.Queue(sql.updateMeta, int64(t.epoch), gen, sgen, t.nextb)
	}
	set := maps.Clone(t.buckets())
	for name, h := range t.handles {
		set[name] = pgBucketInfo{id: h.id, seq: h.seq}
	}
	return &pgBucketSet{rev: t.rev + 1, epoch: t.epoch, gen: gen, sgen: sgen, byName: set}
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
	t.spec.sawBuckets = true
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
		known:  t.knownOf(info.id, created),
	}
	if t.handles == nil {
		t.handles = make(map[string]*pgBucket)
	}
	t.handles[name] = h
	return h
}

// knownOf returns what is known of bucket id's server keys: the read
// cache's, or the transaction's own (a bucket it created has none).
func (t *pgTx) knownOf(id int64, created bool) *pgKnown {
	if t.rc == nil || created {
		return newOwnKnown()
	}
	return t.rc.bucket(id)
}

// readRev notes the revision the transaction reads, learned in its first
// round trip, before any of that round trip's rows is recorded. When an
// optimistic View assumed another, its handles leave that revision's
// cache, which never answered them (see confirm).
func (t *pgTx) readRev(rev int64) {
	if t.writable || rev == t.rev {
		return
	}
	t.rev = rev
	t.rc = t.d.readCache(rev)
	for _, h := range t.handles {
		h.known = t.knownOf(h.id, h.created)
	}
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
	t.spec.sawBuckets = true
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
	var out []item
	if t.spec.state == specPending && len(t.queued) == 0 {
		switch sql {
		case t.d.sql.pageAsc:
			return t.firstPage(args...)
		case t.d.sql.getMany:
			return t.firstRead(t.d.sql.viewFirstMany, args...)
		}
	}
	t.read(sql, args, func(rows pgx.Rows) error { return scanItems(rows, &out) })
	return out
}

// scanItems appends the rows (key, value) to out.
func scanItems(rows pgx.Rows, out *[]item) error {
	var k, v []byte
	_, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
		*out = append(*out, item{k: k, v: v})
		return nil
	})
	return err
}

// pgQueued is a read queued to go with the transaction's next
// (PrefetchWithNext): its statement and what reads its rows.
type pgQueued struct {
	sql  string
	args []any
	scan func(pgx.Rows) error
}

// queue queues a read to be sent with the transaction's next.
func (t *pgTx) queue(sql string, args []any, scan func(pgx.Rows) error) {
	t.queued = append(t.queued, pgQueued{sql: sql, args: args, scan: scan})
}

// count runs a count.
func (t *pgTx) count(sql string, args ...any) int {
	var n int
	t.read(sql, args, func(rows pgx.Rows) (err error) {
		n, err = scanCount(rows)
		return err
	})
	return n
}

// scanCount reads the row of a count.
func scanCount(rows pgx.Rows) (int, error) {
	var n int64
	_, err := pgx.ForEachRow(rows, []any{&n}, func() error { return nil })
	return int(n), err
}

// read runs a read of the transaction, after the reads queued before it,
// in one round trip: alone once the transaction began and nothing is
// queued, else in a batch, first (an optimistic View) with BEGIN and the
// meta row's read, whose check of what the View was told before follows
// (see pgSpec).
func (t *pgTx) read(sql string, args []any, scan func(pgx.Rows) error) {
	t.d.trips.Add(1)
	queued := t.queued
	t.queued = nil
	if t.inTx && len(queued) == 0 {
		rows, _ := t.c.c.Query(bg, sql, args...)
		if err := scan(rows); err != nil {
			t.failRead(err)
		}
		return
	}
	began := !t.inTx
	cached := &pgBucketSet{gen: t.gen, sgen: t.sgen, byName: t.base}
	b := &pgx.Batch{}
	var m pgMetaRow
	if began {
		b.Queue(t.d.sql.beginView)
		b.Queue(t.d.sql.viewMeta, cached.gen, cached.sgen).Query(func(rows pgx.Rows) error {
			err := m.scanBuckets(rows, true)
			if err == nil && m.found {
				t.readRev(m.rev)
			}
			return err
		})
	}
	for _, q := range queued {
		b.Queue(q.sql, q.args...).Query(q.scan)
	}
	b.Queue(sql, args...).Query(scan)
	t.inTx = true
	err := t.c.c.SendBatch(bg, b).Close()
	if err == nil && began && !m.found {
		err = errNoMeta
	}
	if err != nil {
		t.failRead(err)
	}
	if began {
		t.d.noteMeta(&m, cached)
		t.checkMeta(&m)
	}
}

// failRead ends the transaction on a failed read.
func (t *pgTx) failRead(err error) {
	t.c.fail(err)
	if t.spec.state == specPending && t.c.reused && t.c.broken {
		// An optimistic View's first read on a connection that died
		// idle: the ordinary View drops it and tries another.
		t.askRerun()
	}
	panic(&pgFailure{err: t.d.fail("read", err)})
}

// rangeFound is what fetchRanges found for one range: the key before it
// and the key after it (nil: none), how many rows of its own, and the
// last of them.
type rangeFound struct {
	before, after, last []byte
	n                   int
}

// fetchedRanges are the rows of fetchRanges, and what each range found.
type fetchedRanges struct {
	items    []item
	perRange []rangeFound
}

// fetchRanges reads, in one statement, up to limit rows of each range
// [los[i], his[i]) of bucket id and the key on either side of each.
func (t *pgTx) fetchRanges(id int64, los, his [][]byte, limit int) fetchedRanges {
	out := fetchedRanges{perRange: make([]rangeFound, len(los))}
	t.read(t.d.sql.getRanges, []any{id, los, his, limit}, func(rows pgx.Rows) error { return out.scan(rows, los, his) })
	return out
}

// scan reads the rows of the ranges [los[i], his[i]) into f.
func (f *fetchedRanges) scan(rows pgx.Rows, los, his [][]byte) error {
	var i int64
	var k, v []byte
	_, err := pgx.ForEachRow(rows, []any{&i, &k, &v}, func() error {
		if i < 1 || int(i) > len(los) {
			return fmt.Errorf("kv: range %d of %d", i, len(los))
		}
		r := &f.perRange[i-1]
		switch {
		case bytes.Compare(k, los[i-1]) < 0:
			r.before = k
		case bytes.Compare(k, his[i-1]) >= 0:
			r.after = k
		default:
			r.n++
			r.last = k
		}
		f.items = append(f.items, item{k: k, v: v})
		return nil
	})
	return err
}
