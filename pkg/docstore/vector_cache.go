package docstore

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Approximate searches read the HNSW graph from a copy in memory when one
// holds exactly the state their transaction sees: a copy is built from a
// read transaction's snapshot and names that state by the field's random
// id and write generation (vector.go), so it is never updated, only
// replaced, and a rolled-back or retried write (which leaves the id and
// generation as they were) cannot make it wrong. The file stays the
// truth: a search whose state has no copy reads the file.
//
// A copy is built when a search finds the same state a search before it
// found uncached, that is once writes have paused: under a steady stream
// of writes, searches read the file rather than rebuild a copy each. A
// copy holds each slot's doc key, where its vector and node are, and the
// slots in doc key order (MMR looks its candidates' vectors up by doc key
// there, reading nothing of the transaction). On a bbolt file those are
// the transaction's views of the file's map, valid in every later search that sees the same map (kv.Mapped) while the
// generation stands (every write to the blocks and the graph bumps it):
// the vectors and the graph stay resident once, in the map, and the copy
// is an index of them (about 44 bytes a slot). Elsewhere (PostgreSQL,
// memory, a field small enough for its buckets to be inline), where a
// value lives only as long as its transaction, the copy owns the vectors
// and nodes, in one array each. A copy goes when its store is garbage
// collected.

// graphCache is an immutable copy of a collection's graph.
type graphCache struct {
	id, gen uint64
	// at is the file's map the views are in (kv.Mapped), 0 when the copy
	// owns its vectors and nodes.
	at     uintptr
	dim    int
	vecs   []*float32 // slot's vector: dim components from there (nil: none)
	nodes  [][]byte   // slot's node
	keyOff []uint32   // slot's doc key is keys[keyOff[slot]:keyOff[slot+1]]
	keys   []byte
	byKey  []uint32 // the slots holding a document, in doc key order

	entrySlot uint32
	top       int
	hasEntry  bool
}

func (c *graphCache) vec(slot uint32) []float32 {
	if p := c.vecs[slot]; p != nil {
		return unsafe.Slice(p, c.dim)
	}
	return nil
}

func (c *graphCache) docKey(slot uint32) []byte { return c.keys[c.keyOff[slot]:c.keyOff[slot+1]] }
func (c *graphCache) live(slot uint32) bool     { return c.keyOff[slot+1] > c.keyOff[slot] }
func (c *graphCache) slotOf(idKey []byte) (uint32, bool) {
	i, ok := slices.BinarySearchFunc(c.byKey, idKey, func(s uint32, k []byte) int { return bytes.Compare(c.docKey(s), k) })
	if !ok {
		return 0, false
	}
	return c.byKey[i], true
}
func (c *graphCache) node(slot uint32) []byte {
	if int(slot) >= len(c.nodes) {
		return nil
	}
	return c.nodes[slot]
}
func (c *graphCache) loadedNode(slot uint32) []byte { return c.node(slot) }
func (c *graphCache) entry() (uint32, int, bool)    { return c.entrySlot, c.top, c.hasEntry }

// buildGraphCache copies v's graph, as of its transaction: views of its
// vectors and nodes when at (kv.Mapped of both buckets) is not 0, copies
// otherwise. Every slice is allocated once, at its size.
func buildGraphCache(v *vectors, at uintptr) *graphCache {
	id, gen := v.version()
	n := int(v.slots())
	c := &graphCache{id: id, gen: gen, at: at, dim: v.def.Dimension,
		vecs: make([]*float32, n), nodes: make([][]byte, n), keyOff: make([]uint32, n+1)}
	blocks := make([]block, (n+v.per-1)/v.per)
	cur := v.blocks.Cursor()
	for k, raw := cur.First(); k != nil; k, raw = cur.Next() {
		if i := int(binary.BigEndian.Uint32(k)); i < len(blocks) {
			blocks[i] = block{vecs: floats(raw[:v.blockLen()]), raw: raw, per: v.per}
		}
	}
	var owned []float32
	if at == 0 {
		owned = make([]float32, n*c.dim)
	}
	size := 0
	for slot := range n {
		b := blocks[slot/v.per]
		if b.raw == nil {
			c.keyOff[slot+1] = uint32(size)
			continue
		}
		i := slot % v.per
		size += len(b.key(i))
		c.keyOff[slot+1] = uint32(size)
		vec := b.vecs[i*c.dim : (i+1)*c.dim]
		if owned != nil {
			vec = owned[slot*c.dim : (slot+1)*c.dim]
			copy(vec, b.vecs[i*c.dim:])
		}
		c.vecs[slot] = &vec[0]
	}
	c.keys = make([]byte, 0, size)
	for slot := range n {
		if b := blocks[slot/v.per]; b.raw != nil {
			c.keys = append(c.keys, b.key(slot%v.per)...)
		}
	}
	live := 0
	for slot := range uint32(n) {
		if c.live(slot) {
			live++
		}
	}
	c.byKey = make([]uint32, 0, live)
	for slot := range uint32(n) {
		if c.live(slot) {
			c.byKey = append(c.byKey, slot)
		}
	}
	slices.SortFunc(c.byKey, func(a, b uint32) int { return bytes.Compare(c.docKey(a), c.docKey(b)) })
	size = 0
	cur = v.gr.Cursor()
	for k, raw := cur.First(); k != nil; k, raw = cur.Next() {
		if slot := int(binary.BigEndian.Uint32(k)); slot < n {
			c.nodes[slot] = raw
			size += len(raw)
		}
	}
	if at == 0 {
		buf := make([]byte, 0, size)
		for slot, raw := range c.nodes {
			buf = append(buf, raw...)
			c.nodes[slot] = buf[len(buf)-len(raw) : len(buf) : len(buf)]
		}
	}
	c.entrySlot, c.top, c.hasEntry = v.entry()
	return c
}

// graphCaches holds the copies, by store and collection.
var graphCaches = struct {
	sync.Mutex
	m      map[cacheKey]*cacheSlot
	stores map[weak.Pointer[Store]]bool // stores with a cleanup registered
}{m: map[cacheKey]*cacheSlot{}, stores: map[weak.Pointer[Store]]bool{}}

type cacheKey struct {
	store weak.Pointer[Store]
	coll  string
}

// cacheSlot is a collection's copy, and the state the last uncached
// search found.
type cacheSlot struct {
	mu        sync.Mutex
	copy      *graphCache
	seen      graphState
	seenValid bool
}

// graphState names the state of a collection's graph a search sees: the
// field's id and generation, and the file's map its views would be in
// (kv.Mapped; 0 for a copy that owns them).
type graphState struct {
	id, gen uint64
	at      uintptr
}

// cachedGraph returns the copy of the graph of coll's vectors v (as v's
// transaction sees them), building it when this state was seen uncached
// before; nil when the search is to read the file.
func (s *Store) cachedGraph(coll string, v *vectors) graphSource {
	wp := weak.Make(s)
	graphCaches.Lock()
	slot := graphCaches.m[cacheKey{wp, coll}]
	if slot == nil {
		slot = &cacheSlot{}
		graphCaches.m[cacheKey{wp, coll}] = slot
		if !graphCaches.stores[wp] {
			graphCaches.stores[wp] = true
			runtime.AddCleanup(s, forgetStore, wp)
		}
	}
	graphCaches.Unlock()
	id, gen := v.version()
	st := graphState{id: id, gen: gen, at: kv.Mapped(v.blocks)}
	if kv.Mapped(v.gr) != st.at {
		st.at = 0 // the graph is inline: copy both
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	switch {
	case slot.copy != nil && (graphState{slot.copy.id, slot.copy.gen, slot.copy.at}) == st:
		return slot.copy
	case slot.seenValid && slot.seen == st:
		slot.copy = buildGraphCache(v, st.at)
		return slot.copy
	}
	slot.seen, slot.seenValid = st, true
	return nil
}

// forgetStore drops the copies of a store that was garbage collected.
func forgetStore(wp weak.Pointer[Store]) {
	graphCaches.Lock()
	defer graphCaches.Unlock()
	delete(graphCaches.stores, wp)
	for k := range graphCaches.m {
		if k.store == wp {
			delete(graphCaches.m, k)
		}
	}
}
