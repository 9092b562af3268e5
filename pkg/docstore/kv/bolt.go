package kv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// initialMmapSize is the bbolt map reserved at Open (address space, not
// memory): below it a commit that grows the file never waits for readers.
const initialMmapSize = 1 << 30

// The file grows by a step proportional to its size (see growStep), so
// that a new store takes tens of kilobytes, not bbolt's 16 MiB step (which
// it takes whenever the map is larger than the step, as initialMmapSize
// is), while a growing store still pays one truncate and fsync per
// doubling at most, and per 16 MiB once large.
const (
	minGrowStep = 32 << 10
	maxGrowStep = 16 << 20
)

// growStep is how much to grow a file of size bytes by, past what the
// commit needs.
func growStep(size int64) int {
	return int(min(max(size, minGrowStep), maxGrowStep))
}

// boltDB is the bbolt backend.
type boltDB struct {
	db       *bolt.DB
	path     string
	readOnly bool
	closed   atomic.Bool
	batch    batcher
	// wmu is held by the writer from its begin until its epoch is final
	// (published or restored), which bbolt's own writer lock, released
	// inside Commit, does not cover.
	wmu sync.Mutex
	// epoch is the last epoch change, published by the writer just before
	// its commit (see epochMark). The file has this process as its only
	// writer, so the epoch lives here, not in the file.
	epoch atomic.Pointer[epochMark]
	// lazy checks what Open did not (see lazyCheck).
	lazy *lazyCheck
}

// epochMark says that the epoch is epoch from bbolt transaction txid on and
// was prev before it. A writer that bumps the epoch publishes its mark before
// its commit (and puts the previous one back if the commit fails), so that a
// View, which reads the mark after it began, knows the epoch of its own
// snapshot whether or not that commit is in it: bbolt's txid of a View is
// that of the last commit it sees.
type epochMark struct {
	txid, epoch, prev uint64
}

// errEpochMoved: the epoch moved twice between a View's begin and its read
// of the mark; the View begins again.
var errEpochMoved = errors.New("kv: epoch moved twice while the view began")

// viewEpoch returns the epoch of the snapshot of a View whose bbolt txid is
// id, false when two bumping commits after it published their marks first.
func (d *boltDB) viewEpoch(id uint64) (uint64, bool) {
	m := d.epoch.Load()
	switch {
	case id >= m.txid:
		return m.epoch, true
	case id+1 == m.txid:
		return m.prev, true
	}
	return 0, false
}

var _ DB = (*boltDB)(nil)

// Open opens or creates the bbolt file at path (mode 0600; ReadOnly requires
// an existing file, which it never modifies). A file locked by another DB
// fails with ErrLocked after opts.Timeout; a file that is not a store (or,
// read-only, an empty one) fails with ErrInvalidFile; a damaged one with a
// *DamageError, before bbolt maps it, when the damage is in what bbolt
// reads to open it (see inspectFile; a file without a persisted freelist,
// written by an earlier version, is checked whole, since bbolt rebuilds
// the freelist from every page), and otherwise when a transaction reaches
// it (see lazyCheck).
func Open(path string, opts Options) (DB, error) {
	info, err := inspectFile(path, true, opts.Timeout, true)
	if err != nil {
		info.whole = true // nothing to check: a new file, or an error
		switch {
		case !opts.ReadOnly && (errors.Is(err, errEmptyFile) || errors.Is(err, fs.ErrNotExist)):
			// bbolt creates the file, or initializes the empty one.
		case errors.Is(err, ErrDamaged):
			return nil, fmt.Errorf("kv: %w", err)
		case errors.Is(err, errBusy):
			return nil, lockedError(path, opts.Timeout)
		default:
			return nil, fmt.Errorf("kv: open %s: %w", path, err)
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = time.Nanosecond // bbolt waits forever on zero; this tries once
	}
	db, err := openBolt(path, &bolt.Options{
		Timeout:         timeout,
		NoSync:          opts.NoSync,
		ReadOnly:        opts.ReadOnly,
		InitialMmapSize: initialMmapSize,
		FreelistType:    bolt.FreelistMapType,
		// The freelist is written at every commit (a page or two), so
		// that an open reads it instead of following every page.
		NoFreelistSync: false,
	})
	if err != nil {
		switch {
		case errors.Is(err, ErrDamaged):
			err = fmt.Errorf("kv: %w", err)
		case errors.Is(err, bolterrors.ErrTimeout):
			err = lockedError(path, opts.Timeout)
		case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch),
			errors.Is(err, bolterrors.ErrChecksum):
			err = fmt.Errorf("kv: open %s: %w: %w", path, ErrInvalidFile, err)
		default:
			err = fmt.Errorf("kv: open %s: %w", path, err)
		}
		return nil, err
	}
	d := &boltDB{db: db, path: path, readOnly: opts.ReadOnly, lazy: soundFile()}
	if !info.whole {
		if d.lazy, err = startLazyCheck(path, info.meta); err != nil {
			db.Close()
			return nil, err
		}
	}
	d.epoch.Store(&epochMark{})
	d.batch.update = d.Update
	return d, nil
}

// lockedError is Open's error for a file another DB kept locked.
func lockedError(path string, timeout time.Duration) error {
	return fmt.Errorf("kv: open %s: no lock within %v: %w", path, timeout, ErrLocked)
}

// openBolt is bolt.Open with a panic (bbolt's assertions, on what
// checkFile did not catch or what changed since) turned into a
// *DamageError. Such a panic leaves bbolt's file descriptor open.
func openBolt(path string, opts *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer catchDamage(path, &err)
	return bolt.Open(path, 0o600, opts)
}

// Path implements DB.
func (d *boltDB) Path() string { return d.path }

// Close implements DB.
func (d *boltDB) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	// The whole-file check stops; the file the lazy checks read is closed
	// once bbolt's Close has waited for the transactions under way.
	d.lazy.stop.Store(true)
	err := d.db.Close()
	d.lazy.close()
	if err != nil {
		return fmt.Errorf("kv: close %s: %w", d.path, err)
	}
	return nil
}

// View implements DB.
func (d *boltDB) View(fn func(Tx) error) error {
	return d.run("view", false, fn)
}

// Update implements DB.
func (d *boltDB) Update(fn func(Tx) error) error {
	if d.readOnly {
		return fmt.Errorf("kv: update %s: %w", d.path, ErrReadOnly)
	}
	return d.run("update", true, fn)
}

// Batch implements DB.
func (d *boltDB) Batch(fn func(Tx) error) error {
	if d.readOnly {
		return fmt.Errorf("kv: batch %s: %w", d.path, ErrReadOnly)
	}
	if d.closed.Load() {
		return fmt.Errorf("kv: batch %s: %w", d.path, ErrClosed)
	}
	return d.batch.do(fn)
}

// run runs fn in a bbolt transaction, returning fn's error unchanged and
// bbolt's own (begin, commit) with context. Damage met in the transaction
// (a read of the map that faults, a bbolt assertion) fails it with a
// *DamageError, after rolling it back; fn's own panics propagate.
func (d *boltDB) run(op string, writable bool, fn func(Tx) error) error {
	if d.closed.Load() {
		return fmt.Errorf("kv: %s %s: %w", op, d.path, ErrClosed)
	}
	// A read past the end of a file truncated underneath is a SIGBUS,
	// fatal unless this goroutine turns faults into panics.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var ran bool
	var fnErr error
	var t *boltTx
	body := func(btx *bolt.Tx) error {
		var epoch uint64
		if writable {
			epoch = d.epoch.Load().epoch // final: the previous writer released wmu
		} else if e, ok := d.viewEpoch(uint64(btx.ID())); ok {
			epoch = e
		} else {
			return errEpochMoved
		}
		ran = true
		t = &boltTx{txState: txState{writable: writable, epoch: epoch}, tx: btx}
		if !writable && !d.lazy.sound.Load() {
			t.lazy = d.lazy
		}
		defer func() { t.done = true }()
		if fnErr = fn(t); fnErr == nil && writable {
			t.packAppends()
		}
		return fnErr
	}
	var err error
	if writable {
		err = d.update(body, func(btx *bolt.Tx) *epochMark {
			if !t.bumped {
				return nil
			}
			return &epochMark{txid: uint64(btx.ID()), epoch: t.epoch, prev: d.epoch.Load().epoch}
		})
	} else {
		for err = d.view(body); err == errEpochMoved; err = d.view(body) {
		}
	}
	switch {
	case err == nil || (ran && err == fnErr):
		return err
	case errors.Is(err, ErrDamaged):
		return fmt.Errorf("kv: %s: %w", op, err)
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen):
		return fmt.Errorf("kv: %s %s: %w", op, d.path, ErrClosed)
	case ran:
		return fmt.Errorf("kv: %s %s: commit: %w", op, d.path, err)
	default:
		return fmt.Errorf("kv: %s %s: begin: %w", op, d.path, err)
	}
}

// view runs body in a bbolt read transaction.
func (d *boltDB) view(body func(*bolt.Tx) error) (err error) {
	defer catchDamage(d.path, &err)
	return d.db.View(body)
}

// update runs body in bbolt's write transaction and commits it. It is
// bbolt's DB.Update but for a panic, which it rolls back as an error
// would be: bbolt's Update rolls a panic back by rebuilding the free page
// list from every page of the file (NoFreelistSync), on a goroutine of
// its own, where damage is fatal. When body succeeds, mark (if not nil)
// returns the epoch mark to publish with the commit, or nil.
func (d *boltDB) update(body func(*bolt.Tx) error, mark func(*bolt.Tx) *epochMark) (err error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if err := d.lazy.whole(); err != nil {
		return err
	}
	btx, err := d.db.Begin(true)
	if err != nil {
		return err
	}
	var restore *epochMark
	defer func() {
		if r := recover(); r != nil {
			_ = btx.Rollback() // ErrTxClosed when Commit closed it
			err = damageOf(d.path, r)
		}
		if err != nil && restore != nil {
			d.epoch.Store(restore)
		}
	}()
	btx.DB().AllocSize = growStep(btx.Size())
	if err := body(btx); err != nil {
		_ = btx.Rollback()
		return err
	}
	if mark != nil {
		if m := mark(btx); m != nil {
			restore = d.epoch.Swap(m)
		}
	}
	return btx.Commit()
}

// Backup implements DB with bbolt's own hot copy, of a file the
// whole-file check found sound (see lazyCheck).
func (d *boltDB) Backup(w io.Writer) (int64, error) {
	if d.closed.Load() {
		return 0, fmt.Errorf("kv: backup %s: %w", d.path, ErrClosed)
	}
	if err := d.lazy.whole(); err != nil {
		return 0, fmt.Errorf("kv: backup: %w", err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var n int64
	err := d.view(func(tx *bolt.Tx) error {
		var err error
		if n, err = tx.WriteTo(w); errors.Is(err, io.EOF) {
			err = &DamageError{Path: d.path, Problems: []string{fmt.Sprintf(
				"the file ends before its last page in use (%d bytes): it was truncated", tx.Size())}}
		}
		return err
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
			err = ErrClosed
		}
		return n, fmt.Errorf("kv: backup %s: %w", d.path, err)
	}
	return n, nil
}

// Check implements DB: checkFile (the structure, as Open checks it) and
// bbolt's own consistency check (key order, the free pages, pages neither
// reachable nor free), in a read transaction when read-only and in a write
// transaction rolled back otherwise (bbolt's Check is safe beside a
// writer only then). checkFile comes first: bbolt's check follows the
// pages on a goroutine of its own, where damage would be fatal.
func (d *boltDB) Check() error {
	if d.closed.Load() {
		return fmt.Errorf("kv: check %s: %w", d.path, ErrClosed)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var de DamageError
	check := func(tx *bolt.Tx) error {
		// In the transaction, so that no commit of this DB writes the
		// file while it is read.
		if err := checkFile(d.path, false, 0); err != nil {
			return err
		}
		for err := range tx.Check() {
			if len(de.Problems) < maxProblems {
				de.Problems = append(de.Problems, err.Error())
			} else {
				de.More++
			}
		}
		return errRollback
	}
	var err error
	if d.readOnly {
		err = d.view(check)
	} else {
		err = d.update(check, nil)
	}
	switch {
	case errors.Is(err, ErrDamaged):
		return fmt.Errorf("kv: check: %w", err)
	case err != errRollback:
		return fmt.Errorf("kv: check %s: %w", d.path, err)
	}
	if len(de.Problems) > 0 {
		de.Path = d.path
		return fmt.Errorf("kv: check: %w", &de)
	}
	return nil
}

// errRollback ends Check's transaction.
var errRollback = errors.New("kv: roll back")

// boltTx is a bbolt transaction with the handles it gave out.
type boltTx struct {
	txState
	tx      *bolt.Tx
	handles map[string]*boltBucket
	// lazy, when not nil, checks the pages a read reaches before bbolt
	// reads them (a read transaction begun before the file was found
	// sound).
	lazy *lazyCheck
}

var _ Tx = (*boltTx)(nil)

// Writable implements Tx.
func (t *boltTx) Writable() bool { return t.writable }

// handle returns the transaction's handle on the bbolt bucket b named name.
func (t *boltTx) handle(name []byte, b *bolt.Bucket) *boltBucket {
	if h, ok := t.handles[string(name)]; ok {
		return h
	}
	h := &boltBucket{bucketState: bucketState{tx: &t.txState, name: string(name)}, b: b, lazy: t.lazy, root: uint64(b.Root())}
	if t.handles == nil {
		t.handles = make(map[string]*boltBucket)
	}
	t.handles[h.name] = h
	return h
}

// Bucket implements Tx.
func (t *boltTx) Bucket(name []byte) Bucket {
	t.checkRead()
	if h, ok := t.handles[string(name)]; ok {
		return h
	}
	b := t.tx.Bucket(name)
	if b == nil {
		return nil
	}
	return t.handle(name, b)
}

// CreateBucketIfNotExists implements Tx.
func (t *boltTx) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	if err := t.checkWrite(); err != nil {
		return nil, fmt.Errorf("kv: create bucket %q: %w", name, err)
	}
	if err := checkBucketName(name); err != nil {
		return nil, err
	}
	if h, ok := t.handles[string(name)]; ok {
		return h, nil
	}
	existed := t.tx.Bucket(name) != nil
	b, err := t.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, fmt.Errorf("kv: create bucket %q: %w", name, err)
	}
	h := t.handle(name, b)
	if !existed {
		h.wrote()
	}
	return h, nil
}

// DeleteBucket implements Tx.
func (t *boltTx) DeleteBucket(name []byte) error {
	if err := t.checkWrite(); err != nil {
		return fmt.Errorf("kv: delete bucket %q: %w", name, err)
	}
	if len(name) == 0 {
		// bbolt takes the end of an empty root for an empty key, and fails
		// with ErrIncompatibleValue.
		return fmt.Errorf("kv: delete bucket %q: %w", name, ErrBucketNotFound)
	}
	if err := t.tx.DeleteBucket(name); err != nil {
		if errors.Is(err, bolterrors.ErrBucketNotFound) {
			err = ErrBucketNotFound
		}
		return fmt.Errorf("kv: delete bucket %q: %w", name, err)
	}
	if h, ok := t.handles[string(name)]; ok {
		h.deleted = true
		delete(t.handles, string(name))
	}
	return nil
}

// ForEachBucket implements Tx.
func (t *boltTx) ForEachBucket(fn func(name []byte, b Bucket) error) error {
	t.checkRead()
	return t.tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		return fn(name, t.handle(name, b))
	})
}

// packAppends fills the pages of every bucket that this transaction only
// appended to (see boltBucket.appends) before bbolt splits them at commit.
// bbolt splits a page it writes at half its size by default, which suits
// keys put in random order but leaves every page half empty when keys only
// ever grow (increasing ids): twice the pages on disk, written at each
// commit. A full page is what SQLite's B-tree leaves behind an append, too;
// a later insert inside it splits it as any other.
func (t *boltTx) packAppends() {
	for _, h := range t.handles {
		if h.appends == appendsOnly && !h.deleted {
			h.b.FillPercent = 1
		}
	}
}

// boltBucket is a handle on a bbolt bucket.
type boltBucket struct {
	bucketState
	b *bolt.Bucket
	// lazy is the transaction's (see boltTx); root is the bucket's root
	// page, 0 for an inline bucket (checked with the root bucket).
	lazy *lazyCheck
	root uint64
	// appends says whether every write to the bucket in this transaction
	// put a key after every key the bucket held at the time; lastPut is
	// the last key put (the caller keeps it unchanged until the commit).
	appends appendState
	lastPut []byte
}

// appendState is what a transaction's writes to a bucket were so far.
type appendState uint8

const (
	appendsNone  appendState = iota // no write yet
	appendsOnly                     // only puts after the bucket's last key
	appendsOther                    // a put among the keys, or a delete
)

// notePut records a put of key for packAppends.
func (h *boltBucket) notePut(key []byte) {
	switch h.appends {
	case appendsNone:
		if last, _ := h.b.Cursor().Last(); last == nil || bytes.Compare(key, last) > 0 {
			h.appends = appendsOnly
		} else {
			h.appends = appendsOther
		}
	case appendsOnly:
		if bytes.Compare(key, h.lastPut) <= 0 {
			h.appends = appendsOther
		}
	}
	h.lastPut = key
}

var _ Bucket = (*boltBucket)(nil)

// Mapped returns where the values read from bucket b are, for a cache
// that keeps them past their transaction (docstore's copy of a vector
// graph): on a bbolt file, the address of the file's memory map, when b
// is read in a View and has pages of its own (it is not kept inline in its
// parent's page); 0 otherwise (memory, PostgreSQL, a write transaction,
// an inline bucket), where a value is valid only during its transaction.
//
// A value read from b stays valid and unchanged in every later View of
// the same DB in which Mapped of the same bucket returns the same address,
// as long as nothing was written to the bucket in between: bbolt never
// rewrites a page of a bucket that was not written (a write copies the
// pages it changes elsewhere, and reuses a page only once it is free), and
// maps the file anew only when the file outgrows its map (the address may
// then change). The caller must know that nothing was written to b (by a
// count of its own, kept in the same transactions).
func Mapped(b Bucket) uintptr {
	h, ok := b.(*boltBucket)
	if !ok || h.root == 0 || h.tx.writable || !h.readable() {
		return 0
	}
	return h.b.Tx().DB().Info().Data
}

// Get implements Bucket.
func (h *boltBucket) Get(key []byte) []byte {
	if !h.readable() {
		return nil
	}
	if h.lazy != nil && h.root != 0 {
		reached(h.lazy.key(h.root, key))
	}
	return h.b.Get(key)
}

// reachAll checks the bucket's whole tree, when its transaction checks
// what it reaches, before a count follows it.
func (h *boltBucket) reachAll() {
	if h.lazy != nil && h.root != 0 {
		reached(h.lazy.bucket(h.root))
	}
}

// reached fails the transaction with err, the error of a lazyCheck of
// what a read is about to reach (damage, or the DB closing), if not nil:
// as a panic that run turns back into the error (see damageOf).
func reached(err error) {
	if err != nil {
		panic(lazyFailure{err})
	}
}

// lazyFailure is the panic of reached.
type lazyFailure struct{ err error }

// emptyValue replaces a nil value: bbolt reads a nil value back as nil (as if
// absent) until the commit, and as empty after it.
var emptyValue = []byte{}

// Put implements Bucket.
func (h *boltBucket) Put(key, value []byte) error {
	if err := h.checkPut(key, value); err != nil {
		return err
	}
	if value == nil {
		value = emptyValue
	}
	h.notePut(key)
	if err := h.b.Put(key, value); err != nil {
		return fmt.Errorf("kv: bucket %q: put: %w", h.name, err)
	}
	h.wrote()
	return nil
}

// Delete implements Bucket.
func (h *boltBucket) Delete(key []byte) error {
	if err := h.checkWrite("delete"); err != nil {
		return err
	}
	h.appends = appendsOther
	if err := h.b.Delete(key); err != nil {
		return fmt.Errorf("kv: bucket %q: delete: %w", h.name, err)
	}
	h.wrote()
	return nil
}

// Cursor implements Bucket.
func (h *boltBucket) Cursor() Cursor {
	h.tx.checkRead()
	raw := &boltCursor{h: h, c: h.b.Cursor()}
	if h.lazy != nil && h.root != 0 {
		raw.lazy = h.lazy.cursor(h.root)
	}
	return newCursor(raw, &h.bucketState, h.Delete)
}

// NextSequence implements Bucket.
func (h *boltBucket) NextSequence() (uint64, error) {
	if err := h.checkWrite("next sequence"); err != nil {
		return 0, err
	}
	n, err := h.b.NextSequence()
	if err != nil {
		return 0, fmt.Errorf("kv: bucket %q: next sequence: %w", h.name, err)
	}
	h.dirty = true
	return n, nil
}

// Sequence implements Bucket.
func (h *boltBucket) Sequence() uint64 {
	if !h.readable() {
		return 0
	}
	return h.b.Sequence()
}

// KeyN implements Bucket. bbolt's Stats counts the committed pages only, so
// a bucket written in this transaction is counted key by key.
func (h *boltBucket) KeyN() int {
	if !h.readable() {
		return 0
	}
	if !h.dirty {
		h.reachAll()
		return h.b.Stats().KeyN
	}
	n := 0
	c := h.b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// boltCursor is the raw cursor of the bbolt backend.
type boltCursor struct {
	h *boltBucket
	c *bolt.Cursor
	// lazy, when not nil, checks the pages each move of c reaches before
	// c moves (see cursorCheck).
	lazy *cursorCheck
}

// check runs move on the cursor's cursorCheck, if any, before bbolt's
// cursor makes the same move.
func (r *boltCursor) check(move func(*cursorCheck) error) {
	if r.lazy != nil {
		reached(move(r.lazy))
	}
}

func (r *boltCursor) first() ([]byte, []byte) {
	r.check((*cursorCheck).first)
	return r.c.First()
}

func (r *boltCursor) seek(key []byte) ([]byte, []byte) {
	r.check(func(s *cursorCheck) error { return s.seek(key) })
	return r.c.Seek(key)
}

func (r *boltCursor) next() ([]byte, []byte) {
	r.check((*cursorCheck).next)
	return r.c.Next()
}

// last works around bbolt's Last on a bucket whose leaves were all emptied
// earlier in the same transaction: it steps back over emptied trailing
// leaves, finds no leaf to stop at, and loops, forever or until it returns a
// deleted key. First is reliable there, so it decides whether a key exists.
func (r *boltCursor) last() ([]byte, []byte) {
	if r.h.dirty {
		if k, _ := r.c.First(); k == nil {
			return nil, nil
		}
	}
	r.check((*cursorCheck).last)
	return r.c.Last()
}

// prev works around bbolt's Prev stopping (returning nil) at a leaf that was
// emptied earlier in the same transaction (bbolt rebalances only at commit,
// and its Last skips such leaves but Prev does not): while keys remain before
// from, each further Prev steps past one emptied leaf.
func (r *boltCursor) prev(from []byte) ([]byte, []byte) {
	r.check((*cursorCheck).prev)
	k, v := r.c.Prev()
	if k != nil {
		return k, v
	}
	if r.lazy != nil {
		if c := r.h.lazy.cursor(r.h.root); c != nil {
			reached(c.first()) // for the cursor below
		}
	}
	if first, _ := r.h.b.Cursor().First(); first == nil || bytes.Compare(first, from) >= 0 {
		return nil, nil
	}
	for k == nil {
		r.check((*cursorCheck).prev)
		k, v = r.c.Prev()
	}
	return k, v
}
