package kv

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tidwall/btree"
)

// item is one key-value pair of the memory backend; items are never modified
// once in a tree.
type item struct{ k, v []byte }

func itemLess(a, b item) bool { return bytes.Compare(a.k, b.k) < 0 }

// tree is a copy-on-write B-tree of items. Locking is ours: a tree is either
// published (read by any number of Views, written by no one) or private to
// the one writer.
type tree = btree.BTreeG[item]

func newTree() *tree { return btree.NewBTreeGOptions(itemLess, btree.Options{NoLocks: true}) }

// memBucket is a committed bucket. snap and base hold the same items in
// shared nodes; Views read snap, and only the writer touches base, whose
// Copy (O(1)) marks base's nodes shared, which must not race with readers.
type memBucket struct {
	snap *tree
	base *tree
	seq  uint64
}

// memState is one committed state of the store; it is never modified.
type memState struct {
	buckets map[string]*memBucket
	epoch   uint64
}

// memDB is the memory backend: the committed state is an immutable
// snapshot behind an atomic pointer; an Update copies the trees it writes
// (copy-on-write, O(1) until written) and publishes a new snapshot at commit,
// or drops the copies on error or panic.
type memDB struct {
	state  atomic.Pointer[memState]
	wmu    sync.Mutex // the one writer
	closed atomic.Bool
	batch  batcher
}

var _ DB = (*memDB)(nil)

// OpenMemory returns an empty store held in memory, with the same semantics
// as a bbolt file (see DB); its contents are lost at Close unless backed up.
func OpenMemory() DB {
	d := &memDB{}
	d.state.Store(&memState{buckets: map[string]*memBucket{}})
	d.batch.update = d.Update
	return d
}

// Path implements DB.
func (d *memDB) Path() string { return "" }

// Check implements DB: memory holds no file to damage.
func (d *memDB) Check() error { return d.closedErr("check") }

// Close implements DB; it waits for a running Update.
func (d *memDB) Close() error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.closed.Store(true)
	return nil
}

func (d *memDB) closedErr(op string) error {
	if d.closed.Load() {
		return fmt.Errorf("kv: %s memory store: %w", op, ErrClosed)
	}
	return nil
}

// View implements DB.
func (d *memDB) View(fn func(Tx) error) error {
	if err := d.closedErr("view"); err != nil {
		return err
	}
	st := d.state.Load()
	t := &memTx{txState: txState{epoch: st.epoch}, state: st}
	defer func() { t.done = true }()
	return fn(t)
}

// Update implements DB.
func (d *memDB) Update(fn func(Tx) error) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if err := d.closedErr("update"); err != nil {
		return err
	}
	st := d.state.Load()
	t := &memTx{txState: txState{writable: true, epoch: st.epoch}, state: st}
	defer func() { t.done = true }()
	if err := fn(t); err != nil {
		return err
	}
	if st := t.commit(); st != nil {
		d.state.Store(st)
	}
	return nil
}

// Batch implements DB.
func (d *memDB) Batch(fn func(Tx) error) error {
	if err := d.closedErr("batch"); err != nil {
		return err
	}
	return d.batch.do(fn)
}

// memTx is a memory transaction: the snapshot it began from, the handles it
// gave out, and (once it created or deleted a bucket) its own bucket set.
type memTx struct {
	txState
	state   *memState
	set     map[string]*memBucket // nil until a bucket is created or deleted
	handles map[string]*memBucketHandle
}

var _ Tx = (*memTx)(nil)

// Writable implements Tx.
func (t *memTx) Writable() bool { return t.writable }

// buckets is the transaction's bucket set; a bucket created in it maps to nil.
func (t *memTx) buckets() map[string]*memBucket {
	if t.set != nil {
		return t.set
	}
	return t.state.buckets
}

// Bucket implements Tx.
func (t *memTx) Bucket(name []byte) Bucket {
	t.checkRead()
	if h := t.bucket(name); h != nil {
		return h
	}
	return nil
}

// bucket returns the handle on the bucket named name, or nil.
func (t *memTx) bucket(name []byte) *memBucketHandle {
	if h, ok := t.handles[string(name)]; ok {
		return h
	}
	mb, ok := t.buckets()[string(name)]
	if !ok {
		return nil
	}
	h := &memBucketHandle{bucketState: bucketState{tx: &t.txState, name: string(name)}, src: mb, tree: mb.snap, seq: mb.seq}
	if t.handles == nil {
		t.handles = make(map[string]*memBucketHandle)
	}
	t.handles[h.name] = h
	return h
}

// ownSet gives the transaction its own bucket set.
func (t *memTx) ownSet() map[string]*memBucket {
	if t.set == nil {
		t.set = maps.Clone(t.state.buckets)
	}
	return t.set
}

// CreateBucketIfNotExists implements Tx.
func (t *memTx) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	if err := t.checkWrite(); err != nil {
		return nil, fmt.Errorf("kv: create bucket %q: %w", name, err)
	}
	if err := checkBucketName(name); err != nil {
		return nil, err
	}
	if h := t.bucket(name); h != nil {
		return h, nil
	}
	h := &memBucketHandle{bucketState: bucketState{tx: &t.txState, name: string(name)}, tree: newTree(), owned: true}
	h.wrote()
	t.ownSet()[h.name] = nil
	if t.handles == nil {
		t.handles = make(map[string]*memBucketHandle)
	}
	t.handles[h.name] = h
	return h, nil
}

// DeleteBucket implements Tx.
func (t *memTx) DeleteBucket(name []byte) error {
	if err := t.checkWrite(); err != nil {
		return fmt.Errorf("kv: delete bucket %q: %w", name, err)
	}
	if _, ok := t.buckets()[string(name)]; !ok {
		return fmt.Errorf("kv: delete bucket %q: %w", name, ErrBucketNotFound)
	}
	delete(t.ownSet(), string(name))
	if h, ok := t.handles[string(name)]; ok {
		h.deleted = true
		delete(t.handles, string(name))
	}
	return nil
}

// ForEachBucket implements Tx.
func (t *memTx) ForEachBucket(fn func(name []byte, b Bucket) error) error {
	t.checkRead()
	for _, name := range slices.Sorted(maps.Keys(t.buckets())) {
		if err := fn([]byte(name), t.bucket([]byte(name))); err != nil {
			return err
		}
	}
	return nil
}

// commit returns the state the transaction leaves, or nil when it changed
// nothing.
func (t *memTx) commit() *memState {
	changed := t.set != nil || t.bumped
	for _, h := range t.handles {
		changed = changed || h.dirty
	}
	if !changed {
		return nil
	}
	set := t.ownSet()
	for name, h := range t.handles {
		switch {
		case !h.dirty:
		case h.owned:
			set[name] = &memBucket{snap: h.tree.Copy(), base: h.tree, seq: h.seq}
		default: // only the sequence changed
			set[name] = &memBucket{snap: h.src.snap, base: h.src.base, seq: h.seq}
		}
	}
	return &memState{buckets: set, epoch: t.epoch}
}

// memBucketHandle is a handle on a bucket in a memory transaction. It reads
// the committed snap until its first write, which gives it a private copy.
type memBucketHandle struct {
	bucketState
	src   *memBucket // nil when created in this transaction
	tree  *tree
	owned bool
	seq   uint64
}

var _ Bucket = (*memBucketHandle)(nil)

// own makes the handle's tree private before a write.
func (h *memBucketHandle) own() {
	if !h.owned {
		h.tree = h.src.base.Copy()
		h.owned = true
	}
}

// Get implements Bucket.
func (h *memBucketHandle) Get(key []byte) []byte {
	if !h.readable() {
		return nil
	}
	it, ok := h.tree.Get(item{k: key})
	if !ok {
		return nil
	}
	return it.v
}

// Put implements Bucket; it copies key and value into one allocation.
func (h *memBucketHandle) Put(key, value []byte) error {
	if err := h.checkPut(key, value); err != nil {
		return err
	}
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	h.own()
	h.tree.Set(item{k: buf[:len(key):len(key)], v: buf[len(key):]})
	h.wrote()
	return nil
}

// Delete implements Bucket.
func (h *memBucketHandle) Delete(key []byte) error {
	if err := h.checkWrite("delete"); err != nil {
		return err
	}
	h.own()
	h.tree.Delete(item{k: key})
	h.wrote()
	return nil
}

// Cursor implements Bucket.
func (h *memBucketHandle) Cursor() Cursor {
	h.tx.checkRead()
	return newCursor(&memCursor{h: h}, &h.bucketState, h.Delete)
}

// NextSequence implements Bucket.
func (h *memBucketHandle) NextSequence() (uint64, error) {
	if err := h.checkWrite("next sequence"); err != nil {
		return 0, err
	}
	h.seq++
	h.dirty = true
	return h.seq, nil
}

// Sequence implements Bucket.
func (h *memBucketHandle) Sequence() uint64 {
	if !h.readable() {
		return 0
	}
	return h.seq
}

// KeyN implements Bucket.
func (h *memBucketHandle) KeyN() int {
	if !h.readable() {
		return 0
	}
	return h.tree.Len()
}

// memCursor is the raw cursor of the memory backend: an iterator over the
// handle's current tree, re-initialised (no allocation) on every absolute
// move, since a write may have replaced or changed the tree.
type memCursor struct {
	h  *memBucketHandle
	it btree.IterG[item]
}

func (r *memCursor) result(ok bool) ([]byte, []byte) {
	if !ok {
		return nil, nil
	}
	it := r.it.Item()
	return it.k, it.v
}

func (r *memCursor) first() ([]byte, []byte) {
	r.it.Init(r.h.tree, false)
	return r.result(r.it.First())
}

func (r *memCursor) last() ([]byte, []byte) {
	r.it.Init(r.h.tree, false)
	return r.result(r.it.Last())
}

func (r *memCursor) seek(key []byte) ([]byte, []byte) {
	r.it.Init(r.h.tree, false)
	return r.result(r.it.Seek(item{k: key}))
}

func (r *memCursor) next() ([]byte, []byte)       { return r.result(r.it.Next()) }
func (r *memCursor) prev([]byte) ([]byte, []byte) { return r.result(r.it.Prev()) }
