package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The argument types of the graph tools, with their JSON Schemas (added
// to argTypeSchemas).
type (
	// edgeType is an edge's type: 1 to 256 bytes.
	edgeType string
	// direction is the way edges are followed.
	direction string
	// traverseDirection is traverse's direction, which may be both.
	traverseDirection string
	// depthArg is traverse's depth.
	depthArg int
	// propsArg is an edge's properties: a JSON object.
	propsArg struct{ jsonArg }
	// edgeTypes restricts a traversal to some edge types: at least one,
	// since none would follow no edge.
	edgeTypes []edgeType
)

// edgeTypeSchema is an edge's type: 1 to docstore.MaxEdgeType bytes.
var edgeTypeSchema = &jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(docstore.MaxEdgeType)}

func init() {
	for t, s := range map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[edgeType]():          edgeTypeSchema,
		reflect.TypeFor[edgeTypes]():         listSchema(edgeTypeSchema),
		reflect.TypeFor[direction]():         {Type: "string", Enum: []any{string(docstore.Out), string(docstore.In)}},
		reflect.TypeFor[traverseDirection](): {Type: "string", Enum: []any{string(docstore.Out), string(docstore.In), string(docstore.Both)}},
		reflect.TypeFor[depthArg]():          {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(docstore.MaxTraverseDepth))},
		reflect.TypeFor[propsArg]():          {Type: "object"},
	} {
		argTypeSchemas[t] = s
	}
}

// addGraphTools adds link, unlink, neighbors, in_neighbors, traverse and
// join.
func (p *Plugin) addGraphTools() {
	addTool(p, &mcp.Tool{Name: "link", Description: `Link two documents (of any collections) by a typed, directed edge from → to, with optional properties (a JSON object). Both documents must exist: a missing one fails with not_found (its message names the from or to end), a missing collection with collection_not_found. Linking again with the same from, type and to replaces the edge's properties. Deleting a document (or dropping its collection) deletes its edges both ways. Example: {"from": {"collection": "people", "id": "ann"}, "type": "knows", "to": {"collection": "people", "id": "bob"}, "props": {"since": 2020}}. Returns {created}: false when the edge existed.`,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)}}, p.link)
	addTool(p, &mcp.Tool{Name: "unlink", Description: `Delete the edge of a type from one document to another. Returns {removed}: false when there was no such edge.`,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(true), OpenWorldHint: new(false)}}, p.unlink)
	neighborsNote := ` (all types, or one), one page at a time, ordered by type, then the other end's collection and id. Returns {edges: [{type, from: {collection, id}, to: {collection, id}, props?, doc?}], next_cursor, limit}: props are the edge's properties (absent when none); with_docs adds each neighbour's document {id, revision, doc} (select projects it). Pass next_cursor back (same document, type) for the next page; null after the last. limit defaults to 100 and is clamped to 10000. Fails with not_found when the document does not exist.`
	addTool(p, &mcp.Tool{Name: "neighbors", Description: `List the edges out of a document — to the documents it links to —` + neighborsNote,
		Annotations: readOnly()}, p.neighbors)
	addTool(p, &mcp.Tool{Name: "in_neighbors", Description: `List the edges into a document — from the documents that link to it —` + neighborsNote,
		Annotations: readOnly()}, p.inNeighbors)
	addTool(p, &mcp.Tool{Name: "traverse", Description: `Walk the graph breadth-first from a document, along edges of the given types (all by default) in a direction (out: to the documents linked to; in: from those that link; both), up to max_depth edges away. Each document is returned once, at the depth it was first reached, with the edge that reached it (via), so cycles are safe. Example: {"collection": "people", "id": "ann", "types": ["knows"], "max_depth": 3, "limit": 50}. Returns {nodes: [{collection, id, depth, via?: {type, from, to, props?}, doc?}], truncated, edges_read}; the start is the first node (depth 0, no via). limit (default 100, at most 10000) bounds the nodes besides the start: when more were reachable, the walk stops there and truncated is true (the nodes returned are then the first in breadth-first order). with_docs adds each node's document (select projects it).`,
		Annotations: readOnly()}, p.traverse)
	addTool(p, &mcp.Tool{Name: "join", Description: `Page through a collection's documents (filter, select, limit, cursor, as page does, in id order), each joined to documents of a foreign collection: by field — the foreign documents whose foreign_field equals ($eq: 1 equals 1.0) the document's local_field, a scalar or an array of scalars (each element joins; null, maps and missing fields join nothing) — or by edges — the foreign documents its edges of edge_type lead to (direction out, the default) or come from (in). A foreign index whose first field is foreign_field is used when there is one; otherwise the foreign collection is read once per call. Example: {"collection": "users", "filter": {"tier": "gold"}, "foreign": "orders", "local_field": "user_id", "foreign_field": "user_id", "foreign_select": ["total"], "foreign_limit": 10}. Returns {rows: [{id, revision, doc, joined: [{id, revision, doc}], more}], next_cursor, limit}: joined is in the foreign id order, at most foreign_limit (default 100, at most 10000) documents matching foreign_filter; more is true when more joined. explain adds the plan: {local: {index, ranges, examined}, method (index, scan or edges), foreign_index?, foreign_examined}.`,
		Annotations: readOnly()}, p.join)
}

// refArg names a document of any collection.
type refArg struct {
	Collection collectionName `json:"collection"`
	ID         idArg          `json:"id"`
}

// ref converts the argument at JSON Pointer path.
func (a refArg) ref(path string) (docstore.Ref, error) {
	id, err := a.ID.value(path + "/id")
	return docstore.Ref{Collection: string(a.Collection), ID: id}, err
}

// ends converts an edge's from and to arguments.
func ends(from, to refArg) (docstore.Ref, docstore.Ref, error) {
	f, err := from.ref("/from")
	if err != nil {
		return f, docstore.Ref{}, err
	}
	t, err := to.ref("/to")
	return f, t, err
}

// refReply names a document in a reply.
type refReply struct {
	Collection string          `json:"collection"`
	ID         json.RawMessage `json:"id"`
}

func refOf(r docstore.Ref) (refReply, error) {
	id, err := docstore.ToJSON(r.ID)
	if err != nil {
		return refReply{}, fmt.Errorf("write a document id as JSON: %w", err)
	}
	return refReply{Collection: r.Collection, ID: id}, nil
}

// edgeReply is an edge in a reply.
type edgeReply struct {
	Type string   `json:"type"`
	From refReply `json:"from"`
	To   refReply `json:"to"`
	// Props are the edge's properties, absent when it has none.
	Props json.RawMessage `json:"props,omitempty"`
}

func edgeOf(e docstore.Edge) (edgeReply, error) {
	out := edgeReply{Type: e.Type}
	var err error
	if out.From, err = refOf(e.From); err != nil {
		return out, err
	}
	if out.To, err = refOf(e.To); err != nil {
		return out, err
	}
	if !e.Props.IsNull() {
		if out.Props, err = docstore.ToJSON(e.Props); err != nil {
			return out, fmt.Errorf("write an edge's properties as JSON: %w", err)
		}
	}
	return out, nil
}

// docOf returns d as a docReply in shape, or nil for nil.
func docOf(d *docstore.Doc, shape docShape) (*docReply, error) {
	if d == nil {
		return nil, nil
	}
	r, err := replyOf(*d, shape)
	return &r, err
}

// fieldAt places an engine error by its Field, a dotted path of the
// tool's arguments ("from.id" at "/from/id"), or at dflt without one.
func fieldAt(dflt string) placer {
	return func(e *docstore.Error) string {
		if e.Field == "" {
			return dflt
		}
		return "/" + strings.ReplaceAll(e.Field, ".", "/")
	}
}

type linkArgs struct {
	From  refArg   `json:"from" jsonschema:"the edge's source document: {collection, id}"`
	Type  edgeType `json:"type" jsonschema:"the edge's type, 1 to 256 bytes (\"knows\", \"wrote\")"`
	To    refArg   `json:"to" jsonschema:"the edge's target document: {collection, id}"`
	Props propsArg `json:"props,omitempty" jsonschema:"the edge's properties, a JSON object in the store's typed form (see store's doc); replaces those of an existing edge"`
}

// linkReply is link's result.
type linkReply struct {
	Created bool `json:"created"`
}

func (in linkArgs) op() (docstore.Op, error) {
	from, to, err := ends(in.From, in.To)
	if err != nil {
		return docstore.Op{}, err
	}
	props := docstore.Null()
	if in.Props.present() {
		if props, err = in.Props.value("/props"); err != nil {
			return docstore.Op{}, err
		}
	}
	return docstore.Op{Kind: docstore.OpLink, From: from, Type: string(in.Type), To: to, Props: props}, nil
}

func (p *Plugin) link(ctx context.Context, _ *mcp.CallToolRequest, in linkArgs) (any, error) {
	op, err := in.op()
	if err != nil {
		return nil, err
	}
	created, err := p.db.Link(ctx, op.From, op.Type, op.To, op.Props)
	if err != nil {
		return nil, engineFailure(err, fieldAt("/props"))
	}
	return linkReply{Created: created}, nil
}

type unlinkArgs struct {
	From refArg   `json:"from" jsonschema:"the edge's source document: {collection, id}"`
	Type edgeType `json:"type" jsonschema:"the edge's type"`
	To   refArg   `json:"to" jsonschema:"the edge's target document: {collection, id}"`
}

// unlinkReply is unlink's result.
type unlinkReply struct {
	Removed bool `json:"removed"`
}

func (in unlinkArgs) op() (docstore.Op, error) {
	from, to, err := ends(in.From, in.To)
	return docstore.Op{Kind: docstore.OpUnlink, From: from, Type: string(in.Type), To: to}, err
}

func (p *Plugin) unlink(ctx context.Context, _ *mcp.CallToolRequest, in unlinkArgs) (any, error) {
	op, err := in.op()
	if err != nil {
		return nil, err
	}
	removed, err := p.db.Unlink(ctx, op.From, op.Type, op.To)
	if err != nil {
		return nil, engineFailure(err, fieldAt(""))
	}
	return unlinkReply{Removed: removed}, nil
}

type neighborsArgs struct {
	Collection collectionName `json:"collection"`
	ID         idArg          `json:"id"`
	Type       edgeType       `json:"type,omitempty" jsonschema:"only edges of this type (default: every type)"`
	Limit      pageLimit      `json:"limit,omitempty" jsonschema:"the page size: default 100; larger than 10000 is clamped to 10000"`
	Cursor     cursorArg      `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to continue after it"`
	WithDocs   bool           `json:"with_docs,omitempty" jsonschema:"add each neighbour's document"`
	Vectors    vectorsArg     `json:"vectors,omitempty"`
	Select     []fieldPath    `json:"select,omitempty" jsonschema:"with with_docs: dotted paths to keep in each neighbour's document, vectors included (default: the whole document, vectors left out; []: no document, the ids only)"`
}

// neighborReply is one edge of neighbors and in_neighbors.
type neighborReply struct {
	edgeReply
	// Doc is the neighbour's document (with_docs).
	Doc *docReply `json:"doc,omitempty"`
}

// neighborsReply is the result of neighbors and in_neighbors.
type neighborsReply struct {
	Edges      []neighborReply `json:"edges"`
	NextCursor *string         `json:"next_cursor"`
	Limit      int             `json:"limit"`
}

func (p *Plugin) neighbors(ctx context.Context, _ *mcp.CallToolRequest, in neighborsArgs) (any, error) {
	return p.listNeighbors(ctx, in, p.db.Neighbors)
}

func (p *Plugin) inNeighbors(ctx context.Context, _ *mcp.CallToolRequest, in neighborsArgs) (any, error) {
	return p.listNeighbors(ctx, in, p.db.InNeighbors)
}

func (p *Plugin) listNeighbors(ctx context.Context, in neighborsArgs, list func(context.Context, docstore.Ref, docstore.NeighborQuery) (docstore.NeighborResult, error)) (any, error) {
	id, err := in.ID.value("/id")
	if err != nil {
		return nil, err
	}
	limit := clampPage(int(in.Limit))
	res, err := list(ctx, docstore.Ref{Collection: string(in.Collection), ID: id},
		docstore.NeighborQuery{Type: string(in.Type), Limit: limit, Cursor: string(in.Cursor), WithDocs: in.WithDocs, Select: paths(in.Select)})
	if err != nil {
		return nil, engineFailure(err, fieldAt(""))
	}
	out := neighborsReply{Edges: make([]neighborReply, 0, len(res.Edges)), Limit: limit}
	shape := shapeOf(in.Select, in.Vectors)
	for _, n := range res.Edges {
		e, err := edgeOf(n.Edge)
		if err != nil {
			return nil, err
		}
		r := neighborReply{edgeReply: e}
		if r.Doc, err = docOf(n.Doc, shape); err != nil {
			return nil, err
		}
		out.Edges = append(out.Edges, r)
	}
	if res.Next != "" {
		out.NextCursor = &res.Next
	}
	return out, nil
}

type traverseArgs struct {
	Collection collectionName    `json:"collection" jsonschema:"the start document's collection"`
	ID         idArg             `json:"id" jsonschema:"the start document's id: a JSON string or integer"`
	Types      edgeTypes         `json:"types,omitempty" jsonschema:"follow only edges of these types (default: every type)"`
	Direction  traverseDirection `json:"direction,omitempty" jsonschema:"out (the default): along edges to the documents linked to; in: back to the documents that link; both"`
	MaxDepth   depthArg          `json:"max_depth,omitempty" jsonschema:"how many edges away from the start to go, 1 to 64 (default 2)"`
	Limit      pageLimit         `json:"limit,omitempty" jsonschema:"the most nodes returned besides the start: default 100; larger than 10000 is clamped to 10000; when more are reachable, truncated is true"`
	WithDocs   bool              `json:"with_docs,omitempty" jsonschema:"add each node's document"`
	Vectors    vectorsArg        `json:"vectors,omitempty"`
	Select     []fieldPath       `json:"select,omitempty" jsonschema:"with with_docs: dotted paths to keep in each document, vectors included (default: the whole document, vectors left out; []: no document, the ids only)"`
}

// nodeReply is one node of traverse.
type nodeReply struct {
	refReply
	Depth int `json:"depth"`
	// Via is the edge that first reached the node (absent for the start).
	Via *edgeReply `json:"via,omitempty"`
	Doc *docReply  `json:"doc,omitempty"`
}

// traverseReply is traverse's result.
type traverseReply struct {
	Nodes     []nodeReply `json:"nodes"`
	Truncated bool        `json:"truncated"`
	EdgesRead int         `json:"edges_read"`
}

// defaultDepth is traverse's depth when none is given.
const defaultDepth = 2

func (p *Plugin) traverse(ctx context.Context, _ *mcp.CallToolRequest, in traverseArgs) (any, error) {
	id, err := in.ID.value("/id")
	if err != nil {
		return nil, err
	}
	q := docstore.TraverseQuery{Direction: docstore.Direction(in.Direction), MaxDepth: int(in.MaxDepth),
		Limit: clampPage(int(in.Limit)), WithDocs: in.WithDocs, Select: paths(in.Select)}
	if q.MaxDepth == 0 {
		q.MaxDepth = defaultDepth
	}
	for _, t := range in.Types {
		q.Types = append(q.Types, string(t))
	}
	res, err := p.db.Traverse(ctx, docstore.Ref{Collection: string(in.Collection), ID: id}, q)
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			switch e.Field {
			case "start.collection", "collection":
				return "/collection"
			case "start.id", "start":
				return "/id"
			}
			return fieldAt("")(e)
		})
	}
	out := traverseReply{Nodes: make([]nodeReply, 0, len(res.Nodes)), Truncated: res.Truncated, EdgesRead: res.EdgesRead}
	shape := shapeOf(in.Select, in.Vectors)
	for _, n := range res.Nodes {
		r := nodeReply{Depth: n.Depth}
		if r.refReply, err = refOf(n.Ref); err != nil {
			return nil, err
		}
		if n.Via != nil {
			e, err := edgeOf(*n.Via)
			if err != nil {
				return nil, err
			}
			r.Via = &e
		}
		if r.Doc, err = docOf(n.Doc, shape); err != nil {
			return nil, err
		}
		out.Nodes = append(out.Nodes, r)
	}
	return out, nil
}
