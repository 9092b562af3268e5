package docstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
)

// The approximate vector index is an HNSW graph (Malkov & Yashunin,
// "Efficient and robust approximate nearest neighbor search using
// Hierarchical Navigable Small World graphs", 2016) whose nodes are the
// vector slots (vector.go). It lives in the v\x00<collection>\x00g bucket,
// slot (uint32 big-endian) → its level L (one byte), then for each level 0
// to L a uint16 count and that many uint32 slots (little-endian); the
// entry point is in the vectors' metadata. The store's linker (linker.go)
// links the vectors writes queued, a batch at a time, in chunks whose
// neighbour searches run on every core against the graph as it was before
// the chunk, each node also meeting the chunk's earlier nodes exactly
// (linkChunk); until then searches measure them exactly.
//
// A deleted document's node stays as a tombstone: it keeps routing
// searches, is never a result and is not linked to by new nodes; a new
// vector reusing its slot gets fresh links (links other nodes kept to it
// stay, as extra edges). An updated vector is linked again the same way.
const (
	hnswM              = 16 // links per node above level 0
	hnswM0             = 32 // links per node at level 0
	hnswEfConstruction = 40 // candidates considered when linking a node
	// HNSWDefaultEf is the candidates an approximate search considers
	// unless it asks for more (never fewer than the results it wants).
	HNSWDefaultEf = 100
	hnswMaxLevel  = 15
)

// hnswLevelMult is 1/ln(M), the level distribution's multiplier.
var hnswLevelMult = 1 / math.Log(hnswM)

// cand is a slot and its distance to the query.
type cand struct {
	slot uint32
	d    float32
}

// hgraph is the HNSW graph of a collection's vectors as one transaction
// sees it, read through src (the file, or a cache of the same state) and
// written through v.
type hgraph struct {
	src  graphSource
	dist func(a, b []float32) float32 // smaller is closer
	v    *vectors
	// walk, when not nil, is the vectors in bytes that linking measures
	// (vector_walk.go) rather than by dist.
	walk *walkCopy
}

// graphSource is what a graph search reads.
type graphSource interface {
	// node returns slot's stored node (nil when it has none).
	node(slot uint32) []byte
	// loadedNode returns slot's node if it is in memory already, and
	// nil otherwise: it reads nothing.
	loadedNode(slot uint32) []byte
	// vec returns slot's vector.
	vec(slot uint32) []float32
	// docKey returns the doc key slot holds (empty for a tombstone).
	docKey(slot uint32) []byte
	// slotOf returns the slot holding the document idKey, if it has one.
	slotOf(idKey []byte) (uint32, bool)
	// live reports whether slot holds a document (not a tombstone).
	live(slot uint32) bool
	// entry returns the entry point and the top level, if the graph has
	// nodes.
	entry() (uint32, int, bool)
}

// graph returns the graph of v's vectors as v's transaction holds them
// (read through v's caches).
func (v *vectors) graph() *hgraph {
	return &hgraph{src: v, dist: distanceOf(v.def.Metric), v: v}
}

// distanceOf returns metric's distance (smaller is closer) on stored
// vectors: 1 − cosine for cosine (stored normalised), −dot for dot, and
// the squared Euclidean distance for l2.
func distanceOf(metric string) func(a, b []float32) float32 {
	switch metric {
	case MetricDot:
		return func(a, b []float32) float32 { return -dot(a, b) }
	case MetricL2:
		return sqL2
	}
	return func(a, b []float32) float32 { return 1 - dot(a, b) }
}

func (g *hgraph) vec(slot uint32) []float32  { return g.src.vec(slot) }
func (g *hgraph) docKey(slot uint32) []byte  { return g.src.docKey(slot) }
func (g *hgraph) node(slot uint32) []byte    { return g.src.node(slot) }
func (g *hgraph) entry() (uint32, int, bool) { return g.src.entry() }
func (g *hgraph) live(slot uint32) bool      { return g.src.live(slot) }

// walkDistance returns q's distance to slot's vector as a layer search
// measures it: through the walk copy when g has one (q then in the form
// walkQuery returns).
func (g *hgraph) walkDistance(q []float32, slot uint32) float32 {
	if g.walk != nil {
		return g.walk.distance(q, slot)
	}
	return g.dist(q, g.vec(slot))
}

// walkQuery returns the vector q in the form walkDistance measures from:
// q itself, or its form for the walk copy (in buf, reused when large
// enough) when g has one.
func (g *hgraph) walkQuery(q, buf []float32) []float32 {
	if g.walk == nil {
		return q
	}
	return g.walk.query(buf, q)
}

// walkVec returns slot's vector in the form walkDistance measures from:
// taken from the walk copy into buf (reused when large enough) when g has
// one, so that distances between two stored vectors read the copy only.
func (g *hgraph) walkVec(slot uint32, buf []float32) []float32 {
	if g.walk == nil {
		return g.vec(slot)
	}
	return g.walk.queryOf(buf, slot)
}

// prefetchWalk starts loading what walkDistance reads of slot.
func (g *hgraph) prefetchWalk(slot uint32) {
	if g.walk != nil {
		prefetch(g.walk.at(slot))
	} else {
		prefetch(g.vec(slot))
	}
}

// nodeLinks returns the links of a stored node at level (nil above its
// level) as raw little-endian uint32s.
func nodeLinks(raw []byte, level int) []byte {
	if len(raw) == 0 || level > int(raw[0]) {
		return nil
	}
	p := 1
	for l := 0; ; l++ {
		c := int(binary.LittleEndian.Uint16(raw[p:]))
		p += 2
		if l == level {
			return raw[p : p+4*c]
		}
		p += 4 * c
	}
}

// decodeNode returns a stored node's links per level.
func decodeNode(raw []byte) [][]uint32 {
	if len(raw) == 0 {
		return nil
	}
	out := make([][]uint32, int(raw[0])+1)
	for l := range out {
		links := nodeLinks(raw, l)
		out[l] = make([]uint32, len(links)/4, len(links)/4+1)
		for i := range out[l] {
			out[l][i] = binary.LittleEndian.Uint32(links[4*i:])
		}
	}
	return out
}

func encodeNode(lists [][]uint32) []byte {
	n := 1
	for _, l := range lists {
		n += 2 + 4*len(l)
	}
	out := make([]byte, 1, n)
	out[0] = byte(len(lists) - 1)
	for _, l := range lists {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(l)))
		for _, s := range l {
			out = binary.LittleEndian.AppendUint32(out, s)
		}
	}
	return out
}

// hnswLevel is the level of the node the document idKey gets in slot:
// drawn from the exponential distribution HNSW prescribes, but fixed by
// the key and slot, so that a write that runs again draws the same.
func hnswLevel(idKey []byte, slot uint32) int {
	h := uint64(14695981039346656037)
	for _, c := range binary.BigEndian.AppendUint32(idKey[:len(idKey):len(idKey)], slot) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	// splitmix64's finaliser spreads FNV's bits.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	u := (float64(h>>11) + 1) / (1 << 53) // (0, 1]
	return min(int(-math.Log(u)*hnswLevelMult), hnswMaxLevel)
}

// pendingNode is a slot whose vector waits to be linked into the graph,
// with the doc key it holds.
type pendingNode struct {
	slot  uint32
	idKey []byte
}

// hnswChunk is the most pending nodes linked together: each is searched
// for in the graph as it was before its chunk, on every core, and among
// the chunk's earlier nodes by brute force.
const hnswChunk = 256

// linkChunk links the nodes of chunk into the graph, as inserting them one
// after the other would, but with the expensive parts on every core (when
// v's caches are complete): each node's neighbours are found in the graph
// as it was before the chunk (the HNSW search, ef_construction candidates
// per level) and among the chunk's earlier nodes (exactly), then picked by
// the heuristic; the links back to it are then added to each neighbour at
// once, pruned once per neighbour.
func (g *hgraph) linkChunk(chunk []pendingNode) error {
	entry, top, ok := g.entry()
	levels := make([]int, len(chunk))
	// relinked are the chunk's slots that have a node already (a new
	// vector for a document, or a tombstone's slot reused): the graph
	// may lead to them, new slots it cannot.
	relinked := map[uint32]bool{}
	for i, p := range chunk {
		levels[i] = hnswLevel(p.idKey, p.slot)
		if ok && entry == p.slot {
			levels[i] = max(levels[i], top) // the entry point keeps the top level
		}
		if g.node(p.slot) != nil {
			relinked[p.slot] = true
		}
	}
	// Links go to live nodes only, found in the graph (other than the
	// chunk's, whose links are being made) or earlier in the chunk.
	accept := func(s uint32) bool { return g.live(s) && (len(relinked) == 0 || !relinked[s]) }
	lists := make([][][]uint32, len(chunk))
	g.v.each(len(chunk), func(lo, hi int) {
		vis := getVisitSet()
		defer visitSets.Put(vis)
		var q []float32 // reused for the walk copy's form
		for i := lo; i < hi; i++ {
			q = g.walkQuery(g.vec(chunk[i].slot), q)
			near := topK{k: hnswEfConstruction, h: candHeap{far: true}} // earlier in the chunk
			var upper []int                                             // earlier in the chunk, above level 0
			for j := range i {
				if s := chunk[j].slot; g.live(s) {
					near.offer(uint32(j), g.walkDistance(q, s))
					if levels[j] > 0 {
						upper = append(upper, j)
					}
				}
			}
			var ep []cand
			if ok {
				ep = []cand{{entry, g.walkDistance(q, entry)}}
				for l := top; l > levels[i]; l-- {
					ep = g.searchLayer(vis, q, ep, 1, l, nil)
				}
			}
			lists[i] = make([][]uint32, levels[i]+1)
			for l := levels[i]; l >= 0; l-- {
				var w []cand
				if ok && l <= top {
					w = g.searchLayer(vis, q, ep, hnswEfConstruction, l, accept)
					if len(w) > 0 {
						ep = w
					}
				}
				w = slices.Clone(w)
				if l == 0 {
					for _, c := range near.h.c {
						w = append(w, cand{chunk[c.slot].slot, c.d})
					}
				} else {
					for _, j := range upper {
						if levels[j] >= l {
							w = append(w, cand{chunk[j].slot, g.walkDistance(q, chunk[j].slot)})
						}
					}
				}
				sortCands(w)
				for _, c := range g.selectNeighbors(w[:min(len(w), hnswEfConstruction)], hnswM) {
					lists[i][l] = append(lists[i][l], c.slot)
				}
			}
		}
	})
	olds := make([][][]uint32, len(chunk))
	var back []backLink // the links back to the chunk's nodes, by target
	for i, p := range chunk {
		olds[i] = decodeNode(g.node(p.slot)) // the links of the slot's last vector, if any
		g.v.putNode(p.slot, encodeNode(lists[i]))
		for l, list := range lists[i] {
			for _, n := range list {
				back = append(back, backLink{n, p.slot, l})
			}
		}
	}
	back = byTarget(back)
	var groups [][]backLink // back's runs of one target each
	for lo := 0; lo < len(back); {
		hi := lo + 1
		for hi < len(back) && back[hi].target == back[lo].target {
			hi++
		}
		groups = append(groups, back[lo:hi])
		lo = hi
	}
	nodes := make([][]byte, len(groups))
	g.v.each(len(groups), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			nodes[k] = g.withLinks(groups[k][0].target, groups[k])
		}
	})
	for k, group := range groups {
		if nodes[k] != nil {
			g.v.putNode(group[0].target, nodes[k])
		}
	}
	for i, p := range chunk {
		if err := g.relink(p.slot, olds[i], lists[i]); err != nil {
			return err
		}
	}
	best := slices.Index(levels, slices.Max(levels))
	if !ok || levels[best] > top {
		g.v.setEntry(chunk[best].slot, levels[best])
	}
	return nil
}

// byTarget returns links sorted by target, those of one target in the
// order they come in links (a sort of integers, several times faster
// than sorting the structs by a comparison function).
func byTarget(links []backLink) []backLink {
	keys := make([]uint64, len(links))
	for i, b := range links {
		keys[i] = uint64(b.target)<<32 | uint64(i)
	}
	slices.Sort(keys)
	out := make([]backLink, len(links))
	for i, k := range keys {
		out[i] = links[uint32(k)]
	}
	return out
}

// backLink is a link to add to a node, target: to slot, at level.
type backLink struct {
	target, slot uint32
	level        int
}

// relink keeps reachable the live nodes slot linked to before it was
// linked again (its vector changed, or a new vector took a tombstone's
// slot): a node dropped from slot's links may have had no other way in,
// so its first live link other than slot links back to it.
func (g *hgraph) relink(slot uint32, old, lists [][]uint32) error {
	for l := range old {
		for _, x := range old[l] {
			if x == slot || !g.live(x) || (l < len(lists) && slices.Contains(lists[l], x)) {
				continue
			}
			xl := decodeNode(g.node(x))
			if l >= len(xl) {
				continue // x's slot was reused at a lower level
			}
			for _, z := range xl[l] {
				if z != slot && g.live(z) {
					if err := g.link(z, x, l); err != nil {
						return err
					}
					break
				}
			}
		}
	}
	return nil
}

// link adds slot to n's links at level.
func (g *hgraph) link(n, slot uint32, level int) error {
	if raw := g.withLinks(n, []backLink{{n, slot, level}}); raw != nil {
		g.v.putNode(n, raw)
	}
	return nil
}

// withLinks returns n's node with the links adds added (those at a level
// above n's or that it has already left out), nil when that changes
// nothing. Past a level's maximum, links to tombstones go first, then the
// selection heuristic keeps the live links that spread out from n, and
// only those (as hnswlib does): the list shrinks below the maximum, so
// that the next links added to n are taken as they come until it is full
// again. Refilling it with the closest links the heuristic left out made
// every later link to n prune it again, half the build's distance
// computations, for no recall (docs/design/store-performance.md).
func (g *hgraph) withLinks(n uint32, adds []backLink) []byte {
	lists := decodeNode(g.node(n))
	changed := make([]bool, len(lists))
	for _, a := range adds {
		if a.level < len(lists) && !slices.Contains(lists[a.level], a.slot) {
			lists[a.level] = append(lists[a.level], a.slot)
			changed[a.level] = true
		}
	}
	if !slices.Contains(changed, true) {
		return nil
	}
	for level, list := range lists {
		limit := hnswMaxLinks(level)
		if !changed[level] || len(list) <= limit {
			continue
		}
		nv := g.walkVec(n, nil)
		cs := make([]cand, 0, len(list))
		for _, s := range list {
			if g.live(s) {
				cs = append(cs, cand{s, g.walkDistance(nv, s)})
			}
		}
		sortCands(cs)
		kept := g.selectNeighbors(cs, limit)
		list = list[:0]
		for _, c := range kept {
			list = append(list, c.slot)
		}
		lists[level] = list
	}
	return encodeNode(lists)
}

func hnswMaxLinks(level int) int {
	if level == 0 {
		return hnswM0
	}
	return hnswM
}

func sortCands(cs []cand) {
	slices.SortFunc(cs, func(a, b cand) int {
		switch {
		case a.d < b.d:
			return -1
		case a.d > b.d:
			return 1
		}
		return int(a.slot) - int(b.slot)
	})
}

// selectNeighbors picks up to m of cands (sorted by distance) by the HNSW
// heuristic: a candidate is kept when it is closer to the node than to
// every candidate kept before it, which spreads the links.
func (g *hgraph) selectNeighbors(cands []cand, m int) []cand {
	out := make([]cand, 0, m)
	var cv []float32
	for _, c := range cands {
		if len(out) == m {
			break
		}
		keep := true
		if len(out) > 0 {
			cv = g.walkVec(c.slot, cv)
		}
		for _, r := range out {
			if g.walkDistance(cv, r.slot) < c.d {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// searchLayer returns the up to ef nodes of level closest to q found from
// the entry points ep, sorted by distance; only nodes accept allows (nil:
// every node) are results, every node routes.
func (g *hgraph) searchLayer(vis *visitSet, q []float32, ep []cand, ef, level int, accept func(uint32) bool) []cand {
	vis.reset()
	next := candHeap{}           // candidates to expand, closest first
	found := candHeap{far: true} // results, farthest first
	for _, c := range ep {
		vis.visit(c.slot)
		next.push(c)
		if accept == nil || accept(c.slot) {
			found.push(c)
		}
	}
	for len(next.c) > 0 {
		c := next.pop()
		if len(found.c) >= ef && c.d > found.c[0].d {
			break
		}
		if len(next.c) > 0 {
			// The next candidate's links are likely read next: start
			// loading them while c's neighbours are measured.
			prefetch(g.src.loadedNode(next.c[0].slot))
		}
		links := nodeLinks(g.node(c.slot), level)
		vis.next = vis.next[:0]
		for i := 0; i+4 <= len(links); i += 4 {
			s := binary.LittleEndian.Uint32(links[i:])
			if vis.visit(s) {
				continue
			}
			if level > 0 {
				if raw := g.node(s); len(raw) == 0 || int(raw[0]) < level {
					continue // a stale link to a slot reused at a lower level
				}
			}
			vis.next = append(vis.next, s)
			g.prefetchWalk(s)
		}
		for _, s := range vis.next {
			d := g.walkDistance(q, s)
			if len(found.c) < ef || d < found.c[0].d {
				next.push(cand{s, d})
				if accept == nil || accept(s) {
					found.push(cand{s, d})
					if len(found.c) > ef {
						found.pop()
					}
				}
			}
		}
	}
	out := found.c
	sortCands(out)
	return out
}

// search returns the k live slots closest to q that accept allows (nil:
// all), considering ef candidates at level 0.
func (g *hgraph) search(q []float32, k, ef int, accept func(uint32) bool) []cand {
	entry, top, ok := g.entry()
	if !ok {
		return nil
	}
	vis := getVisitSet()
	defer visitSets.Put(vis)
	ep := []cand{{entry, g.walkDistance(q, entry)}}
	for l := top; l > 0; l-- {
		ep = g.searchLayer(vis, q, ep, 1, l, nil)
	}
	res := g.searchLayer(vis, q, ep, max(ef, k), 0, func(s uint32) bool {
		return g.live(s) && (accept == nil || accept(s))
	})
	return res[:min(k, len(res))]
}

// searchQueued is search, with the slots queued (vectors not linked into
// the graph yet, linker.go) measured exactly: the k closest of both.
func (g *hgraph) searchQueued(q []float32, k, ef int, accept func(uint32) bool, queued []uint32) []cand {
	res := g.search(q, k, ef, accept)
	if len(queued) == 0 {
		return res
	}
	t := topK{k: k, h: candHeap{far: true}}
	found := make(map[uint32]bool, len(res))
	for _, c := range res {
		found[c.slot] = true
		t.offer(c.slot, c.d)
	}
	for _, s := range queued {
		if !found[s] && g.live(s) && (accept == nil || accept(s)) {
			t.offer(s, g.dist(q, g.vec(s)))
		}
	}
	return t.sorted()
}

// verify checks the graph of n slots: nodes of existing slots, one for
// every slot linked says must have one, links to existing slots within
// each level's maximum, and an entry point at the top level.
func (g *hgraph) verify(n uint32, linked func(slot uint32) bool) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("docstore: verify: vector graph of %q: %s", g.v.def.Field, fmt.Sprintf(format, args...))
	}
	nodes, top := 0, -1
	has := make([]bool, n)
	c := g.v.gr.Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		if len(k) != 4 || binary.BigEndian.Uint32(k) >= n || len(raw) == 0 {
			return fail("node %x is not a slot", k)
		}
		lists := decodeNode(raw)
		if len(encodeNode(lists)) != len(raw) {
			return fail("node %x is corrupt", k)
		}
		for l, list := range lists {
			if len(list) > hnswMaxLinks(l) {
				return fail("node %x has %d links at level %d", k, len(list), l)
			}
			for _, s := range list {
				if s >= n {
					return fail("node %x links to slot %d of %d", k, s, n)
				}
			}
		}
		top = max(top, len(lists)-1)
		has[binary.BigEndian.Uint32(k)] = true
		nodes++
	}
	for slot := range n {
		if !has[slot] && linked(slot) {
			return fail("slot %d holds a linked document and has no node", slot)
		}
	}
	entry, level, ok := g.entry()
	if ok != (nodes > 0) || (ok && (level != top || entry >= n || !has[entry] || int(g.node(entry)[0]) != top)) {
		return fail("entry point %d at level %d (present %v) for top level %d", entry, level, ok, top)
	}
	return nil
}

// candHeap is a binary heap of candidates: the closest first, or the
// farthest first when far is set.
type candHeap struct {
	c   []cand
	far bool
}

func (h *candHeap) before(i, j int) bool {
	if h.far {
		return h.c[i].d > h.c[j].d
	}
	return h.c[i].d < h.c[j].d
}

func (h *candHeap) push(c cand) {
	h.c = append(h.c, c)
	for i := len(h.c) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.before(i, p) {
			break
		}
		h.c[p], h.c[i] = h.c[i], h.c[p]
		i = p
	}
}

func (h *candHeap) pop() cand {
	top := h.c[0]
	last := len(h.c) - 1
	h.c[0] = h.c[last]
	h.c = h.c[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h.c) && h.before(l, m) {
			m = l
		}
		if l+1 < len(h.c) && h.before(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		h.c[m], h.c[i] = h.c[i], h.c[m]
		i = m
	}
	return top
}

// visitSet is the nodes a layer search has visited: a mark per slot,
// equal to the search's epoch when visited, so that a new search clears
// nothing.
type visitSet struct {
	mark  []uint32
	epoch uint32
	next  []uint32 // the neighbours of the node being expanded to visit
}

// visitSets recycles visit sets between searches.
var visitSets = sync.Pool{New: func() any { return new(visitSet) }}

func getVisitSet() *visitSet { return visitSets.Get().(*visitSet) }

// reset starts a new search.
func (v *visitSet) reset() {
	if v.epoch++; v.epoch == 0 {
		clear(v.mark)
		v.epoch = 1
	}
}

// visit marks slot visited and reports whether it was already.
func (v *visitSet) visit(slot uint32) bool {
	if int(slot) >= len(v.mark) {
		v.mark = slices.Grow(v.mark, int(slot)+1-len(v.mark)+len(v.mark)/2)
		v.mark = v.mark[:cap(v.mark)]
	}
	if v.mark[slot] == v.epoch {
		return true
	}
	v.mark[slot] = v.epoch
	return false
}
