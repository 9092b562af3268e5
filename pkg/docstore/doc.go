// Package docstore is an embedded document store: typed values,
// collections of documents keyed by id, schemas, secondary indexes and
// MongoDB-style filters; full-text indexes (BM25, phrases), a vector field
// per collection (exact and approximate search), hybrid search fusing
// them; geo indexes, graph edges between documents, traversal and joins.
// Everything is persisted in one bbolt file, or held in memory with the
// same semantics, and kept consistent by every write. It has no MCP code;
// plugins/store serves it.
package docstore
