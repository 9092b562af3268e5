package docstore

import (
	"context"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// VectorDef defines a collection's vector field.
type VectorDef struct {
	Field     string `json:"field"`
	Dimension int    `json:"dimension"`
	Metric    string `json:"metric"`
}

// SetVector declares coll's vector field and builds its structures.
func (s *Store) SetVector(ctx context.Context, coll string, def VectorDef, progress Progress) (bool, error) {
	return false, errorf(CodeInvalid, coll, "vector fields are not built yet")
}

func (w *writer) deriveVector(c docChange) error                        { return nil }
func dropVector(tx kv.Tx, col *collection) error                        { return nil }
func verifyVector(ctx context.Context, tx kv.Tx, col *collection) error { return nil }
