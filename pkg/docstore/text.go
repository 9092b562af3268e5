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

// TextQuery is a full-text query ranked by BM25: the `text` source of a
// hybrid search.
type TextQuery struct {
	// Query is the text to match; it is analyzed like the indexed text.
	Query string `json:"query"`
	// Index names the text index; it may be omitted when the collection
	// has exactly one.
	Index string `json:"index,omitempty"`
	// Fields restricts matching to these of the index's fields.
	Fields []string `json:"fields,omitempty"`
}

// CreateTextIndex creates a full-text index on coll and builds it.
func (s *Store) CreateTextIndex(ctx context.Context, coll string, def TextIndexDef, progress Progress) (bool, error) {
	return false, errorf(CodeInvalid, coll, "text indexes are not built yet")
}

// textRanked returns the BM25 top n documents for q among those allowed
// (nil allows all), best first.
func (r *reader) textRanked(q TextQuery, allowed func(idKey []byte) bool, n int) ([]Ranked, error) {
	return nil, errorf(CodeInvalid, "", "text search is not built yet")
}

func (w *writer) deriveText(c docChange) error                        { return nil }
func dropText(tx kv.Tx, col *collection) error                        { return nil }
func verifyText(ctx context.Context, tx kv.Tx, col *collection) error { return nil }
