package docstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Verify checks, in one snapshot, that every document decodes and that
// every index holds exactly one entry per document, equal to the entry
// its values give (and no other entry), and that unique indexes hold no
// duplicates. It returns the first disagreement found.
func (s *Store) Verify(ctx context.Context) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	return s.withCatalog(s.db.View, func(tx kv.Tx) error {
		for _, name := range sortedNames(s.cat) {
			col := s.cat[name]
			docs := tx.Bucket(docsBucket(name))
			if docs == nil {
				return fmt.Errorf("docstore: verify: collection %q has no documents bucket", name)
			}
			r := &reader{tx: tx, col: col, docs: docs}
			w := &writer{tx: tx, col: col, docs: docs}
			want := make([]map[string]bool, len(col.Indexes))
			for i := range want {
				want[i] = map[string]bool{}
			}
			c := docs.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				d, err := r.load(k, v)
				if err != nil {
					return fmt.Errorf("docstore: verify: %w", err)
				}
				if !bytes.Equal(AppendKey(nil, d.ID), k) {
					return fmt.Errorf("docstore: verify: %q: key %x does not encode id %s", name, k, idString(d.ID))
				}
				for i, e := range w.entries(k, d.Value) {
					want[i][string(e)] = true
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			for i, def := range col.Indexes {
				if tx.Bucket(indexBucket(name, def.Name)) == nil {
					return fmt.Errorf("docstore: verify: index %q of %q has no bucket", def.Name, name)
				}
				n := 0
				var prev []byte
				ic := indexEntries(tx, name, def.Name).cursor()
				for k, _ := ic.First(); k != nil; k, _ = ic.Next() {
					if !want[i][string(k)] {
						return fmt.Errorf("docstore: verify: index %q of %q has entry %x that no document gives", def.Name, name, k)
					}
					n++
					if def.Unique {
						vals, null, err := entryValues(def, k)
						if err != nil {
							return err
						}
						if !null && prev != nil && bytes.Equal(prev, vals) {
							return fmt.Errorf("docstore: verify: unique index %q of %q holds a value twice", def.Name, name)
						}
						prev = bytes.Clone(vals)
					}
				}
				if err := ic.Err(); err != nil {
					return fmt.Errorf("docstore: verify: index %q of %q: %w", def.Name, name, err)
				}
				if n != len(want[i]) {
					return fmt.Errorf("docstore: verify: index %q of %q has %d entries for %d documents", def.Name, name, n, len(want[i]))
				}
			}
			if err := verifyDerived(ctx, tx, col); err != nil {
				return err
			}
		}
		return nil
	})
}

// entryValues returns the field-value part of an index entry of def, and
// whether one of the values is null.
func entryValues(def IndexDef, entry []byte) ([]byte, bool, error) {
	rest, null := entry, false
	for range def.Fields {
		v, r, err := DecodeKey(rest)
		if err != nil {
			return nil, false, fmt.Errorf("docstore: index %q: corrupt entry: %w", def.Name, err)
		}
		null = null || v.IsNull()
		rest = r
	}
	return entry[:len(entry)-len(rest)], null, nil
}
