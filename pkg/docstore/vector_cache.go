package docstore

import (
	"runtime"
	"sync"
	"weak"
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
// copy holds every slot's vector, doc key and node (about the size of the
// field's blocks and graph); it goes when its store is garbage collected.

// graphCache is an immutable copy of a collection's vectors and graph.
type graphCache struct {
	id, gen     uint64
	dim         int
	vecs        []float32 // slot × dim
	keyOff      []uint32  // slot's doc key is keys[keyOff[slot]:keyOff[slot+1]]
	keys        []byte
	nodeOff     []uint32 // slot's node is nodes[nodeOff[slot]:nodeOff[slot+1]]
	nodes       []byte
	entrySlot   uint32
	top         int
	hasEntry    bool
	slotsNumber uint32
}

func (c *graphCache) vec(slot uint32) []float32 {
	i := int(slot) * c.dim
	return c.vecs[i : i+c.dim]
}

func (c *graphCache) docKey(slot uint32) []byte { return c.keys[c.keyOff[slot]:c.keyOff[slot+1]] }
func (c *graphCache) live(slot uint32) bool     { return c.keyOff[slot+1] > c.keyOff[slot] }
func (c *graphCache) node(slot uint32) []byte {
	if slot >= c.slotsNumber {
		return nil
	}
	return c.nodes[c.nodeOff[slot]:c.nodeOff[slot+1]]
}
func (c *graphCache) entry() (uint32, int, bool) { return c.entrySlot, c.top, c.hasEntry }

// buildGraphCache copies v's vectors and graph, as of its transaction.
func buildGraphCache(v *vectors) *graphCache {
	id, gen := v.version()
	n := v.slots()
	f := v
	c := &graphCache{id: id, gen: gen, dim: v.def.Dimension, vecs: make([]float32, 0, int(n)*v.def.Dimension),
		keyOff: make([]uint32, 1, n+1), nodeOff: make([]uint32, 1, n+1), slotsNumber: n}
	for slot := range n {
		c.vecs = append(c.vecs, f.vec(slot)...)
		c.keys = append(c.keys, f.docKey(slot)...)
		c.keyOff = append(c.keyOff, uint32(len(c.keys)))
		c.nodes = append(c.nodes, f.node(slot)...)
		c.nodeOff = append(c.nodeOff, uint32(len(c.nodes)))
	}
	c.entrySlot, c.top, c.hasEntry = f.entry()
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
	seenID    uint64
	seenGen   uint64
	seenValid bool
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
	slot.mu.Lock()
	defer slot.mu.Unlock()
	switch {
	case slot.copy != nil && slot.copy.id == id && slot.copy.gen == gen:
		return slot.copy
	case slot.seenValid && slot.seenID == id && slot.seenGen == gen:
		slot.copy = buildGraphCache(v)
		return slot.copy
	}
	slot.seenID, slot.seenGen, slot.seenValid = id, gen, true
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
