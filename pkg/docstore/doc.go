// Package docstore is an embedded document store: typed values,
// collections of documents keyed by id, schemas, secondary indexes and
// MongoDB-style filters, persisted in one bbolt file or held in memory with
// the same semantics. It has no MCP code; plugins/store serves it.
package docstore
