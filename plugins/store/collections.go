package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildTimeout is the own timeout of the tools that may read the whole
// store (index builds, backup, dump, load): the longest the core allows.
const buildTimeout = mcpcore.MaxToolTimeout

func (p *Plugin) addCollectionTools() {
	addTool(p, &mcp.Tool{Name: "list_collections", Description: "List the collections: for each, {name, count, indexes: [{name, fields, unique}], schema, text_indexes?, vector?, geo_indexes?, vectors_queued?, link_error?} (schema null when none is declared; a unique schema field has an index named \"$unique:<field>\"; vectors_queued counts vectors written and not yet linked into the HNSW graph: searches find them all the same, measured exactly; link_error says why linking them last failed, if it did).",
		Annotations: readOnly()}, p.listCollections)
	indexNote := " Builds it over the existing documents in one transaction (sending progress notifications when the request has a progress token). Returns {created, index: {name, fields, unique}}: created is false when an identical index exists; an index of that name with another definition fails with index_exists, and a unique index over documents that already share a value fails with unique_violation. Queries (page, count, delete_where) use the index that constrains the most fields; page can order by an index's first field."
	addTool(p, &mcp.Tool{Name: "create_index", Description: "Create a secondary index on one or more fields (a compound index serves any leading prefix of its fields)." + indexNote +
		` With type "vector" it declares instead the collection's vector field (one per collection), which search ranks by: {"collection": "notes", "type": "vector", "fields": ["embedding"], "dimension": 384, "metric": "cosine"}; documents then hold {"$vector": [...]} of that dimension in the field (or none: null or missing), any other value fails with schema_violation; the existing documents are indexed (exactly at once; into an HNSW graph for approximate search unless flat, by the store's linker in the background, searches meanwhile measuring the vectors not yet linked exactly) and returns {created, vector: {field, dimension, metric, flat?}}.`,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}}, p.createIndex, mcpcore.ToolOptions{Timeout: buildTimeout})
	addTool(p, &mcp.Tool{Name: "create_scalar_index", Description: "Create a secondary index on one field, named after the field unless name is given." + indexNote,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}}, p.createScalarIndex, mcpcore.ToolOptions{Timeout: buildTimeout})
	addTool(p, &mcp.Tool{Name: "create_compound_index", Description: "Create a secondary index on two or more fields, named after them (\"city+age\") unless name is given; it serves queries on any leading prefix of its fields." + indexNote,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}}, p.createCompoundIndex, mcpcore.ToolOptions{Timeout: buildTimeout})
	addTool(p, &mcp.Tool{Name: "set_schema", Description: "Declare (or replace) a collection's schema: its top-level fields with a type, required (present and not null) and unique (distinct across documents; null and missing values are not compared). The existing documents must satisfy it (else schema_violation or unique_violation, and nothing changes); later writes are checked against it. fields: [] declares an empty schema, which accepts any document; fields: null removes the declaration (and the indexes of its unique fields), after which get_schema returns {fields: null}. Returns {collection, fields}.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}}, p.setSchema)
	addTool(p, &mcp.Tool{Name: "get_schema", Description: "Get a collection's declared schema: {fields: [...]}, {fields: null} when none is declared ([] is a declared empty schema). Fails with collection_not_found when the collection does not exist.",
		Annotations: readOnly()}, p.getSchema)
}

// collectionsReply is list_collections' result.
type collectionsReply struct {
	Collections []docstore.CollectionInfo `json:"collections"`
}

func (p *Plugin) listCollections(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (any, error) {
	cols, err := p.db.Collections(ctx)
	if err != nil {
		return nil, engineFailure(err, placeAt(""))
	}
	if cols == nil {
		cols = []docstore.CollectionInfo{}
	}
	return collectionsReply{Collections: cols}, nil
}

// indexReply is the result of the index tools.
type indexReply struct {
	Created bool              `json:"created"`
	Index   docstore.IndexDef `json:"index"`
}

type createIndexArgs struct {
	Collection collectionName  `json:"collection"`
	Name       indexName       `json:"name,omitempty" jsonschema:"the index's name: 1 to 256 bytes without NUL (required for a secondary index; a vector index has none)"`
	Fields     indexFields     `json:"fields" jsonschema:"the indexed fields, dotted paths (\"address.city\"), in the index's order; for a vector index, the one field holding the vectors"`
	Unique     bool            `json:"unique,omitempty" jsonschema:"refuse two documents with the same values in these fields (documents with a null or missing one are not compared)"`
	Type       indexType       `json:"type,omitempty" jsonschema:"\"secondary\" (the default) or \"vector\" (the collection's vector field, for search)"`
	Dimension  vectorDimension `json:"dimension,omitempty" jsonschema:"for type vector: the vectors' dimension (1 to 4096)"`
	Metric     vectorMetric    `json:"metric,omitempty" jsonschema:"for type vector: cosine (the default), dot or l2"`
	Flat       bool            `json:"flat,omitempty" jsonschema:"for type vector: keep no HNSW graph (exact search only, cheaper writes; approximate searches are refused)"`
}

func (p *Plugin) createIndex(ctx context.Context, req *mcp.CallToolRequest, in createIndexArgs) (any, error) {
	if in.Type == "vector" {
		return p.createVectorIndex(ctx, req, in)
	}
	switch {
	case in.Name == "":
		return nil, &mcpcore.ParamError{Path: "/name", Reason: "a secondary index needs a name"}
	case in.Dimension != 0:
		return nil, &mcpcore.ParamError{Path: "/dimension", Reason: "dimension is for a vector index (type \"vector\")"}
	case in.Metric != "":
		return nil, &mcpcore.ParamError{Path: "/metric", Reason: "metric is for a vector index (type \"vector\")"}
	case in.Flat:
		return nil, &mcpcore.ParamError{Path: "/flat", Reason: "flat is for a vector index (type \"vector\")"}
	}
	return p.buildIndex(ctx, req, string(in.Collection), string(in.Name), in.Fields, in.Unique, "/fields")
}

type scalarIndexArgs struct {
	Collection collectionName `json:"collection"`
	Field      fieldPath      `json:"field" jsonschema:"the indexed field, a dotted path (\"address.city\")"`
	Name       indexName      `json:"name,omitempty" jsonschema:"the index's name: 1 to 256 bytes without NUL (default: the field)"`
	Unique     bool           `json:"unique,omitempty" jsonschema:"refuse two documents with the same value in this field (documents where it is null or missing are not compared)"`
}

func (p *Plugin) createScalarIndex(ctx context.Context, req *mcp.CallToolRequest, in scalarIndexArgs) (any, error) {
	name := string(in.Name)
	if name == "" {
		name = string(in.Field)
	}
	return p.buildIndex(ctx, req, string(in.Collection), name, []fieldPath{in.Field}, in.Unique, "/field")
}

type compoundIndexArgs struct {
	Collection collectionName `json:"collection"`
	Fields     compoundFields `json:"fields" jsonschema:"the indexed fields (at least two), dotted paths, in the index's order"`
	Name       indexName      `json:"name,omitempty" jsonschema:"the index's name: 1 to 256 bytes without NUL (default: the fields joined by \"+\")"`
	Unique     bool           `json:"unique,omitempty" jsonschema:"refuse two documents with the same values in these fields (documents with a null or missing one are not compared)"`
}

func (p *Plugin) createCompoundIndex(ctx context.Context, req *mcp.CallToolRequest, in compoundIndexArgs) (any, error) {
	name := string(in.Name)
	if name == "" {
		name = strings.Join(paths(in.Fields), "+")
	}
	return p.buildIndex(ctx, req, string(in.Collection), name, in.Fields, in.Unique, "/fields")
}

// lastIndex returns the index of the last s in list, or -1.
func lastIndex(list []string, s string) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == s {
			return i
		}
	}
	return -1
}

func paths(fields []fieldPath) []string {
	if fields == nil {
		return nil // not given: the engine's default (select: the whole document)
	}
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = string(f)
	}
	return out
}

// buildIndex creates an index for the index tools. fieldsAt is the
// argument of its fields: an array ("/fields") or one field ("/field").
func (p *Plugin) buildIndex(ctx context.Context, req *mcp.CallToolRequest, coll, name string, fields []fieldPath, unique bool, fieldsAt string) (any, error) {
	def := docstore.IndexDef{Name: name, Fields: paths(fields), Unique: unique}
	created, err := p.db.CreateIndex(ctx, coll, def, progressOf(ctx, p.host, req, "documents indexed"))
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			i := lastIndex(def.Fields, e.Field) // a field named twice is at fault where repeated
			switch {
			case isNameError(e):
				return "" // the collection's or the index's name: the message says which
			case i >= 0 && fieldsAt == "/fields":
				return fmt.Sprintf("/fields/%d", i)
			}
			return fieldsAt
		})
	}
	return indexReply{Created: created, Index: def}, nil
}

// fieldDefArg is one field of set_schema.
type fieldDefArg struct {
	Name     fieldPath `json:"name" jsonschema:"a top-level field name (no '.', not starting with '$')"`
	Type     fieldType `json:"type" jsonschema:"the field's type: any, bool, int, float, text, bytes, vector, array or map (int and float are distinct)"`
	Required bool      `json:"required,omitempty" jsonschema:"the field must be present and not null"`
	Unique   bool      `json:"unique,omitempty" jsonschema:"no two documents may hold the same value in the field (null and missing values are not compared)"`
}

type setSchemaArgs struct {
	Collection collectionName `json:"collection"`
	Fields     []fieldDefArg  `json:"fields" jsonschema:"the declared fields: [] declares an empty schema (any document, but declared); null removes the declaration, as get_schema shows a collection without one"`
}

// schemaReply is the result of set_schema and get_schema.
type schemaReply struct {
	Collection string `json:"collection,omitempty"`
	// Fields is null when no schema is declared.
	Fields []docstore.FieldDef `json:"fields"`
}

func (p *Plugin) setSchema(ctx context.Context, _ *mcp.CallToolRequest, in setSchemaArgs) (any, error) {
	if in.Fields == nil { // fields: null, which get_schema returns for no schema
		if _, err := p.db.DropSchema(ctx, string(in.Collection)); err != nil {
			return nil, engineFailure(err, placeAt("/collection"))
		}
		return schemaReply{Collection: string(in.Collection)}, nil
	}
	s := docstore.Schema{Fields: make([]docstore.FieldDef, len(in.Fields))}
	for i, f := range in.Fields {
		s.Fields[i] = docstore.FieldDef{Name: string(f.Name), Type: string(f.Type), Required: f.Required, Unique: f.Unique}
	}
	if err := p.db.SetSchema(ctx, string(in.Collection), s); err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			names := make([]string, len(in.Fields))
			for i, f := range in.Fields {
				names[i] = string(f.Name)
			}
			if i := lastIndex(names, e.Field); i >= 0 {
				return fmt.Sprintf("/fields/%d/name", i) // a name declared twice is at fault where repeated
			}
			if isNameError(e) {
				return "/collection"
			}
			return "/fields"
		})
	}
	return schemaReply{Collection: string(in.Collection), Fields: s.Fields}, nil
}

type getSchemaArgs struct {
	Collection collectionName `json:"collection"`
}

func (p *Plugin) getSchema(ctx context.Context, _ *mcp.CallToolRequest, in getSchemaArgs) (any, error) {
	s, err := p.db.Schema(ctx, string(in.Collection))
	if err != nil {
		return nil, engineFailure(err, placeAt(""))
	}
	if s == nil {
		return schemaReply{}, nil
	}
	return schemaReply{Fields: s.Fields}, nil
}
