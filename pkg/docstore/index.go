package docstore

import (
	"context"
	"fmt"
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
	if err := s.ensureCollection(coll); err != nil {
		return false, err
	}
	created := false
	err := s.changeCatalog(coll, false, func(tx kv.Tx, col *collection) error {
		created = false
		if i := slices.IndexFunc(col.Indexes, func(d IndexDef) bool { return d.Name == def.Name }); i >= 0 {
			if sameIndex(col.Indexes[i], def) {
				return nil
			}
			return &Error{Code: CodeIndexExists, Collection: coll, Index: def.Name,
				Message: fmt.Sprintf("index %q of %q exists with fields %v (unique %v)", def.Name, coll, col.Indexes[i].Fields, col.Indexes[i].Unique)}
		}
		if err := buildIndex(ctx, tx, col, def, progress); err != nil {
			return err
		}
		col.Indexes = append(col.Indexes, def)
		created = true
		return nil
	})
	return created, err
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
	ib, err := tx.CreateBucketIfNotExists(indexBucket(col.Name, def.Name))
	if err != nil {
		return err
	}
	w := &writer{tx: tx, col: &collection{Name: col.Name, Indexes: []IndexDef{def}}, docs: tx.Bucket(docsBucket(col.Name))}
	return scanDocs(ctx, tx, col.Name, progress, func(k []byte, d Doc) error {
		entry := w.entries(k, d.Value)[0]
		if def.Unique {
			if err := checkUnique(ib, col.Name, def, d.ID, k, entry, d.Value); err != nil {
				return err
			}
		}
		return ib.Put(entry, nil)
	})
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
		// Unique fields: keep, add or drop their indexes.
		want := map[string]bool{}
		for _, f := range schema.Fields {
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
					return err
				}
				continue
			}
			kept = append(kept, d)
		}
		col.Indexes = kept
		if col.Indexes == nil {
			col.Indexes = []IndexDef{}
		}
		col.Schema = &schema
		return nil
	})
}

// Schema returns coll's declared schema, or nil when none was declared.
func (s *Store) Schema(ctx context.Context, coll string) (*Schema, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	col, err := s.collectionOf(coll)
	if err != nil {
		return nil, err
	}
	return col.Schema, nil
}
