package docstore

import (
	"context"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

func (w *writer) deriveEdges(c docChange) error                        { return nil }
func dropEdges(tx kv.Tx, col *collection) error                        { return nil }
func verifyEdges(ctx context.Context, tx kv.Tx, col *collection) error { return nil }
