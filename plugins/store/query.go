package store

import (
	"context"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (p *Plugin) addQueryTools() {
	addTool(p, &mcp.Tool{Name: "page", Description: `List the documents of a collection that match a filter, one page at a time, in id order or in the order of an indexed field. Returns {docs: [{id, revision, doc}], next_cursor, limit}: pass next_cursor back (with the same filter, order and direction) for the next page; it is null after the last. limit defaults to 100 and is clamped to 10000 (the reply says which was used). Example filter: {"status": "open", "age": {"$gte": 18}}. select keeps only the given dotted paths of each document. explain adds the plan: {index (null for a scan), ranges, examined}.`,
		Annotations: readOnly()}, p.page)
	addTool(p, &mcp.Tool{Name: "count", Description: `Count the documents of a collection that match a filter (all without one). Example filter: {"status": {"$in": ["open", "blocked"]}}. Returns {count}; explain adds the plan: {index (null for a scan), ranges, examined}.`,
		Annotations: readOnly()}, p.count)
	addTool(p, &mcp.Tool{Name: "delete_where", Description: `Delete every document of a collection that matches a filter, in one transaction ({} deletes them all). Example filter: {"expires": {"$lt": 1700000000}}. Returns {deleted}, the number deleted (0 when the collection does not exist); explain adds the plan: {index (null for a scan), ranges, examined}.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}}, p.deleteWhere)
}

type pageArgs struct {
	Collection collectionName `json:"collection"`
	Filter     filterArg      `json:"filter,omitempty"`
	OrderBy    fieldPath      `json:"order_by,omitempty" jsonschema:"\"id\" (the default) or a field that is the first field of an index: documents without it (or null) first, then by id"`
	Desc       bool           `json:"desc,omitempty" jsonschema:"reverse the order"`
	Limit      pageLimit      `json:"limit,omitempty" jsonschema:"the page size: default 100; larger than 10000 is clamped to 10000"`
	Cursor     cursorArg      `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to continue after it"`
	Select     []fieldPath    `json:"select,omitempty" jsonschema:"dotted paths to keep in each document, vectors included (default: the whole document, vectors left out; []: no document, the ids only)"`
	Vectors    vectorsArg     `json:"vectors,omitempty"`
	Explain    bool           `json:"explain,omitempty" jsonschema:"add the query plan to the reply"`
}

// pageReply is page's result.
type pageReply struct {
	Docs []docReply `json:"docs"`
	// NextCursor continues after this page; null after the last.
	NextCursor *string `json:"next_cursor"`
	// Limit is the page size used (the default, or the request clamped).
	Limit int        `json:"limit"`
	Plan  *planReply `json:"plan,omitempty"`
}

func (p *Plugin) page(ctx context.Context, _ *mcp.CallToolRequest, in pageArgs) (any, error) {
	f, err := in.Filter.filter("/filter")
	if err != nil {
		return nil, err
	}
	limit := int(in.Limit)
	switch {
	case limit == 0:
		limit = docstore.DefaultLimit
	case limit > docstore.MaxLimit:
		limit = docstore.MaxLimit
	}
	q := docstore.Query{Filter: f, OrderBy: string(in.OrderBy), Desc: in.Desc, Limit: limit, Cursor: string(in.Cursor)}
	q.Select = paths(in.Select)
	res, err := p.db.Page(ctx, string(in.Collection), q)
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			switch {
			case e.Field == "cursor":
				return "/cursor"
			case isNameError(e):
				return "/collection"
			}
			return "/order_by"
		})
	}
	out := pageReply{Docs: make([]docReply, 0, len(res.Docs)), Limit: limit, Plan: planOf(res.Plan, in.Explain)}
	shape := shapeOf(in.Select, in.Vectors)
	for _, d := range res.Docs {
		r, err := replyOf(d, shape)
		if err != nil {
			return nil, err
		}
		out.Docs = append(out.Docs, r)
	}
	if res.Next != "" {
		out.NextCursor = &res.Next
	}
	return out, nil
}

type countArgs struct {
	Collection collectionName `json:"collection"`
	Filter     filterArg      `json:"filter,omitempty"`
	Explain    bool           `json:"explain,omitempty" jsonschema:"add the query plan to the reply"`
}

// countReply is count's result.
type countReply struct {
	Count int        `json:"count"`
	Plan  *planReply `json:"plan,omitempty"`
}

func (p *Plugin) count(ctx context.Context, _ *mcp.CallToolRequest, in countArgs) (any, error) {
	f, err := in.Filter.filter("/filter")
	if err != nil {
		return nil, err
	}
	n, plan, err := p.db.Count(ctx, string(in.Collection), f)
	if err != nil {
		return nil, engineFailure(err, placeAt("/filter"))
	}
	return countReply{Count: n, Plan: planOf(plan, in.Explain)}, nil
}

type deleteWhereArgs struct {
	Collection collectionName `json:"collection"`
	Filter     filterArg      `json:"filter"`
	Explain    bool           `json:"explain,omitempty" jsonschema:"add the query plan to the reply"`
}

// deleteWhereReply is delete_where's result.
type deleteWhereReply struct {
	Deleted int        `json:"deleted"`
	Plan    *planReply `json:"plan,omitempty"`
}

func (p *Plugin) deleteWhere(ctx context.Context, _ *mcp.CallToolRequest, in deleteWhereArgs) (any, error) {
	f, err := in.Filter.filter("/filter")
	if err != nil {
		return nil, err
	}
	n, plan, err := p.db.DeleteWhere(ctx, string(in.Collection), f)
	if err != nil {
		return nil, engineFailure(err, placeAt("/filter"))
	}
	return deleteWhereReply{Deleted: n, Plan: planOf(plan, in.Explain)}, nil
}
