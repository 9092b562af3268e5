package store

import (
	"context"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// join's arguments, result and handler (the tool is added by
// addGraphTools).

type joinArgs struct {
	Collection    collectionName `json:"collection" jsonschema:"the local collection, paged"`
	Filter        filterArg      `json:"filter,omitempty"`
	Select        []fieldPath    `json:"select,omitempty" jsonschema:"dotted paths to keep in each local document, vectors included (default: the whole document, vectors left out; []: no document, the ids only)"`
	Limit         pageLimit      `json:"limit,omitempty" jsonschema:"the page size of local documents: default 100; larger than 10000 is clamped to 10000"`
	Cursor        cursorArg      `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to continue after it"`
	Foreign       collectionName `json:"foreign" jsonschema:"the foreign collection, whose documents are joined"`
	LocalField    fieldPath      `json:"local_field,omitempty" jsonschema:"join by field: the local documents' field (with foreign_field)"`
	ForeignField  fieldPath      `json:"foreign_field,omitempty" jsonschema:"join by field: the foreign documents' field that must equal local_field"`
	EdgeType      edgeType       `json:"edge_type,omitempty" jsonschema:"join by edges: the type of the edges that lead to the foreign documents (instead of local_field and foreign_field)"`
	Direction     direction      `json:"direction,omitempty" jsonschema:"join by edges: out (the default) follows edges from the local document, in follows edges into it"`
	ForeignFilter filterArg      `json:"foreign_filter,omitempty" jsonschema:"a filter the joined documents must also match (see filter)"`
	ForeignSelect []fieldPath    `json:"foreign_select,omitempty" jsonschema:"dotted paths to keep in each joined document, vectors included (default: the whole document, vectors left out; []: no document, the ids only)"`
	Vectors       vectorsArg     `json:"vectors,omitempty"`
	ForeignLimit  pageLimit      `json:"foreign_limit,omitempty" jsonschema:"the most joined documents per local document: default 100; larger than 10000 is clamped to 10000; more is true when more joined"`
	Explain       bool           `json:"explain,omitempty" jsonschema:"add the join's plan to the reply"`
}

// joinRowReply is one row of join.
type joinRowReply struct {
	docReply
	Joined []docReply `json:"joined"`
	More   bool       `json:"more"`
}

// joinReply is join's result.
type joinReply struct {
	Rows       []joinRowReply `json:"rows"`
	NextCursor *string        `json:"next_cursor"`
	Limit      int            `json:"limit"`
	Plan       *joinPlanReply `json:"plan,omitempty"`
}

// joinPlanReply is how join found its documents.
type joinPlanReply struct {
	Local           *planReply `json:"local"`
	Method          string     `json:"method"`
	ForeignIndex    string     `json:"foreign_index,omitempty"`
	ForeignExamined int        `json:"foreign_examined"`
}

func (p *Plugin) join(ctx context.Context, _ *mcp.CallToolRequest, in joinArgs) (any, error) {
	f, err := in.Filter.filter("/filter")
	if err != nil {
		return nil, err
	}
	ff, err := in.ForeignFilter.filter("/foreign_filter")
	if err != nil {
		return nil, err
	}
	limit := clampPage(int(in.Limit))
	q := docstore.JoinQuery{Filter: f, Select: paths(in.Select), Limit: limit, Cursor: string(in.Cursor),
		Foreign: string(in.Foreign), LocalField: string(in.LocalField), ForeignField: string(in.ForeignField),
		EdgeType: string(in.EdgeType), Direction: docstore.Direction(in.Direction),
		ForeignFilter: ff, ForeignSelect: paths(in.ForeignSelect), ForeignLimit: clampPage(int(in.ForeignLimit))}
	res, err := p.db.Join(ctx, string(in.Collection), q)
	if err != nil {
		return nil, engineFailure(err, fieldAt("/collection"))
	}
	out := joinReply{Rows: make([]joinRowReply, 0, len(res.Rows)), Limit: limit}
	local, foreign := shapeOf(in.Select, in.Vectors), shapeOf(in.ForeignSelect, in.Vectors)
	for _, row := range res.Rows {
		d, err := replyOf(row.Doc, local)
		if err != nil {
			return nil, err
		}
		r := joinRowReply{docReply: d, Joined: make([]docReply, 0, len(row.Joined)), More: row.More}
		for _, j := range row.Joined {
			jd, err := replyOf(j, foreign)
			if err != nil {
				return nil, err
			}
			r.Joined = append(r.Joined, jd)
		}
		out.Rows = append(out.Rows, r)
	}
	if res.Next != "" {
		out.NextCursor = &res.Next
	}
	if in.Explain {
		out.Plan = &joinPlanReply{Local: planOf(res.Plan.Local, true), Method: res.Plan.Method,
			ForeignIndex: res.Plan.ForeignIndex, ForeignExamined: res.Plan.ForeignExamined}
	}
	return out, nil
}
