package docstore

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Doc is a stored document: its id, its revision (store-wide and
// increasing: every write of a document gives it a larger one) and its
// value, a map.
type Doc struct {
	ID       Value
	Revision uint64
	Value    Value
}

// writer is one document write transaction on one collection.
type writer struct {
	tx   kv.Tx
	col  *collection
	docs kv.Bucket
	sets []entrySet    // the collection's indexes, as index opens them
	d    derivedWrites // derived-structure work deferred to finish (derived.go)
}

// queuedLinks reports whether w's writes queued vectors for the linker.
func (w *writer) queuedLinks() bool { return w.d.vec != nil && w.d.vec.queued }

// update runs fn in a write transaction on coll (created if absent);
// concurrent calls are batched into one transaction (fn may run more than
// once, so it only returns what it computes).
func (s *Store) update(ctx context.Context, coll string, fn func(w *writer) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if err := s.ensureCollection(coll); err != nil {
		return err
	}
	queued := false
	err := s.withCatalog(s.db.Batch, func(tx kv.Tx) error {
		queued = false // the function may run again
		col, err := s.collectionOf(coll)
		if err != nil {
			return err // dropped meanwhile
		}
		w := &writer{tx: tx, col: col, docs: tx.Bucket(docsBucket(coll))}
		if err := fn(w); err != nil {
			return err
		}
		if err := w.finish(); err != nil {
			return err
		}
		queued = w.queuedLinks()
		return nil
	})
	if err == nil && queued {
		s.linker.want(coll)
	}
	return err
}

// get returns the document id, if any.
func (w *writer) get(id Value) (Doc, bool, error) {
	return getDoc(w.docs, w.col.Name, id)
}

func getDoc(docs kv.Bucket, coll string, id Value) (Doc, bool, error) {
	b := docs.Get(AppendKey(nil, id))
	if b == nil {
		return Doc{}, false, nil
	}
	rev, v, err := decodeRecord(coll, id, b)
	return Doc{ID: id, Revision: rev, Value: v}, err == nil, err
}

// put writes doc under id, replacing old (when exists), keeping every
// index, and returns the stored document.
func (w *writer) put(id, doc Value, old Doc, exists bool) (Doc, error) {
	coll := w.col.Name
	if err := checkDoc(coll, id, doc); err != nil {
		return Doc{}, err
	}
	if err := w.col.Schema.validate(coll, id, doc); err != nil {
		return Doc{}, err
	}
	idKey := AppendKey(nil, id)
	var oldEntries [][]byte
	if exists {
		oldEntries = w.entries(idKey, old.Value)
	}
	newEntries := w.entries(idKey, doc)
	for i, def := range w.col.Indexes {
		if oldEntries != nil && bytes.Equal(oldEntries[i], newEntries[i]) {
			continue
		}
		if err := checkEntrySize(coll, def, id, newEntries[i]); err != nil {
			return Doc{}, err
		}
		ib := w.index(i)
		if oldEntries != nil {
			if err := ib.del(oldEntries[i]); err != nil {
				return Doc{}, err
			}
		}
		if def.Unique {
			if err := checkUnique(ib, coll, def, id, idKey, newEntries[i], doc); err != nil {
				return Doc{}, err
			}
		}
		if err := ib.put(newEntries[i]); err != nil {
			return Doc{}, err
		}
	}
	if err := w.derive(docChange{ID: id, IDKey: idKey, Old: old.Value, HadOld: exists, New: doc, HasNew: true}); err != nil {
		return Doc{}, err
	}
	rev, err := w.tx.Bucket([]byte(metaBucket)).NextSequence()
	if err != nil {
		return Doc{}, err
	}
	if err := w.docs.Put(idKey, record(rev, doc)); err != nil {
		return Doc{}, err
	}
	return Doc{ID: id, Revision: rev, Value: doc}, nil
}

// index returns the entry set of the collection's index i, one for the
// writer (its changes pending until finish or a read of the set).
func (w *writer) index(i int) *entrySet {
	if w.sets == nil {
		w.sets = make([]entrySet, len(w.col.Indexes))
	}
	if w.sets[i].b == nil {
		w.sets[i] = indexEntries(w.tx, w.col.Name, w.col.Indexes[i].Name)
	}
	return &w.sets[i]
}

// entries returns doc's entry in each index of the collection.
func (w *writer) entries(idKey []byte, doc Value) [][]byte {
	out := make([][]byte, len(w.col.Indexes))
	for i, def := range w.col.Indexes {
		out[i] = append(indexKey(nil, def, doc), idKey...)
	}
	return out
}

// MaxIndexEntry is the most bytes a document's values take in one
// secondary index (their key encoding and the document's id key): a
// PostgreSQL index entry holds at most about a third of a page, and the
// engine keeps one limit on every backend, so that a store moves between
// them. A write whose indexed values are longer is refused (invalid); long
// text is searched through a text index.
const MaxIndexEntry = 2048

// checkEntrySize refuses entry, document id's entry in index def, when it
// is longer than MaxIndexEntry.
func checkEntrySize(coll string, def IndexDef, id Value, entry []byte) error {
	if len(entry) <= MaxIndexEntry {
		return nil
	}
	return &Error{Code: CodeInvalid, Collection: coll, ID: &id, Field: def.Fields[0],
		Message: fmt.Sprintf("document %s: its values of index %q (%s) take %d bytes; an index holds at most %d (search long text with a text index)",
			idString(id), def.Name, strings.Join(def.Fields, ", "), len(entry), MaxIndexEntry)}
}

// indexKey appends the key of doc's values for def's fields (a missing
// field is null).
func indexKey(dst []byte, def IndexDef, doc Value) []byte {
	for _, f := range def.Fields {
		v, _ := doc.Path(f)
		dst = AppendKey(dst, v)
	}
	return dst
}

// checkUnique fails when another document holds entry's values in the
// unique index ib (whose pending changes it applies first). Documents
// with a null (or missing) value in any of the index's fields are not
// compared.
func checkUnique(ib *entrySet, coll string, def IndexDef, id Value, idKey, entry []byte, doc Value) error {
	for _, f := range def.Fields {
		if v, _ := doc.Path(f); v.IsNull() {
			return nil
		}
	}
	if err := ib.flush(); err != nil {
		return err
	}
	prefix := entry[:len(entry)-len(idKey)]
	c := ib.cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if !bytes.Equal(k[len(prefix):], idKey) {
			other, _, _ := DecodeKey(k[len(prefix):])
			return &Error{Code: CodeUniqueViolation, Collection: coll, ID: &id, Index: def.Name, Field: def.Fields[0],
				Message: fmt.Sprintf("document %s in %q: index %q is unique and document %s already has the same %s",
					idString(id), coll, def.Name, idString(other), fieldList(def.Fields))}
		}
	}
	return c.Err()
}

func fieldList(fields []string) string {
	if len(fields) == 1 {
		return "value of " + fields[0]
	}
	return fmt.Sprintf("values of %v", fields)
}

// remove deletes the document old and its index entries.
func (w *writer) remove(old Doc) error {
	idKey := AppendKey(nil, old.ID)
	for i, e := range w.entries(idKey, old.Value) {
		if err := w.index(i).del(e); err != nil {
			return err
		}
	}
	if err := w.derive(docChange{ID: old.ID, IDKey: idKey, Old: old.Value, HadOld: true}); err != nil {
		return err
	}
	return w.docs.Delete(idKey)
}

// Put stores doc (a map) under id (an int or a text), inserting or
// replacing it, and returns it with its new revision.
func (s *Store) Put(ctx context.Context, coll string, id, doc Value) (Doc, error) {
	if err := checkID(coll, id); err != nil {
		return Doc{}, err
	}
	if err := checkDoc(coll, id, doc); err != nil {
		return Doc{}, err // before the collection is created
	}
	var out Doc
	err := s.update(ctx, coll, func(w *writer) error {
		var err error
		out, err = w.store(id, doc)
		return err
	})
	return out, err
}

// store is Put's write in w: doc under id, inserted or replacing.
func (w *writer) store(id, doc Value) (Doc, error) {
	old, exists, err := w.get(id)
	if err != nil {
		return Doc{}, err
	}
	return w.put(id, doc, old, exists)
}

// PutMany stores many documents (ID and Value set) in one transaction:
// all of them or, on the first error, none. It returns them with their
// revisions, in order.
func (s *Store) PutMany(ctx context.Context, coll string, docs []Doc) ([]Doc, error) {
	for _, d := range docs {
		if err := checkID(coll, d.ID); err != nil {
			return nil, err
		}
		if err := checkDoc(coll, d.ID, d.Value); err != nil {
			return nil, err
		}
	}
	out := make([]Doc, len(docs))
	err := s.update(ctx, coll, func(w *writer) error {
		for i, d := range docs {
			var err error
			if out[i], err = w.store(d.ID, d.Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Insert stores doc under a new int id, larger than every id Insert gave
// before in coll (ids are never reused, even after a delete; an id taken
// by Put is skipped).
func (s *Store) Insert(ctx context.Context, coll string, doc Value) (Doc, error) {
	if err := checkDoc(coll, Null(), doc); err != nil {
		return Doc{}, err
	}
	var out Doc
	err := s.update(ctx, coll, func(w *writer) error {
		var err error
		out, err = w.insert(doc)
		return err
	})
	return out, err
}

// insert is Insert's write in w: doc under the collection's next id.
func (w *writer) insert(doc Value) (Doc, error) {
	for {
		n, err := w.docs.NextSequence()
		if err != nil {
			return Doc{}, err
		}
		id := Int(int64(n))
		if w.docs.Get(AppendKey(nil, id)) != nil {
			continue
		}
		return w.put(id, doc, Doc{}, false)
	}
}

// Get returns the document id of coll.
func (s *Store) Get(ctx context.Context, coll string, id Value) (Doc, error) {
	if err := checkID(coll, id); err != nil {
		return Doc{}, err
	}
	var out Doc
	err := s.view(ctx, coll, func(r *reader) error {
		d, ok, err := getDoc(r.docs, coll, id)
		if err != nil {
			return err
		}
		if !ok {
			return &Error{Code: CodeNotFound, Collection: coll, ID: &id, Message: fmt.Sprintf("no document %s in %q", idString(id), coll)}
		}
		out = d
		return nil
	})
	return out, err
}

// Patch merges patch (a map) into the document id, as JSON Merge Patch
// (RFC 7386) does: a field set to null is deleted, a map merges into a map
// field recursively, any other value (arrays, vectors, bytes included)
// replaces the field. The document must exist.
func (s *Store) Patch(ctx context.Context, coll string, id, patch Value) (Doc, error) {
	if err := checkPatch(coll, id, patch); err != nil {
		return Doc{}, err
	}
	if !s.exists(coll) {
		return Doc{}, noPatchTarget(coll, id)
	}
	var out Doc
	err := s.update(ctx, coll, func(w *writer) error {
		var err error
		out, err = w.patch(id, patch)
		return err
	})
	return out, err
}

// checkPatch validates Patch's arguments.
func checkPatch(coll string, id, patch Value) error {
	if err := checkID(coll, id); err != nil {
		return err
	}
	if patch.Kind() != KindMap {
		return &Error{Code: CodeInvalid, Collection: coll, ID: &id, Message: fmt.Sprintf("a patch is a map, not %s", patch.Kind())}
	}
	return nil
}

// noPatchTarget is Patch's error for a missing document.
func noPatchTarget(coll string, id Value) error {
	return &Error{Code: CodeNotFound, Collection: coll, ID: &id, Message: fmt.Sprintf("no document %s in %q to patch", idString(id), coll)}
}

// patch is Patch's write in w: patch merged into the document id.
func (w *writer) patch(id, patch Value) (Doc, error) {
	old, exists, err := w.get(id)
	if err != nil {
		return Doc{}, err
	}
	if !exists {
		return Doc{}, noPatchTarget(w.col.Name, id)
	}
	return w.put(id, mergePatch(old.Value, patch), old, true)
}

// mergePatch applies patch to target as RFC 7386 says.
func mergePatch(target, patch Value) Value {
	fields, ok := patch.Fields()
	if !ok {
		return patch
	}
	if target.Kind() != KindMap {
		target = Map()
	}
	for _, f := range fields {
		if f.Value.IsNull() {
			target = target.Without(f.Key)
			continue
		}
		cur, _ := target.Get(f.Key)
		target = target.With(f.Key, mergePatch(cur, f.Value))
	}
	return target
}

// Expect is compare_and_set's condition on the current document: its
// revision, or its value. Exactly one is set.
type Expect struct {
	// Revision is the expected revision; 0 expects no document.
	Revision *uint64
	// Value is the expected value (Equal); Null expects no document.
	Value *Value
}

// CompareAndSet stores doc under id if the current document meets expect,
// and fails with a revision_mismatch *Error carrying the current revision
// (and whether the document exists) otherwise.
func (s *Store) CompareAndSet(ctx context.Context, coll string, id Value, expect Expect, doc Value) (Doc, error) {
	if err := checkCAS(coll, id, expect, doc); err != nil {
		return Doc{}, err
	}
	if !expect.absent() && !s.exists(coll) {
		return Doc{}, mismatch(coll, id, Doc{}, false)
	}
	var out Doc
	err := s.update(ctx, coll, func(w *writer) error {
		var err error
		out, err = w.compareAndSet(id, expect, doc)
		return err
	})
	return out, err
}

// checkCAS validates CompareAndSet's arguments.
func checkCAS(coll string, id Value, expect Expect, doc Value) error {
	if err := checkID(coll, id); err != nil {
		return err
	}
	if (expect.Revision == nil) == (expect.Value == nil) {
		return &Error{Code: CodeInvalid, Collection: coll, ID: &id, Message: "compare_and_set expects either a revision or a value, not both nor neither"}
	}
	return checkDoc(coll, id, doc)
}

// absent reports whether e expects no document.
func (e Expect) absent() bool {
	return (e.Revision != nil && *e.Revision == 0) || (e.Value != nil && e.Value.IsNull())
}

// mismatch is CompareAndSet's error when the document id (old, when
// exists) is not as expected.
func mismatch(coll string, id Value, old Doc, exists bool) error {
	state := "does not exist"
	if exists {
		state = fmt.Sprintf("is at revision %d", old.Revision)
	}
	return &Error{Code: CodeRevisionMismatch, Collection: coll, ID: &id, Revision: old.Revision, Exists: exists,
		Message: fmt.Sprintf("document %s in %q %s, which is not what compare_and_set expected; nothing was written", idString(id), coll, state)}
}

// compareAndSet is CompareAndSet's write in w.
func (w *writer) compareAndSet(id Value, expect Expect, doc Value) (Doc, error) {
	old, exists, err := w.get(id)
	if err != nil {
		return Doc{}, err
	}
	var ok bool
	if expect.Revision != nil {
		ok = (!exists && *expect.Revision == 0) || (exists && old.Revision == *expect.Revision)
	} else {
		ok = (!exists && expect.Value.IsNull()) || (exists && Equal(old.Value, *expect.Value))
	}
	if !ok {
		return Doc{}, mismatch(w.col.Name, id, old, exists)
	}
	return w.put(id, doc, old, exists)
}

// Delete deletes the document id and reports whether it existed.
func (s *Store) Delete(ctx context.Context, coll string, id Value) (bool, error) {
	if err := checkID(coll, id); err != nil {
		return false, err
	}
	if err := s.usable(ctx); err != nil {
		return false, err
	}
	if !s.exists(coll) {
		return false, nil
	}
	var deleted bool
	err := s.update(ctx, coll, func(w *writer) error {
		var err error
		deleted, err = w.delete(id)
		return err
	})
	return deleted, err
}

// delete is Delete's write in w: it reports whether id existed.
func (w *writer) delete(id Value) (bool, error) {
	old, exists, err := w.get(id)
	if err != nil || !exists {
		return false, err
	}
	return true, w.remove(old)
}
