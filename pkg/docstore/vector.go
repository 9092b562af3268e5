package docstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"unsafe"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// A collection's vector field (SetVector) keeps every document's vector
// beside the documents, in six buckets named v\x00<collection>\x00<part>:
//
//	b  blocks: uint32 block number (big-endian) → a fixed-size block of
//	   vectorsPerBlock slots: the slots' float32 components, little-endian
//	   and contiguous, then vectorsPerBlock+1 uint32 offsets into the doc
//	   keys that follow (a free slot has an empty key), padded to 4 bytes,
//	   so that a scan reads raw float32s with no per-document decoding
//	i  doc key (AppendKey(nil, id)) → its slot, uint32 big-endian
//	f  free slots (uint32 big-endian → ""), reused before new ones
//	m  metadata: "n" the number of slots ever used (uint32), "e" the HNSW
//	   entry point (slot uint32 and its level, one byte), absent when empty,
//	   "id" a random uint64 drawn when the field is declared and "gen" a
//	   uint64 every vector write increments: together they name the state
//	   a search cache holds (vector_cache.go); "lg" a uint64 every linking
//	   of a batch increments (linker.go)
//	g  the HNSW graph (hnsw.go): slot → its links per level (empty when
//	   the field is flat)
//	u  the slots whose vectors wait to be linked into the graph (linker.go):
//	   slot → the write generation that wrote its vector (uint64)
//
// A slot is a document's node in the graph for the document's life; a
// deleted document's slot keeps its vector and links (a tombstone that
// still routes searches) until a new vector reuses the slot.

// Vector metrics.
const (
	MetricCosine = "cosine" // cosine similarity; vectors are stored normalised
	MetricDot    = "dot"    // dot product
	MetricL2     = "l2"     // Euclidean distance (the score is its negation)
)

// MaxVectorDimension is the largest dimension of a vector field.
const MaxVectorDimension = 4096

// VectorDef defines a collection's vector field: the dotted path of the
// field holding each document's vector, its dimension and the metric
// searches rank by.
type VectorDef struct {
	Field     string `json:"field"`
	Dimension int    `json:"dimension"`
	// Metric is cosine (the default), dot or l2.
	Metric string `json:"metric"`
	// Flat keeps no HNSW graph: exact searches only (approximate ones are
	// refused), and writes skip the graph's cost.
	Flat bool `json:"flat,omitempty"`
}

func vectorBucket(coll string, part byte) []byte {
	return []byte("v\x00" + coll + "\x00" + string(part))
}

// The parts of a collection's vector buckets.
const (
	vecBlocks = 'b'
	vecIDs    = 'i'
	vecFree   = 'f'
	vecMeta   = 'm'
	vecGraph  = 'g'
	vecQueue  = 'u'
)

var vectorParts = [...]byte{vecBlocks, vecIDs, vecFree, vecMeta, vecGraph, vecQueue}

// checkVectorDef validates def (its metric defaulted) for coll.
func checkVectorDef(coll string, def *VectorDef) error {
	if def.Metric == "" {
		def.Metric = MetricCosine
	}
	bad := func(field, format string, args ...any) error {
		return &Error{Code: CodeInvalid, Collection: coll, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	f := def.Field
	if f == "" || f[0] == '$' || f[0] == '.' || f[len(f)-1] == '.' || bytes.Contains([]byte(f), []byte("..")) {
		return bad("field", "vector field %q is not a dotted path of field names", f)
	}
	if def.Dimension < 1 || def.Dimension > MaxVectorDimension {
		return bad("dimension", "vector dimension %d: want 1 to %d", def.Dimension, MaxVectorDimension)
	}
	if def.Metric != MetricCosine && def.Metric != MetricDot && def.Metric != MetricL2 {
		return bad("metric", "vector metric %q: want cosine, dot or l2", def.Metric)
	}
	return nil
}

// SetVector declares coll's vector field (coll is created if absent) and
// indexes the vectors of the existing documents in one transaction: they
// are searchable when it returns, and the linker then links them into the
// HNSW graph in the background (WaitLinked). It reports false when the same
// definition exists; another definition fails with index_exists (a
// collection has one vector field). A document whose field holds anything
// but a vector of def's dimension (null and missing excepted) fails it
// with schema_violation naming the field, and nothing changes.
func (s *Store) SetVector(ctx context.Context, coll string, def VectorDef, progress Progress) (bool, error) {
	if err := checkName("collection", coll); err != nil {
		return false, err
	}
	if err := checkVectorDef(coll, &def); err != nil {
		return false, err
	}
	if err := s.ensureCollection(coll); err != nil {
		return false, err
	}
	created := false
	err := s.changeCatalog(coll, false, func(tx kv.Tx, col *collection) error {
		created = false
		if col.Vector != nil {
			if *col.Vector == def {
				return nil
			}
			return &Error{Code: CodeIndexExists, Collection: coll, Field: col.Vector.Field,
				Message: fmt.Sprintf("%q has a vector field already: %q, %d dimensions, %s", coll, col.Vector.Field, col.Vector.Dimension, col.Vector.Metric)}
		}
		col.Vector = &def
		w := &writer{tx: tx, col: col, docs: tx.Bucket(docsBucket(coll))}
		v, err := w.vectors()
		if err != nil {
			return err
		}
		if err := v.meta.Put([]byte("id"), binary.LittleEndian.AppendUint64(nil, rand.Uint64())); err != nil {
			return err
		}
		if err := scanDocs(ctx, tx, coll, progress, func(k []byte, d Doc) error {
			return w.deriveVector(docChange{ID: d.ID, IDKey: k, New: d.Value, HasNew: true})
		}); err != nil {
			return err
		}
		created = true
		return v.flush()
	})
	if err != nil {
		return false, err
	}
	if created {
		s.linker.want(coll)
	}
	return created, nil
}

// vectorOf returns the vector doc holds in def's field, normalised for
// cosine, and whether it holds one (a missing or null field holds none).
// Any other value, a vector of another dimension, a component that is not
// finite and, for cosine, a zero vector are schema violations.
func (def *VectorDef) vectorOf(coll string, id Value, doc Value) ([]float32, bool, error) {
	v, ok := doc.Path(def.Field)
	if !ok || v.IsNull() {
		return nil, false, nil
	}
	bad := func(format string, args ...any) error {
		return &Error{Code: CodeSchemaViolation, Collection: coll, ID: &id, Field: def.Field,
			Message: fmt.Sprintf("document %s in %q: vector field %q ", idString(id), coll, def.Field) + fmt.Sprintf(format, args...)}
	}
	vec, ok := v.Vector()
	if !ok {
		return nil, false, bad(`holds %s, not a vector (write {"$vector": [...]})`, v.Kind())
	}
	out, err := def.checkVector(vec)
	if err != nil {
		return nil, false, bad("%s", err)
	}
	return out, true, nil
}

// checkVector validates vec against def and returns it as stored (a copy,
// normalised for cosine).
func (def *VectorDef) checkVector(vec []float32) ([]float32, error) {
	if len(vec) != def.Dimension {
		return nil, fmt.Errorf("has %d dimensions, not %d", len(vec), def.Dimension)
	}
	var norm float64
	for i, x := range vec {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("component %d is %v, not a finite number", i, x)
		}
		norm += float64(x) * float64(x)
	}
	out := slices.Clone(vec)
	if def.Metric == MetricCosine {
		if norm == 0 {
			return nil, fmt.Errorf("is zero, which has no direction for cosine")
		}
		inv := 1 / math.Sqrt(norm)
		for i := range out {
			out[i] = float32(float64(out[i]) * inv)
		}
	}
	return out, nil
}

// vectorsPerBlock is the number of slots of a block: about 16 KiB of
// components, 4 to 256 slots.
func vectorsPerBlock(dim int) int { return min(max(16384/dim, 4), 256) }

// vectors is a collection's vector buckets in one transaction, with what
// it read of them and the graph work that waits for flush.
type vectors struct {
	def                         *VectorDef
	coll                        string
	per                         int // vectorsPerBlock(def.Dimension)
	blocks, ids, free, meta, gr kv.Bucket
	// queue is the u bucket, nil in a read transaction of a store whose
	// layout predates it (every vector linked).
	queue kv.Bucket

	// The blocks (by number; raw nil: not read) and nodes (by slot;
	// nil: not read) read or written, the entry point, and the nodes
	// written but not yet put (flush puts them, and the blocks written).
	// Values read from the transaction stay valid until it ends.
	blockCache []block
	owned      map[uint32]bool // blocks written, in buffers of v's own
	nodeCache  [][]byte
	dirty      []uint32 // the slots whose nodes were written, each once
	isDirty    []bool   // by slot
	entryRead  bool
	entryAt    uint32
	entryLevel int
	hasEntry   bool
	entryMoved bool // setEntry changed it: the linker puts it
	// complete: every block and node is in the caches (loadAll), so
	// that reading reads nothing from the transaction, and goroutines
	// may read at once; liveSlots then says which slots hold a document
	// (a graph search asks of every node it meets, and a block's keys
	// are in another cache line than the vector it reads).
	complete  bool
	liveSlots []bool
	// vecAt is each slot's vector (nil: none), so that a graph search
	// finds a vector in one read rather than through its block (the
	// build of 100,000 vectors ran a quarter faster for it).
	vecAt []*float32
	// queued says that v's writes queued vectors for the linker.
	queued bool
}

// openVectors returns col's vector buckets in tx (created when tx is
// writable), or nil when col has no vector field.
func openVectors(tx kv.Tx, col *collection) (*vectors, error) {
	if col.Vector == nil {
		return nil, nil
	}
	v := &vectors{def: col.Vector, coll: col.Name, per: vectorsPerBlock(col.Vector.Dimension)}
	for i, b := range []*kv.Bucket{&v.blocks, &v.ids, &v.free, &v.meta, &v.gr, &v.queue} {
		name := vectorBucket(col.Name, vectorParts[i])
		if !tx.Writable() {
			if *b = tx.Bucket(name); *b == nil && vectorParts[i] != vecQueue {
				return nil, fmt.Errorf("docstore: %q: vector bucket %q is missing", col.Name, name)
			}
			continue
		}
		var err error
		if *b, err = tx.CreateBucketIfNotExists(name); err != nil {
			return nil, err
		}
	}
	kv.PrefetchWithNext(v.meta, vectorMetaKeys, nil) // every search reads them: with the next read on PostgreSQL
	return v, nil
}

// vectorMetaKeys are the keys of a vector field's meta bucket: its random
// id and write generation (version), its number of slots, its entry point.
var vectorMetaKeys = [][]byte{[]byte("id"), []byte("gen"), []byte("n"), []byte("e"), linkGenKey}

func u32key(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

// slots returns the number of slots ever used.
func (v *vectors) slots() uint32 {
	if b := v.meta.Get([]byte("n")); len(b) == 4 {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// blockLen is the byte length of a block's components.
func (v *vectors) blockLen() int { return v.per * v.def.Dimension * 4 }

// block is one decoded block: its components (a view of the stored bytes
// when aligned) and its doc keys.
type block struct {
	vecs []float32
	raw  []byte // the stored value
	per  int
}

// key returns slot i's doc key (empty when free).
func (b block) key(i int) []byte {
	offs := b.raw[len(b.vecs)*4:]
	base := 4 * (b.per + 1)
	lo, hi := binary.LittleEndian.Uint32(offs[4*i:]), binary.LittleEndian.Uint32(offs[4*i+4:])
	return offs[base+int(lo) : base+int(hi)]
}

// readBlock returns block n, or false when it was never written.
func (v *vectors) readBlock(n uint32) (block, bool) {
	if int(n) < len(v.blockCache) && v.blockCache[n].raw != nil {
		return v.blockCache[n], true
	}
	if v.complete {
		return block{}, false
	}
	raw := v.blocks.Get(u32key(n))
	if raw == nil {
		return block{}, false
	}
	return v.cacheBlock(n, raw), true
}

// cacheBlock remembers raw as block n and returns it.
func (v *vectors) cacheBlock(n uint32, raw []byte) block {
	if int(n) >= len(v.blockCache) {
		v.blockCache = slices.Grow(v.blockCache, int(n)+1-len(v.blockCache))[:n+1]
	}
	v.blockCache[n] = block{vecs: floats(raw[:v.blockLen()]), raw: raw, per: v.per}
	return v.blockCache[n]
}

// vec returns slot's stored vector (graphSource).
func (v *vectors) vec(slot uint32) []float32 { return v.vector(slot) }

// docKey returns the doc key slot holds, empty when it is free
// (graphSource).
func (v *vectors) docKey(slot uint32) []byte {
	b, ok := v.readBlock(slot / uint32(v.per))
	if !ok {
		return nil
	}
	return b.key(int(slot % uint32(v.per)))
}

// live reports whether slot holds a document (graphSource).
func (v *vectors) live(slot uint32) bool {
	if v.complete {
		return int(slot) < len(v.liveSlots) && v.liveSlots[slot]
	}
	return len(v.docKey(slot)) > 0
}

// node returns slot's graph node, nil when it has none (graphSource).
func (v *vectors) node(slot uint32) []byte {
	if int(slot) < len(v.nodeCache) && v.nodeCache[slot] != nil {
		return v.nodeCache[slot]
	}
	if v.complete {
		return nil
	}
	raw := v.gr.Get(u32key(slot))
	if raw != nil {
		v.cacheNode(slot, raw)
	}
	return raw
}

// loadedNode returns slot's node if it is cached (graphSource).
func (v *vectors) loadedNode(slot uint32) []byte {
	if int(slot) < len(v.nodeCache) {
		return v.nodeCache[slot]
	}
	return nil
}

// cacheNode remembers raw as slot's node. The cache is sized at once to
// every slot the field has (a search reaches slots all over it), not
// grown by each slot beyond it, which left copies of it as garbage.
func (v *vectors) cacheNode(slot uint32, raw []byte) {
	if int(slot) >= len(v.nodeCache) {
		n := max(int(slot)+1, int(v.slots()))
		v.nodeCache = slices.Grow(v.nodeCache, n-len(v.nodeCache))[:n]
	}
	v.nodeCache[slot] = raw
}

// putNode sets slot's node, for the linker to put (dirty).
func (v *vectors) putNode(slot uint32, raw []byte) {
	v.cacheNode(slot, raw)
	if int(slot) >= len(v.isDirty) {
		v.isDirty = slices.Grow(v.isDirty, len(v.nodeCache)-len(v.isDirty))[:len(v.nodeCache)]
	}
	if !v.isDirty[slot] {
		v.isDirty[slot] = true
		v.dirty = append(v.dirty, slot)
	}
}

// entry returns the graph's entry point and top level, if it has nodes
// (graphSource).
func (v *vectors) entry() (uint32, int, bool) {
	if !v.entryRead {
		b := v.meta.Get([]byte("e"))
		v.entryRead, v.hasEntry = true, len(b) == 5
		if v.hasEntry {
			v.entryAt, v.entryLevel = binary.LittleEndian.Uint32(b), int(b[4])
		}
	}
	return v.entryAt, v.entryLevel, v.hasEntry
}

// setEntry moves the entry point, in v's memory: the linker puts it.
func (v *vectors) setEntry(slot uint32, level int) {
	v.entryRead, v.hasEntry, v.entryAt, v.entryLevel, v.entryMoved = true, true, slot, level, true
}

// loadAll reads every block and node into the caches; v then reads
// nothing more from its transaction, until it is flushed.
func (v *vectors) loadAll() {
	v.entry()
	c := v.blocks.Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		if n := binary.BigEndian.Uint32(k); int(n) >= len(v.blockCache) || v.blockCache[n].raw == nil {
			v.cacheBlock(n, raw)
		}
	}
	c = v.gr.Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		if slot := binary.BigEndian.Uint32(k); int(slot) >= len(v.nodeCache) || v.nodeCache[slot] == nil {
			v.cacheNode(slot, raw)
		}
	}
	v.liveSlots = make([]bool, len(v.blockCache)*v.per)
	v.vecAt = make([]*float32, len(v.blockCache)*v.per)
	for n, b := range v.blockCache {
		for i := range v.per {
			if b.raw != nil {
				v.liveSlots[n*v.per+i] = len(b.key(i)) > 0
				v.vecAt[n*v.per+i] = &b.vecs[i*v.def.Dimension]
			}
		}
	}
	v.complete = true
}

// each calls fn over runs of [0, n) that cover it: on every core when
// the caches are complete (inParallel, a few nodes a run), on this
// goroutine (which may read the transaction) otherwise.
func (v *vectors) each(n int, fn func(lo, hi int)) {
	if !v.complete {
		fn(0, n)
		return
	}
	inParallel(n, 8, 4, fn)
}

// flush puts the blocks written.
func (v *vectors) flush() error {
	for _, n := range slices.Sorted(maps.Keys(v.owned)) {
		if err := v.blocks.Put(u32key(n), v.blockCache[n].raw); err != nil {
			return err
		}
	}
	v.owned = nil
	return nil
}

// vector returns slot's stored vector.
func (v *vectors) vector(slot uint32) []float32 {
	if v.complete {
		if int(slot) < len(v.vecAt) && v.vecAt[slot] != nil {
			return unsafe.Slice(v.vecAt[slot], v.def.Dimension)
		}
		return nil
	}
	b, ok := v.readBlock(slot / uint32(v.per))
	if !ok {
		return nil
	}
	i := int(slot%uint32(v.per)) * v.def.Dimension
	return b.vecs[i : i+v.def.Dimension]
}

// writeSlot sets slot's doc key (nil frees it) and, when vec is not nil,
// its vector. The block is rewritten in a buffer of v's own, which later
// writes to the block change in place, and put by flush.
func (v *vectors) writeSlot(slot uint32, idKey []byte, vec []float32) error {
	n, i := slot/uint32(v.per), int(slot%uint32(v.per))
	old, ok := v.readBlock(n)
	keys := make([][]byte, v.per)
	size := 0
	if ok {
		for j := range keys {
			keys[j] = old.key(j)
			size += len(keys[j])
		}
	}
	size += len(idKey) - len(keys[i])
	keys[i] = idKey
	// The offsets and keys, built apart: the old keys may be in the buffer.
	tail := make([]byte, 4*(v.per+1), 4*(v.per+1)+size)
	off := 0
	for j, k := range keys {
		binary.LittleEndian.PutUint32(tail[4*j:], uint32(off))
		tail = append(tail, k...)
		off += len(k)
	}
	binary.LittleEndian.PutUint32(tail[4*v.per:], uint32(off))
	length := (v.blockLen() + len(tail) + 3) &^ 3
	out := old.raw
	if !v.owned[n] || cap(out) < length {
		out = make([]byte, length, length+length/8)
		if ok {
			copy(out, old.raw[:v.blockLen()])
		}
	}
	out = out[:length]
	clear(out[v.blockLen()+copy(out[v.blockLen():], tail):])
	if vec != nil {
		at := i * v.def.Dimension * 4
		for j, x := range vec {
			binary.LittleEndian.PutUint32(out[at+4*j:], math.Float32bits(x))
		}
	}
	v.cacheBlock(n, out)
	if v.owned == nil {
		v.owned = map[uint32]bool{}
	}
	v.owned[n] = true
	return nil
}

// vectorsOf returns the stored vectors of the documents keys (nil for one
// without), from src when it is not nil (the graph's copy in memory, which
// knows each document's slot too: nothing is read) and otherwise from v.
// From v it asks the backend for the slots, then for the blocks, in one
// read each (kv.Prefetch), not one per document: on PostgreSQL a read is
// a round trip.
func (v *vectors) vectorsOf(keys [][]byte, src graphSource) [][]float32 {
	fromV := src == nil
	if fromV {
		src = v
		kv.Prefetch(v.ids, keys)
	}
	slots := make([]uint32, len(keys))
	has := make([]bool, len(keys))
	for i, k := range keys {
		slots[i], has[i] = src.slotOf(k)
	}
	if fromV {
		var blocks [][]byte
		seen := map[uint32]bool{}
		for i, slot := range slots {
			n := slot / uint32(v.per)
			if has[i] && !seen[n] && (int(n) >= len(v.blockCache) || v.blockCache[n].raw == nil) {
				seen[n] = true
				blocks = append(blocks, u32key(n))
			}
		}
		kv.Prefetch(v.blocks, blocks)
	}
	out := make([][]float32, len(keys))
	for i, slot := range slots {
		if has[i] {
			out[i] = src.vec(slot)
		}
	}
	return out
}

// slotOf returns the slot of the document idKey, if it has one
// (graphSource).
func (v *vectors) slotOf(idKey []byte) (uint32, bool) {
	b := v.ids.Get(idKey)
	if len(b) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b), true
}

// allocSlot returns a free slot, or a new one.
func (v *vectors) allocSlot() (uint32, error) {
	c := v.free.Cursor()
	if k, _ := c.First(); k != nil {
		slot := binary.BigEndian.Uint32(k)
		return slot, v.free.Delete(k)
	}
	n := v.slots()
	if n == math.MaxUint32 {
		return 0, fmt.Errorf("docstore: vector slots exhausted")
	}
	return n, v.meta.Put([]byte("n"), binary.LittleEndian.AppendUint32(nil, n+1))
}

// version returns the field's random id and its write generation.
func (v *vectors) version() (id, gen uint64) {
	if b := v.meta.Get([]byte("id")); len(b) == 8 {
		id = binary.LittleEndian.Uint64(b)
	}
	if b := v.meta.Get([]byte("gen")); len(b) == 8 {
		gen = binary.LittleEndian.Uint64(b)
	}
	return id, gen
}

// bump counts a vector write.
func (v *vectors) bump() error {
	_, gen := v.version()
	return v.meta.Put([]byte("gen"), binary.LittleEndian.AppendUint64(nil, gen+1))
}

// put stores vec as the vector of the document idKey, queued for the
// linker to link into the graph.
func (v *vectors) put(idKey []byte, vec []float32) error {
	slot, ok := v.slotOf(idKey)
	if ok && slices.Equal(v.vector(slot), vec) {
		return nil
	}
	if err := v.bump(); err != nil {
		return err
	}
	if !ok {
		var err error
		if slot, err = v.allocSlot(); err != nil {
			return err
		}
		if err := v.ids.Put(bytes.Clone(idKey), u32key(slot)); err != nil {
			return err
		}
	}
	if err := v.writeSlot(slot, idKey, vec); err != nil {
		return err
	}
	if v.def.Flat {
		return nil
	}
	_, gen := v.version()
	v.queued = true
	return v.queue.Put(u32key(slot), binary.LittleEndian.AppendUint64(nil, gen))
}

// remove drops the vector of the document idKey, if it has one: its slot
// is freed (its graph node stays as a tombstone until the slot is reused).
func (v *vectors) remove(idKey []byte) error {
	slot, ok := v.slotOf(idKey)
	if !ok {
		return nil
	}
	if err := v.ids.Delete(idKey); err != nil {
		return err
	}
	if err := v.bump(); err != nil {
		return err
	}
	if err := v.writeSlot(slot, nil, nil); err != nil {
		return err
	}
	return v.free.Put(u32key(slot), nil)
}

// deriveVector keeps the collection's vectors for c: a document with a
// vector in the field gets (or keeps) a slot, one without loses it.
func (w *writer) deriveVector(c docChange) error {
	def := w.col.Vector
	if def == nil {
		return nil
	}
	var vec []float32
	has := false
	if c.HasNew {
		var err error
		if vec, has, err = def.vectorOf(w.col.Name, c.ID, c.New); err != nil {
			return err
		}
	}
	v, err := w.vectors()
	if err != nil {
		return err
	}
	if has {
		return v.put(c.IDKey, vec)
	}
	return v.remove(c.IDKey)
}

// vectors returns the collection's vector buckets in w's transaction,
// the same for every write of w.
func (w *writer) vectors() (*vectors, error) {
	if w.d.vec == nil {
		v, err := openVectors(w.tx, w.col)
		if err != nil {
			return nil, err
		}
		w.d.vec = v
	}
	return w.d.vec, nil
}

// dropVector deletes col's vector buckets.
func dropVector(tx kv.Tx, col *collection) error {
	if col.Vector == nil {
		return nil
	}
	for _, p := range vectorParts {
		if tx.Bucket(vectorBucket(col.Name, p)) == nil {
			continue
		}
		if err := tx.DeleteBucket(vectorBucket(col.Name, p)); err != nil {
			return err
		}
	}
	return nil
}

// verifyVector checks col's vectors against its documents: every document
// with a vector has a slot holding it (normalised for cosine) and its key,
// every other slot is free, the queue names existing slots, and the
// graph's links name existing slots.
func verifyVector(ctx context.Context, tx kv.Tx, col *collection) error {
	v, err := openVectors(tx, col)
	if v == nil || err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("docstore: verify: vectors of %q: %s", col.Name, fmt.Sprintf(format, args...))
	}
	docs := tx.Bucket(docsBucket(col.Name))
	r := &reader{tx: tx, col: col, docs: docs}
	n := v.slots()
	used := make([]bool, n)
	withVec := 0
	c := docs.Cursor()
	for k, val := c.First(); k != nil; k, val = c.Next() {
		d, err := r.load(k, val)
		if err != nil {
			return err
		}
		vec, has, err := v.def.vectorOf(col.Name, d.ID, d.Value)
		if err != nil {
			return fail("%v", err)
		}
		slot, ok := v.slotOf(k)
		if has != ok {
			return fail("document %s has a vector %v but a slot %v", idString(d.ID), has, ok)
		}
		if !has {
			continue
		}
		withVec++
		if slot >= n || used[slot] {
			return fail("document %s has slot %d of %d, or a slot taken twice", idString(d.ID), slot, n)
		}
		used[slot] = true
		b, _ := v.readBlock(slot / uint32(v.per))
		if !bytes.Equal(b.key(int(slot%uint32(v.per))), k) || !slices.Equal(v.vector(slot), vec) {
			return fail("slot %d does not hold document %s and its vector", slot, idString(d.ID))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if got := v.ids.KeyN(); got != withVec {
		return fail("%d slot entries for %d documents with a vector", got, withVec)
	}
	free := 0
	fc := v.free.Cursor()
	for k, _ := fc.First(); k != nil; k, _ = fc.Next() {
		slot := binary.BigEndian.Uint32(k)
		if slot >= n || used[slot] {
			return fail("free slot %d is out of range or in use", slot)
		}
		b, _ := v.readBlock(slot / uint32(v.per))
		if len(b.key(int(slot%uint32(v.per)))) != 0 {
			return fail("free slot %d holds a key", slot)
		}
		free++
	}
	if free+withVec != int(n) {
		return fail("%d free and %d used slots of %d", free, withVec, n)
	}
	queued := make([]bool, n)
	for _, slot := range v.queuedSlots() {
		if slot >= n {
			return fail("queued slot %d is out of range", slot)
		}
		queued[slot] = true
	}
	if v.def.Flat {
		if nodes := v.gr.KeyN(); nodes != 0 {
			return fail("a flat field has %d graph nodes", nodes)
		}
		if q := v.queuedSlots(); len(q) != 0 {
			return fail("a flat field has %d queued slots", len(q))
		}
		return nil
	}
	// A slot that holds a document is a node once linked.
	return v.graph().verify(n, func(slot uint32) bool { return used[slot] && !queued[slot] })
}
