package docstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// A write to a collection with an HNSW field stores each vector and queues
// its slot (the field's u bucket) in the write's own transaction: the
// vector is durable and searchable when the write returns, approximate
// searches measuring the queued vectors exactly beside their walk of the
// graph (searchQueued). The store's linker, one goroutine per open
// read-write Store, links them into the graph in the background, a batch
// of up to maxLinkBatch at a time, in two transactions:
//
//   - in a read transaction it computes the batch's links (linkChunk, on
//     every core), the links its nodes add to their neighbours and the
//     entry point, in memory;
//   - in a write transaction it puts them, unqueues the slots whose
//     queued generation it linked (one written again meanwhile stays
//     queued), and moves the field's link generation ("lg") and write
//     generation.
//
// Only the linker changes the graph, so the graph a batch was computed on
// is the graph it is put on while the link generation has not moved; when
// it has (another process's linker, on PostgreSQL, where every instance
// runs one and two may compute the same batch) the batch is dropped and
// computed again. Writes meanwhile go on: they add vectors and queue
// them, or delete documents, whose nodes stay as tombstones, as before.
//
// On PostgreSQL, where every instance of a store runs a linker, the linker
// about to link a field's queue first takes a lease on it (meta "lk": its
// token and the lease's end, renewed with each batch and released when
// the queue is empty): the others leave that queue alone until the lease
// is released or has run out (leaseTerm; the instances' clocks are taken
// to agree within it), so that a bulk load on one instance is not linked
// again, in vain, by every other.
//
// Linking in batches larger than a write's transaction is what the linker
// is for: a batch rewrites each page of the graph it touches once, where
// linking in each write rewrote nearly every page of the graph at every
// transaction, and a write no longer waits for its vectors' links (docs/
// design/store-performance.md). A crash loses no vector: the queue is in
// the file, and the next read-write open links what it holds.

// maxLinkBatch is the most queued vectors one batch links.
const maxLinkBatch = 20_000

// hnswParallel is the fewest vectors a batch links worth reading the
// whole graph into memory for, to link them on every core.
const hnswParallel = 64

// errLinkStale is a batch that another linker's batch overtook.
var errLinkStale = errors.New("docstore: the graph changed while a batch was linked")

// errLinkHeld is a queue another process's linker holds the lease of.
var errLinkHeld = errors.New("docstore: another process links this queue")

// leaseTerm is how long a linker's lease on a queue lasts unless renewed.
const leaseTerm = time.Minute

// leaseKey is the metadata key of the lease on a field's queue: the
// holder's token (uint64) and the lease's end (Unix nanoseconds, int64).
var leaseKey = []byte("lk")

// linkRetry is how long the linker waits before trying a collection again
// after a batch failed.
const linkRetry = time.Second

// linkSweep is how long the linker stays idle before it looks at every
// queue (on PostgreSQL another process may have queued vectors and ended
// before its linker linked them), and how long a walk copy no batch has
// used is kept: a bulk load's copy (2 bytes a component) is not held for
// the rest of the store's life.
const linkSweep = 30 * time.Second

// linker links queued vectors into their HNSW graphs (see above).
type linker struct {
	s     *Store
	walks walkCopies
	// shared: other processes may link the same queues (PostgreSQL),
	// and token names this linker in the leases it takes.
	shared bool
	token  uint64
	sweep  time.Duration // linkSweep, but in tests
	cancel context.CancelFunc
	done   chan struct{}
	nudge  chan struct{} // buffered: there is work in wanted

	mu     sync.Mutex
	wanted map[string]bool  // collections whose queues may hold vectors
	failed map[string]error // the last batch's error, until one succeeds
	// batched is closed, and replaced, whenever a batch ends.
	batched chan struct{}
}

// newLinker returns a linker for s, not running, with every collection
// that has an HNSW field wanted (a queue left by an earlier process is
// linked).
func newLinker(s *Store) *linker {
	l := &linker{s: s, done: make(chan struct{}), nudge: make(chan struct{}, 1),
		shared: kv.IsURL(s.db.Path()), token: rand.Uint64() | 1, sweep: linkSweep,
		wanted: map[string]bool{}, failed: map[string]error{}, batched: make(chan struct{})}
	l.wantAll()
	return l
}

// wantAll has the linker look at the queue of every collection with an
// HNSW field.
func (l *linker) wantAll() {
	l.s.catMu.RLock()
	defer l.s.catMu.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, col := range l.s.cat {
		if col.Vector != nil && !col.Vector.Flat {
			l.wanted[name] = true
		}
	}
}

// runLinker starts l as s's linker.
func (s *Store) runLinker(l *linker) {
	var ctx context.Context
	ctx, l.cancel = context.WithCancel(context.Background())
	s.linker = l
	l.poke()
	go l.run(ctx)
}

// stop ends the linker, a batch under way abandoned (its vectors stay
// queued), waits for it and drops its walk copies. A nil linker (a
// read-only store) has nothing to stop.
func (l *linker) stop() {
	if l == nil {
		return
	}
	if l.cancel != nil {
		l.cancel()
		<-l.done
	}
	l.walks.reset()
}

// want has the linker look at coll's queue: after a write that queued
// vectors there has committed.
func (l *linker) want(coll string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.wanted[coll] = true
	l.mu.Unlock()
	l.poke()
}

func (l *linker) poke() {
	select {
	case l.nudge <- struct{}{}:
	default:
	}
}

// forget drops what the linker keeps of coll (its walk copy): coll was
// dropped.
func (l *linker) forget(coll string) {
	if l != nil {
		l.walks.forget(coll)
	}
}

// next returns a wanted collection, no longer wanted, if there is one.
func (l *linker) next() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(l.wanted)) {
		delete(l.wanted, name)
		return name, true
	}
	return "", false
}

func (l *linker) run(ctx context.Context) {
	defer close(l.done)
	for {
		l.walks.dropUnused(time.Now().Add(-l.sweep))
		coll, ok := l.next()
		if !ok {
			sweep := time.NewTimer(l.sweep)
			select {
			case <-ctx.Done():
				sweep.Stop()
				return
			case <-l.nudge:
			case <-sweep.C:
				l.wantAll()
			}
			sweep.Stop()
			continue
		}
		more, err := l.linkBatch(ctx, coll)
		if ctx.Err() != nil {
			return
		}
		held := errors.Is(err, errLinkHeld) // not a failure: look again later
		if held {
			err = nil
		}
		l.mu.Lock()
		if err != nil {
			l.failed[coll] = err
		} else {
			delete(l.failed, coll)
		}
		if more || held || err != nil {
			l.wanted[coll] = true
		}
		close(l.batched)
		l.batched = make(chan struct{})
		l.mu.Unlock()
		if err != nil || held {
			select {
			case <-ctx.Done():
				return
			case <-time.After(linkRetry):
			}
		}
	}
}

// lastError returns why coll's last batch failed, nil when it did not
// (or l is nil: a read-only store).
func (l *linker) lastError(coll string) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed[coll]
}

// state returns a channel closed when the next batch ends, and coll's
// last batch error.
func (l *linker) state(coll string) (<-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.batched, l.failed[coll]
}

// linkBatch links a batch of coll's queued vectors and reports whether
// more are queued; it fails with errLinkHeld when another process's
// linker holds the queue's lease.
func (l *linker) linkBatch(ctx context.Context, coll string) (bool, error) {
	if l.shared {
		if queued, err := l.claim(coll); err != nil || !queued {
			return false, err
		}
	}
	b, err := l.compute(ctx, coll)
	if err != nil || b == nil || len(b.queued) == 0 {
		return false, err
	}
	err = l.apply(coll, b)
	if errors.Is(err, errLinkStale) {
		return true, nil // computed again on the graph as it is now
	}
	return b.more, err
}

// compute computes the links of a batch of coll's queued vectors (nil:
// coll has no HNSW field).
func (l *linker) compute(ctx context.Context, coll string) (*linkWork, error) {
	var b *linkWork
	err := l.s.withCatalog(l.s.db.View, func(tx kv.Tx) error {
		b = nil // the function may run again
		col := l.s.cat[coll]
		if col == nil || col.Vector == nil || col.Vector.Flat {
			return nil // dropped meanwhile
		}
		v, err := openVectors(tx, col)
		if err != nil {
			return err
		}
		b, err = v.computeLinks(ctx, &l.walks)
		return err
	})
	return b, err
}

// claim takes or renews l's lease on coll's queue when the queue holds
// vectors (reporting whether it does), or fails with errLinkHeld. It
// writes only when it takes the lease or moves its end.
func (l *linker) claim(coll string) (bool, error) {
	now := time.Now()
	try := func(tx kv.Tx) (queued, take bool, err error) {
		col := l.s.cat[coll]
		if col == nil || col.Vector == nil || col.Vector.Flat {
			return false, false, nil
		}
		m, q := tx.Bucket(vectorBucket(coll, vecMeta)), tx.Bucket(vectorBucket(coll, vecQueue))
		if m == nil || q == nil {
			return false, false, nil
		}
		if k, _ := q.Cursor().First(); k == nil {
			return false, false, nil
		}
		holder, end := lease(m.Get(leaseKey))
		if holder != 0 && holder != l.token && now.UnixNano() < end {
			return true, false, errLinkHeld
		}
		// Taken, or renewed once half of it has run.
		return true, holder != l.token || end-now.UnixNano() < int64(leaseTerm/2), nil
	}
	var queued, take bool
	err := l.s.withCatalog(l.s.db.View, func(tx kv.Tx) (err error) {
		queued, take, err = try(tx)
		return err
	})
	if err != nil || !take {
		return queued, err
	}
	err = l.s.withCatalog(l.s.db.Update, func(tx kv.Tx) (err error) {
		if queued, take, err = try(tx); err != nil || !take {
			return err
		}
		return tx.Bucket(vectorBucket(coll, vecMeta)).Put(leaseKey, leaseValue(l.token, now.Add(leaseTerm)))
	})
	return queued, err
}

// lease decodes a lease (holder 0: none).
func lease(b []byte) (holder uint64, end int64) {
	if len(b) != 16 {
		return 0, 0
	}
	return binary.LittleEndian.Uint64(b), int64(binary.LittleEndian.Uint64(b[8:]))
}

func leaseValue(holder uint64, end time.Time) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, holder), uint64(end.UnixNano()))
}

// apply puts b, computed for coll, and keeps its walk copy; it fails with
// errLinkStale when the graph is no longer the one b was computed on.
func (l *linker) apply(coll string, b *linkWork) error {
	err := l.s.withCatalog(l.s.db.Update, func(tx kv.Tx) error {
		col := l.s.cat[coll]
		if col == nil || col.Vector == nil || *col.Vector != *b.def {
			return errLinkStale
		}
		v, err := openVectors(tx, col)
		if err != nil {
			return err
		}
		if err := v.applyLinks(b); err != nil {
			return err
		}
		if holder, _ := lease(v.meta.Get(leaseKey)); holder == l.token && !b.more {
			return v.meta.Delete(leaseKey) // the queue linked: released
		}
		return nil
	})
	switch {
	case errors.Is(err, errLinkStale):
		return err
	case err != nil:
		return fmt.Errorf("docstore: linking the vectors of %q: %w", coll, err)
	}
	if b.walk != nil {
		b.walk.lg = b.lg + 1
		l.walks.put(coll, b.walk)
	}
	return nil
}

// queuedSlot is a slot in a queue, and the write generation that wrote its
// vector.
type queuedSlot struct {
	slot uint32
	gen  uint64
}

// queuedGen decodes a queue entry's value.
func queuedGen(val []byte) uint64 {
	if len(val) != 8 {
		return math.MaxUint64 // not as put: taken for written last
	}
	return binary.LittleEndian.Uint64(val)
}

// linkWork is a batch of links computed in a read transaction, to put in
// a write transaction.
type linkWork struct {
	def    *VectorDef
	id, lg uint64            // the field's id and link generation it was computed on
	queued map[uint32][]byte // the queue entries it links (slot → queued generation)
	nodes  []slotNode        // the nodes it writes, by slot
	entry  []byte            // the new entry point, nil when it stays
	more   bool              // the queue holds more than the batch
	walk   *walkCopy         // the walk copy it used, to keep (nil: none)
}

// slotNode is a slot's encoded node.
type slotNode struct {
	slot uint32
	raw  []byte
}

// computeLinks computes the links of up to maxLinkBatch of v's queued
// vectors, reading v's transaction and writing nothing.
func (v *vectors) computeLinks(ctx context.Context, walks *walkCopies) (*linkWork, error) {
	id, _ := v.version()
	b := &linkWork{def: v.def, id: id, lg: v.linkGen(), queued: map[uint32][]byte{}}
	var queued []queuedSlot
	if v.queue != nil {
		c := v.queue.Cursor()
		for k, val := c.First(); k != nil; k, val = c.Next() {
			slot := binary.BigEndian.Uint32(k)
			queued = append(queued, queuedSlot{slot, queuedGen(val)})
			if len(b.queued) < maxLinkBatch {
				b.queued[slot] = bytes.Clone(val)
			}
		}
	}
	b.more = len(queued) > len(b.queued)
	if len(b.queued) == 0 {
		return b, nil
	}
	if len(b.queued) >= hnswParallel && runtime.GOMAXPROCS(0) > 1 {
		v.loadAll()
	}
	g := v.graph()
	if v.complete {
		b.walk = v.takeWalk(walks, queued)
		g.walk = b.walk
	}
	var pending []pendingNode
	for _, slot := range slices.Sorted(maps.Keys(b.queued)) {
		if key := v.docKey(slot); len(key) > 0 {
			pending = append(pending, pendingNode{slot, bytes.Clone(key)})
		}
	}
	for lo := 0; lo < len(pending); lo += hnswChunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := g.linkChunk(pending[lo:min(lo+hnswChunk, len(pending))]); err != nil {
			return nil, err
		}
	}
	b.nodes = make([]slotNode, 0, len(v.dirty))
	for _, slot := range slices.Sorted(slices.Values(v.dirty)) {
		b.nodes = append(b.nodes, slotNode{slot, v.nodeCache[slot]}) // encoded afresh: not the transaction's
	}
	if v.entryMoved {
		b.entry = append(binary.LittleEndian.AppendUint32(nil, v.entryAt), byte(v.entryLevel))
	}
	return b, nil
}

// applyLinks puts b in v's (write) transaction: it fails with
// errLinkStale when the graph is no longer the one b was computed on.
func (v *vectors) applyLinks(b *linkWork) error {
	if id, _ := v.version(); id != b.id || v.linkGen() != b.lg {
		return errLinkStale
	}
	for _, n := range b.nodes {
		if err := v.gr.Put(u32key(n.slot), n.raw); err != nil {
			return err
		}
	}
	if b.entry != nil {
		if err := v.meta.Put([]byte("e"), b.entry); err != nil {
			return err
		}
	}
	for _, slot := range slices.Sorted(maps.Keys(b.queued)) {
		k := u32key(slot)
		if bytes.Equal(v.queue.Get(k), b.queued[slot]) {
			if err := v.queue.Delete(k); err != nil {
				return err
			}
		}
	}
	if err := v.meta.Put(linkGenKey, binary.LittleEndian.AppendUint64(nil, b.lg+1)); err != nil {
		return err
	}
	return v.bump()
}

// linkGenKey is the metadata key of the field's link generation.
var linkGenKey = []byte("lg")

// linkGen returns the field's link generation.
func (v *vectors) linkGen() uint64 {
	if b := v.meta.Get(linkGenKey); len(b) == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// queueRange is every key of a queue (4-byte slots).
var queueRange = kv.Range{Lo: []byte{0, 0, 0, 0}, Hi: []byte{0xff, 0xff, 0xff, 0xff, 0}}

// queuedSlots returns the slots v's queue holds.
func (v *vectors) queuedSlots() []uint32 {
	if v.queue == nil {
		return nil
	}
	var out []uint32
	c := v.queue.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		out = append(out, binary.BigEndian.Uint32(k))
	}
	return out
}

// WaitLinked waits until coll's HNSW field has no vector waiting to be
// linked into its graph: every vector written before the call (and any
// written meanwhile) is linked. Searches never need it (they measure
// queued vectors exactly); it is for a bulk load that wants the graph
// whole, and for benchmarks. It returns at once for a collection without
// an HNSW field, fails with the linker's error when its last batch
// failed, and with kv.ErrReadOnly on a read-only store, whose linker does
// not run.
func (s *Store) WaitLinked(ctx context.Context, coll string) error {
	for {
		n, err := s.queuedVectors(ctx, coll)
		if err != nil || n == 0 {
			return err
		}
		if s.linker == nil {
			return fmt.Errorf("docstore: %q has %d vectors to link, and a read-only store does not link: %w", coll, n, kv.ErrReadOnly)
		}
		batched, failed := s.linker.state(coll)
		if failed != nil {
			return failed
		}
		s.linker.want(coll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-batched:
		case <-s.linker.done: // closed: the next look says so
		}
	}
}

// queuedVectors returns the number of coll's vectors waiting to be linked.
func (s *Store) queuedVectors(ctx context.Context, coll string) (int, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	n := 0
	err := s.withCatalog(s.db.View, func(tx kv.Tx) error {
		n = 0
		col, err := s.collectionOf(coll)
		if err != nil {
			return err
		}
		if col.Vector == nil {
			return nil
		}
		if q := tx.Bucket(vectorBucket(coll, vecQueue)); q != nil {
			n = q.KeyN()
		}
		return nil
	})
	return n, err
}
