package docstore

import (
	"context"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// TextIndexDef defines a full-text index.
type TextIndexDef struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
}

func (d TextIndexDef) clone() TextIndexDef {
	d.Fields = append([]string(nil), d.Fields...)
	return d
}

// CreateTextIndex creates a full-text index on coll and builds it.
func (s *Store) CreateTextIndex(ctx context.Context, coll string, def TextIndexDef, progress Progress) (bool, error) {
	return false, errorf(CodeInvalid, coll, "text indexes are not built yet")
}

func (w *writer) deriveText(c docChange) error                        { return nil }
func dropText(tx kv.Tx, col *collection) error                        { return nil }
func verifyText(ctx context.Context, tx kv.Tx, col *collection) error { return nil }
