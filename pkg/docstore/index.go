package docstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Progress receives the progress of long work: done of total units
// (documents, lines); total is 0 when unknown.
type Progress func(done, total int64)

// CreateIndex creates the index def on coll (created if absent) and builds
// it over the existing documents, in one transaction; it reports false
// when an identical index exists. A unique index fails with
// unique_violation when two documents already share a value.
func (s *Store) CreateIndex(ctx context.Context, coll string, def IndexDef, progress Progress) (bool, error) {
	if err := checkIndexDef(coll, def); err != nil {
		return false, err
	}
	return scalarIndexes.create(s, coll, def, func(tx kv.Tx, col *collection) error {
		return buildIndex(ctx, tx, col, def, progress)
	})
}

func sameIndex(a, b IndexDef) bool {
	return a.Name == b.Name && a.Unique == b.Unique && slices.Equal(a.Fields, b.Fields)
}

// checkIndexDef validates an index definition.
func checkIndexDef(coll string, def IndexDef) error {
	if err := checkName("index", def.Name); err != nil {
		return err
	}
	if len(def.Fields) == 0 {
		return &Error{Code: CodeInvalid, Collection: coll, Index: def.Name, Message: fmt.Sprintf("index %q needs at least one field", def.Name)}
	}
	for i, f := range def.Fields {
		if f == "" || strings.HasPrefix(f, "$") || strings.HasPrefix(f, ".") || strings.HasSuffix(f, ".") || strings.Contains(f, "..") {
			return &Error{Code: CodeInvalid, Collection: coll, Index: def.Name, Field: f,
				Message: fmt.Sprintf("index %q: field %d %q is not a dotted path of field names", def.Name, i, f)}
		}
		if slices.Contains(def.Fields[:i], f) {
			return &Error{Code: CodeInvalid, Collection: coll, Index: def.Name, Field: f, Message: fmt.Sprintf("index %q names field %q twice", def.Name, f)}
		}
	}
	return nil
}

// buildIndex writes def's entries for every document of col.
func buildIndex(ctx context.Context, tx kv.Tx, col *collection, def IndexDef, progress Progress) error {
	b, err := tx.CreateBucketIfNotExists(indexBucket(col.Name, def.Name))
	if err != nil {
		return err
	}
	ib := &entrySet{b: b}
	w := &writer{tx: tx, col: &collection{Name: col.Name, Indexes: []IndexDef{def}}, docs: tx.Bucket(docsBucket(col.Name))}
	err = scanDocs(ctx, tx, col.Name, progress, func(k []byte, d Doc) error {
		entry := w.entries(k, d.Value)[0]
		if err := checkEntrySize(col.Name, def, d.ID, entry); err != nil {
			return err
		}
		if def.Unique {
			if err := checkUnique(ib, col.Name, def, d.ID, k, entry, d.Value); err != nil {
				return err
			}
		}
		return ib.put(entry)
	})
	if err != nil {
		return err
	}
	return ib.flush()
}

// scanDocs calls fn with every document of coll in id order, reporting
// progress (when not nil) and stopping when ctx ends.
func scanDocs(ctx context.Context, tx kv.Tx, coll string, progress Progress, fn func(k []byte, d Doc) error) error {
	docs := tx.Bucket(docsBucket(coll))
	r := &reader{tx: tx, col: &collection{Name: coll}, docs: docs}
	total, done := int64(0), int64(0)
	if progress != nil {
		total = int64(docs.KeyN())
	}
	c := docs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		d, err := r.load(k, v)
		if err != nil {
			return err
		}
		if err := fn(k, d); err != nil {
			return err
		}
		if done++; done%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if progress != nil {
				progress(done, total)
			}
		}
	}
	if progress != nil {
		progress(done, total)
	}
	return ctx.Err()
}

// SetSchema declares (or replaces) coll's schema (created if absent). The
// existing documents must satisfy it; unique fields get their index.
func (s *Store) SetSchema(ctx context.Context, coll string, schema Schema) error {
	if schema.Fields == nil {
		schema.Fields = []FieldDef{}
	}
	if err := checkName("collection", coll); err != nil {
		return err
	}
	if err := schema.check(coll); err != nil {
		return err
	}
	if err := s.ensureCollection(coll); err != nil {
		return err
	}
	return s.changeCatalog(coll, false, func(tx kv.Tx, col *collection) error {
		docs := tx.Bucket(docsBucket(coll))
		r := &reader{tx: tx, col: col, docs: docs}
		c := docs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			d, err := r.load(k, v)
			if err != nil {
				return err
			}
			if err := schema.validate(coll, d.ID, d.Value); err != nil {
				return err
			}
		}
		if err := syncUniqueIndexes(ctx, tx, coll, col, schema.Fields); err != nil {
			return err
		}
		col.Schema = &schema
		return nil
	})
}

// syncUniqueIndexes keeps, adds or drops the indexes of a schema's unique
// fields so that col has one for each unique field of fields, and no other.
func syncUniqueIndexes(ctx context.Context, tx kv.Tx, coll string, col *collection, fields []FieldDef) error {
	want := map[string]bool{}
	for _, f := range fields {
		if !f.Unique {
			continue
		}
		name := uniqueIndexName(f.Name)
		want[name] = true
		if slices.ContainsFunc(col.Indexes, func(d IndexDef) bool { return d.Name == name }) {
			continue
		}
		def := IndexDef{Name: name, Fields: []string{f.Name}, Unique: true}
		if err := buildIndex(ctx, tx, col, def, nil); err != nil {
			return err
		}
		col.Indexes = append(col.Indexes, def)
	}
	var kept []IndexDef
	for _, d := range col.Indexes {
		if schemaIndex(d.Name) && !want[d.Name] {
			if err := tx.DeleteBucket(indexBucket(coll, d.Name)); err != nil {
				return fmt.Errorf("drop index %s: %w", d.Name, err)
			}
			continue
		}
		kept = append(kept, d)
	}
	col.Indexes = kept
	if col.Indexes == nil {
		col.Indexes = []IndexDef{}
	}
	return nil
}

// DropSchema removes coll's declared schema, and the indexes of its unique
// fields: the collection accepts any document again, and Schema reports
// none. It reports whether a schema was declared; a collection that does
// not exist has none (it is not created).
func (s *Store) DropSchema(ctx context.Context, coll string) (bool, error) {
	if err := s.usable(ctx); err != nil {
		return false, err
	}
	if err := checkName("collection", coll); err != nil {
		return false, err
	}
	dropped := false
	err := s.changeCatalog(coll, false, func(tx kv.Tx, col *collection) error {
		if dropped = col.Schema != nil; !dropped {
			return errNothingToChange
		}
		if err := syncUniqueIndexes(ctx, tx, coll, col, nil); err != nil {
			return err
		}
		col.Schema = nil
		return nil
	})
	if e := (*Error)(nil); errors.As(err, &e) && e.Code == CodeCollectionNotFound { // dropped meanwhile
		return false, nil
	}
	return dropped && err == nil, err
}

// Schema returns coll's declared schema, or nil when none was declared.
func (s *Store) Schema(ctx context.Context, coll string) (*Schema, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	var schema *Schema
	err := s.withCatalog(s.db.View, func(kv.Tx) error {
		col, err := s.collectionOf(coll)
		if err == nil {
			schema = col.Schema
		}
		return err
	})
	return schema, err
}

// Index entries are kept in blocks, not one bbolt key each: a secondary
// index's bucket maps the first entry of each block to the block, the
// block's entries in order, each a uvarint length and its bytes, at most
// indexBlockBytes (a longer block splits in two). bbolt keeps per key a
// 16-byte header on its page and, in a write transaction, a 64-byte node
// entry for every key of every page touched; index entries land all over
// an index, so with a key per entry a transaction of 1,000 documents
// touched nearly every page of every index and materialized all their
// keys. With blocks, a page holds a few keys, and an insert rewrites one
// block of about a kilobyte.
const indexBlockBytes = 1024

// entrySet is the set of entries of one index, in a bucket of blocks.
// Its puts and deletes wait in pending until flush applies them in entry
// order, block by block (a writer flushes at its end, and before it reads
// the set); cursor reads only what is applied.
type entrySet struct {
	b       kv.Bucket
	w       kv.Cursor       // the one flush uses, made by the first
	pending map[string]bool // entry → put (true) or delete (false), not yet applied
}

// maxPending is how many pending changes an entry set holds before it
// applies them: more than a transaction of a few thousand documents
// makes, few enough to bound the memory of an index build.
const maxPending = 1 << 14

// maxWalk is how many blocks flush steps over from one change's block
// towards the next's before it looks the next one up instead (where the
// changes are sparse in a large index).
const maxWalk = 64

// indexEntries returns the entry set of coll's index (its bucket must
// exist).
func indexEntries(tx kv.Tx, coll, index string) entrySet {
	return entrySet{b: tx.Bucket(indexBucket(coll, index))}
}

// prefetch announces that the entries of ranges are about to be read
// whole (kv.PrefetchRanges): on PostgreSQL their blocks come in one round
// trip rather than a few per range.
func (s entrySet) prefetch(ranges []keyRange) {
	if len(ranges) < 2 {
		return // one range: the cursor's pages do as well
	}
	krs := make([]kv.Range, 0, len(ranges))
	for _, r := range ranges {
		krs = append(krs, kv.Range{Lo: r.lo, Hi: r.hi})
	}
	kv.PrefetchRanges(s.b, krs)
}

// findEntryBlock returns, through the cursor c on a bucket of blocks, the key
// and contents of the block that holds e or would: the last block whose
// first entry is at most e, else the first block; nil when there is none.
func findEntryBlock(c kv.Cursor, e []byte) (key, val []byte) {
	k, v := c.Seek(e)
	if k != nil && bytes.Equal(k, e) {
		return k, v
	}
	if pk, pv := c.Prev(); pk != nil {
		return pk, pv
	}
	return c.First()
}

// decodeEntries appends the entries of block v to dst (each a view of v).
func decodeEntries(dst [][]byte, v []byte) ([][]byte, error) {
	for len(v) > 0 {
		n, w := binary.Uvarint(v)
		if w <= 0 || n == 0 || n > uint64(len(v)-w) {
			return dst, fmt.Errorf("docstore: corrupt index block")
		}
		dst = append(dst, v[w:w+int(n)])
		v = v[w+int(n):]
	}
	return dst, nil
}

// find returns the offset in block v of the first entry at least e,
// where e would go, and whether that entry is e.
func find(v, e []byte) (int, bool) {
	for off := 0; off < len(v); {
		n, w := binary.Uvarint(v[off:])
		if w <= 0 || n > uint64(len(v)-off-w) {
			return len(v), false // decodeEntries reports the corruption
		}
		if c := bytes.Compare(v[off+w:off+w+int(n)], e); c >= 0 {
			return off, c == 0
		}
		off += w + int(n)
	}
	return len(v), false
}

// put adds entry e (nothing when present), when the set is flushed.
func (s *entrySet) put(e []byte) error { return s.change(e, true) }

// del removes entry e (nothing when absent), when the set is flushed.
func (s *entrySet) del(e []byte) error { return s.change(e, false) }

// change records a put or a delete of e, the last for e replacing any
// before it (a set's state depends only on the last), and flushes when
// maxPending are pending.
func (s *entrySet) change(e []byte, put bool) error {
	if s.pending == nil {
		s.pending = make(map[string]bool)
	}
	s.pending[string(e)] = put
	if len(s.pending) >= maxPending {
		return s.flush()
	}
	return nil
}

// entryChange is a pending change of flush.
type entryChange struct {
	e   []byte
	put bool
}

// flush applies the pending changes in entry order with one cursor on
// the blocks: from a change's block it steps to the next change's (a few
// blocks on, where a batch's entries spread over an index), so the blocks
// are read in runs (on PostgreSQL, in pages of growing size) where a
// lookup per change read a few at a time (a Seek and a Prev, on
// PostgreSQL about a statement per 8 blocks). The blocks that changed are
// written after the walk.
func (s *entrySet) flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	changes := make([]entryChange, 0, len(s.pending))
	for e, put := range s.pending {
		changes = append(changes, entryChange{e: []byte(e), put: put})
	}
	clear(s.pending)
	slices.SortFunc(changes, func(a, b entryChange) int { return bytes.Compare(a.e, b.e) })
	c := s.cursorForWrites()
	key, val := findEntryBlock(c, changes[0].e)
	if key == nil { // no block yet: the puts make the first
		var nb []byte
		for _, ch := range changes {
			if ch.put {
				nb = appendEntry(nb, ch.e)
			}
		}
		return s.write(nil, nb)
	}
	type rewrite struct{ key, block []byte }
	var out []rewrite
	nk, nv := c.Next()
	for i := 0; ; {
		// The changes of block key: those before the next block.
		j := i + 1
		for j < len(changes) && (nk == nil || bytes.Compare(changes[j].e, nk) < 0) {
			j++
		}
		if nb, changed := applyChanges(val, changes[i:j]); changed {
			out = append(out, rewrite{key: bytes.Clone(key), block: nb})
		}
		if i = j; i == len(changes) {
			break
		}
		// To the block of changes[i]: the last whose key is at most it.
		key, val = nk, nv
		for steps := 0; ; steps++ {
			if nk, nv = c.Next(); nk == nil || bytes.Compare(changes[i].e, nk) < 0 {
				break
			}
			if steps == maxWalk {
				key, val = findEntryBlock(c, changes[i].e)
				nk, nv = c.Next()
				break
			}
			key, val = nk, nv
		}
	}
	for _, r := range out {
		if err := s.write(r.key, r.block); err != nil {
			return err
		}
	}
	return nil
}

// applyChanges returns block v with changes (in entry order) applied, a
// new buffer, and whether anything changed.
func applyChanges(v []byte, changes []entryChange) ([]byte, bool) {
	nb := make([]byte, 0, len(v)+len(changes)*(len(changes[0].e)+1))
	changed := false
	off := 0
	for _, ch := range changes {
		at, found := find(v[off:], ch.e)
		nb = append(nb, v[off:off+at]...)
		off += at
		switch {
		case ch.put && !found:
			nb = appendEntry(nb, ch.e)
			changed = true
		case !ch.put && found:
			off += uvarintLen(len(ch.e)) + len(ch.e)
			changed = true
		}
	}
	return append(nb, v[off:]...), changed
}

// appendEntry appends entry e, encoded as in a block, to b.
func appendEntry(b, e []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(e))), e...) }

// write replaces the block under key (nil: none) with block, a new
// buffer of encoded entries (none: the block is deleted), split into
// blocks of at most indexBlockBytes when longer, each under its first
// entry.
func (s *entrySet) write(key, block []byte) error {
	first := func(b []byte) []byte {
		n, w := binary.Uvarint(b)
		return b[w : w+int(n)]
	}
	if key != nil && (len(block) == 0 || !bytes.Equal(key, first(block))) {
		if err := s.b.Delete(key); err != nil {
			return err
		}
	}
	if len(block) <= indexBlockBytes {
		if len(block) == 0 {
			return nil
		}
		return s.b.Put(first(block), block)
	}
	ents, err := decodeEntries(nil, block)
	if err != nil {
		return err
	}
	size := len(block)
	for len(ents) > 0 {
		// An equal share of what remains for each of the blocks it needs;
		// an entry longer than a block has one of its own.
		share := size / ((size + indexBlockBytes - 1) / indexBlockBytes)
		buf := make([]byte, 0, min(size, indexBlockBytes))
		n := 0
		for ; n < len(ents); n++ {
			esize := uvarintLen(len(ents[n])) + len(ents[n])
			if n > 0 && (len(buf) >= share || len(buf)+esize > indexBlockBytes) {
				break
			}
			buf = appendEntry(buf, ents[n])
		}
		if err := s.b.Put(first(buf), buf); err != nil {
			return err
		}
		ents, size = ents[n:], size-len(buf)
	}
	return nil
}

// uvarintLen is the length of n's uvarint.
func uvarintLen(n int) int { return (bits.Len64(uint64(n)|1) + 6) / 7 }

// cursorForWrites returns the cursor flush finds blocks with: one for
// all, since a kv.Cursor stays valid through writes (and bbolt
// allocates a cursor's path anew for every new cursor).
func (s *entrySet) cursorForWrites() kv.Cursor {
	if s.w == nil {
		s.w = s.b.Cursor()
	}
	return s.w
}

// cursor returns a cursor over the entries, in order: those applied
// (flush the set first when it has pending changes).
func (s entrySet) cursor() *entryCursor { return &entryCursor{c: s.b.Cursor()} }

// entryCursor walks an entry set in order. Its moves return an entry and
// a nil value, or nil at the ends, like a kv.Cursor's (the entries stay
// valid until the transaction ends); its set must not change while it
// walks.
type entryCursor struct {
	c    kv.Cursor
	hi   []byte   // when not nil, the entries end before it (see load)
	ents [][]byte // the current block's
	i    int
	err  error // a corrupt block
}

// load makes block v current at position i (from the end when i < 0).
func (c *entryCursor) load(k, v []byte, i int) []byte {
	if k == nil {
		return nil
	}
	if c.ents == nil {
		c.ents = make([][]byte, 0, len(v)/8+1) // room for a block of short entries (an int and an id: 8 bytes)
	}
	if c.ents, c.err = decodeEntries(c.ents[:0], v); c.err != nil || len(c.ents) == 0 {
		c.err = cmp.Or(c.err, fmt.Errorf("docstore: empty index block"))
		return nil
	}
	if c.hi != nil && bytes.Compare(c.ents[len(c.ents)-1], c.hi) >= 0 {
		// The walk ends in this block: its entries from hi on are cut, so
		// that the entries before it need no comparison each.
		n, _ := slices.BinarySearchFunc(c.ents, c.hi, bytes.Compare)
		if c.ents = c.ents[:n]; n == 0 {
			return nil
		}
	}
	if c.i = i; i < 0 {
		c.i = len(c.ents) + i
	}
	return c.ents[c.i]
}

func (c *entryCursor) First() ([]byte, []byte) { k, v := c.c.First(); return c.load(k, v, 0), nil }
func (c *entryCursor) Last() ([]byte, []byte)  { k, v := c.c.Last(); return c.load(k, v, -1), nil }

func (c *entryCursor) Seek(e []byte) ([]byte, []byte) {
	k, v := findEntryBlock(c.c, e)
	if c.load(k, v, 0) == nil {
		return nil, nil
	}
	i, _ := slices.BinarySearchFunc(c.ents, e, bytes.Compare)
	if i < len(c.ents) {
		c.i = i
		return c.ents[i], nil
	}
	c.i = len(c.ents) - 1 // every entry of the block is before e
	return c.Next()
}

// Err returns the error that ended the walk early: a corrupt block.
func (c *entryCursor) Err() error { return c.err }

func (c *entryCursor) Next() ([]byte, []byte) {
	if c.i+1 < len(c.ents) {
		c.i++
		return c.ents[c.i], nil
	}
	k, v := c.c.Next()
	return c.load(k, v, 0), nil
}

func (c *entryCursor) Prev() ([]byte, []byte) {
	if c.i > 0 && c.i <= len(c.ents) {
		c.i--
		return c.ents[c.i], nil
	}
	k, v := c.c.Prev()
	return c.load(k, v, -1), nil
}
