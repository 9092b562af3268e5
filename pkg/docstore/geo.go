package docstore

import (
	"context"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// GeoIndexDef defines a geo index on a point field.
type GeoIndexDef struct {
	Name  string `json:"name"`
	Field string `json:"field"`
}

func (d GeoIndexDef) clone() GeoIndexDef { return d }

// CreateGeoIndex creates a geo index on coll and builds it.
func (s *Store) CreateGeoIndex(ctx context.Context, coll string, def GeoIndexDef, progress Progress) (bool, error) {
	return false, errorf(CodeInvalid, coll, "geo indexes are not built yet")
}

func (w *writer) deriveGeo(c docChange) error                        { return nil }
func dropGeo(tx kv.Tx, col *collection) error                        { return nil }
func verifyGeo(ctx context.Context, tx kv.Tx, col *collection) error { return nil }
