package docstore

import (
	"fmt"
	"slices"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// indexKind is what the kinds of index a collection keeps (scalar and
// compound, text, geo) share: each is a list of named definitions in the
// collection's catalog entry, each definition with a bucket of its own.
// Creating one and dropping a collection's go through it, so that the kinds
// refuse a redefinition and drop their buckets the same way.
type indexKind[D any] struct {
	what   string                 // "index", "text index", "geo index": for messages
	defs   func(*collection) *[]D // the collection's definitions of this kind
	name   func(D) string
	same   func(a, b D) bool
	shape  func(D) string // an existing definition, for index_exists: "with fields [a] (unique false)"
	bucket func(coll, index string) []byte
}

var (
	scalarIndexes = indexKind[IndexDef]{
		what: "index", defs: func(c *collection) *[]IndexDef { return &c.Indexes },
		name: func(d IndexDef) string { return d.Name }, same: sameIndex,
		shape:  func(d IndexDef) string { return fmt.Sprintf("with fields %v (unique %v)", d.Fields, d.Unique) },
		bucket: indexBucket,
	}
	textIndexes = indexKind[TextIndexDef]{
		what: "text index", defs: func(c *collection) *[]TextIndexDef { return &c.TextIndexes },
		name: func(d TextIndexDef) string { return d.Name }, same: sameTextIndex,
		shape: func(d TextIndexDef) string {
			return fmt.Sprintf("with another definition (fields %v, language %q, stem %v, stop words %v)", d.Fields, d.Language, d.Stem, d.StopWords)
		},
		bucket: textBucket,
	}
	geoIndexes = indexKind[GeoIndexDef]{
		what: "geo index", defs: func(c *collection) *[]GeoIndexDef { return &c.GeoIndexes },
		name: func(d GeoIndexDef) string { return d.Name }, same: func(a, b GeoIndexDef) bool { return a == b },
		shape:  func(d GeoIndexDef) string { return fmt.Sprintf("on field %q", d.Field) },
		bucket: geoBucket,
	}
)

// create adds def to coll (created if absent) and builds it over the
// existing documents with build, in one transaction. It reports false when
// an identical definition exists, and fails with index_exists when one of
// that name differs.
func (k indexKind[D]) create(s *Store, coll string, def D, build func(tx kv.Tx, col *collection) error) (bool, error) {
	if err := s.ensureCollection(coll); err != nil {
		return false, err
	}
	created := false
	err := s.changeCatalog(coll, false, func(tx kv.Tx, col *collection) error {
		created = false
		defs := k.defs(col)
		name := k.name(def)
		if i := slices.IndexFunc(*defs, func(d D) bool { return k.name(d) == name }); i >= 0 {
			if k.same((*defs)[i], def) {
				return nil
			}
			return &Error{Code: CodeIndexExists, Collection: coll, Index: name,
				Message: fmt.Sprintf("%s %q of %q exists %s", k.what, name, coll, k.shape((*defs)[i]))}
		}
		if err := build(tx, col); err != nil {
			return err
		}
		*defs = append(*defs, def)
		created = true
		return nil
	})
	return created, err
}

// drop deletes the buckets of col's indexes of this kind, as col is dropped.
func (k indexKind[D]) drop(tx kv.Tx, col *collection) error {
	for _, def := range *k.defs(col) {
		if err := tx.DeleteBucket(k.bucket(col.Name, k.name(def))); err != nil {
			return fmt.Errorf("docstore: drop %s %q of %q: %w", k.what, k.name(def), col.Name, err)
		}
	}
	return nil
}
