package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The argument types of search and of create_index's vector form, with
// their JSON Schemas (added to argTypeSchemas).
type (
	// mmrArg is MMR's λ, a number in [0, 1].
	mmrArg float64
	// rrfKArg is RRF's k, an integer of at least 1.
	rrfKArg int
	// queryVector is a query vector: an array of numbers.
	queryVector []float64
	// vectorMetric is a vector field's metric.
	vectorMetric string
	// vectorDimension is a vector field's dimension.
	vectorDimension int
	// indexType is create_index's kind of index.
	indexType string
	// vectorBound is the vector source's k or ef: 1 to docstore.MaxLimit
	// (0 is refused, never read as "not given").
	vectorBound int
)

func init() {
	for t, s := range map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[mmrArg]():          {Type: "number", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(1.0)},
		reflect.TypeFor[rrfKArg]():         {Type: "integer", Minimum: jsonschema.Ptr(1.0)},
		reflect.TypeFor[queryVector]():     {Type: "array", MinItems: jsonschema.Ptr(1), Items: &jsonschema.Schema{Type: "number"}},
		reflect.TypeFor[vectorMetric]():    {Type: "string", Enum: []any{docstore.MetricCosine, docstore.MetricDot, docstore.MetricL2}},
		reflect.TypeFor[vectorDimension](): {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(docstore.MaxVectorDimension))},
		reflect.TypeFor[indexType]():       {Type: "string", Enum: []any{"secondary", "vector"}},
		reflect.TypeFor[vectorBound]():     {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(docstore.MaxLimit))},
	} {
		argTypeSchemas[t] = s
	}
	argTypeSchemas[reflect.TypeFor[docstore.TextQuery]()] = textQuerySchema()
}

// textQuerySchema is the schema of search's text source, the engine's
// TextQuery, whose index and fields, when given, may not be empty: "" names
// no index and [] no field.
func textQuerySchema() *jsonschema.Schema {
	s, err := jsonschema.For[docstore.TextQuery](nil)
	if err != nil {
		panic(fmt.Sprintf("the schema of docstore.TextQuery: %v", err)) // a programming error, caught by every test
	}
	s.Properties["index"] = nameSchema(s.Properties["index"].Description)
	fields := listSchema(&jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(1)})
	fields.Description = s.Properties["fields"].Description
	s.Properties["fields"] = fields
	return s
}

func (p *Plugin) addSearchTools() {
	addTool(p, &mcp.Tool{Name: "search", Description: `Hybrid search of one collection: the documents a filter selects (all without one), ranked by a vector source (similarity to a query vector in the collection's vector field, declared with create_index type "vector"), a text source (BM25 over a text index) or both, fused by Reciprocal Rank Fusion (score = Σ 1/(rrf_k + rank), ranks from 1), then, with mmr, re-picked by Maximal Marginal Relevance for diversity (λ·cos(doc, query) − (1−λ)·max cos(doc, picked), from a pool of max(4·limit, 20) candidates). Example: {"collection": "notes", "filter": {"lang": "en"}, "vector": {"vector": [0.1, 0.3, ...], "approximate": true}, "text": {"query": "solar panels"}, "mmr": 0.7, "limit": 5}. Returns {hits: [{id, doc, score, mmr?, sources?}], vector_mode, limit} (no revision: get returns it): score is the fused score, in float32's shortest form as every score here, vector_mode says how the vector source ran ("exact" scan or "approximate" HNSW; null without one; an approximate search whose filter leaves under a tenth of the vectors runs exactly). explain adds each hit's sources {vector: {rank, score}, text: {rank, score}} (vector score: cosine similarity, dot product, or minus the Euclidean distance) and the filter's plan.`,
		Annotations: readOnly()}, p.search)
}

// vectorSource is search's vector argument.
type vectorSource struct {
	Vector      queryVector `json:"vector" jsonschema:"the query vector: numbers, as many as the collection's vector dimension (float32 components; zero is refused for cosine)"`
	K           vectorBound `json:"k,omitempty" jsonschema:"how many nearest documents this source ranks (1 to 10000; default: the limit, or the MMR pool)"`
	Approximate bool        `json:"approximate,omitempty" jsonschema:"search the HNSW index instead of scanning every vector: much faster on large collections, may miss a few of the nearest"`
	Ef          vectorBound `json:"ef,omitempty" jsonschema:"the HNSW search breadth, for approximate (default 100, never less than k): larger finds more of the true nearest, slower"`
}

// textSource is search's text argument: the text query, as the engine
// defines it.
type textSource = docstore.TextQuery

type searchArgs struct {
	Collection collectionName `json:"collection"`
	Filter     filterArg      `json:"filter,omitempty"`
	Vector     *vectorSource  `json:"vector,omitempty" jsonschema:"the vector source: {vector, k?, approximate?, ef?}"`
	Text       *textSource    `json:"text,omitempty" jsonschema:"the text source: {query, index?, fields?, ...} (its properties say more), ranked by BM25 over the collection's text index (create_text_index)"`
	RRFK       rrfKArg        `json:"rrf_k,omitempty" jsonschema:"RRF's k, at least 1 (default 60): larger flattens the difference between ranks"`
	MMR        *mmrArg        `json:"mmr,omitempty" jsonschema:"MMR's λ in [0, 1], the weight of relevance against diversity (1: relevance order; 0.5 balances); needs a vector source"`
	Select     []fieldPath    `json:"select,omitempty" jsonschema:"dotted paths to keep in each document, vectors included (default: the whole document, vectors left out; []: no document, the ids only)"`
	Vectors    vectorsArg     `json:"vectors,omitempty"`
	Limit      pageLimit      `json:"limit,omitempty" jsonschema:"the number of hits: default 10; larger than 10000 is clamped to 10000"`
	Explain    bool           `json:"explain,omitempty" jsonschema:"add each hit's rank and score in each source, and the filter's plan"`
}

// hitSources are a hit's rank and score in each source.
type hitSources struct {
	Vector *sourceRank `json:"vector,omitempty"`
	Text   *sourceRank `json:"text,omitempty"`
}

// sourceRank is a hit's rank and score in one source.
type sourceRank struct {
	Rank  int   `json:"rank"`
	Score score `json:"score"`
}

// sourceRankOf returns r as a reply, nil for nil.
func sourceRankOf(r *docstore.SourceRank) *sourceRank {
	if r == nil {
		return nil
	}
	return &sourceRank{Rank: r.Rank, Score: score(r.Score)}
}

// hitReply is one hit of search.
type hitReply struct {
	hitDoc
	// Score is the fused (RRF) score.
	Score score `json:"score"`
	// MMR is the hit's MMR score when mmr was given.
	MMR     *score      `json:"mmr,omitempty"`
	Sources *hitSources `json:"sources,omitempty"`
}

// searchReply is search's result.
type searchReply struct {
	Hits []hitReply `json:"hits"`
	// VectorMode is "exact" or "approximate"; null without a vector
	// source.
	VectorMode *string    `json:"vector_mode"`
	Limit      int        `json:"limit"`
	Plan       *planReply `json:"plan,omitempty"`
}

func (p *Plugin) search(ctx context.Context, _ *mcp.CallToolRequest, in searchArgs) (any, error) {
	f, err := in.Filter.filter("/filter")
	if err != nil {
		return nil, err
	}
	limit := min(int(in.Limit), docstore.MaxLimit)
	if limit == 0 {
		limit = docstore.DefaultSearchLimit
	}
	q := docstore.SearchQuery{Filter: f, Text: in.Text, RRFK: int(in.RRFK), Limit: limit}
	if in.MMR != nil {
		q.MMR = new(float64(*in.MMR))
	}
	if v := in.Vector; v != nil {
		q.Vector = &docstore.VectorQuery{Vector: make([]float32, len(v.Vector)), K: int(v.K), Approximate: v.Approximate, Ef: int(v.Ef)}
		for i, x := range v.Vector {
			q.Vector.Vector[i] = float32(x) // beyond float32's range: ±Inf, which the engine refuses
		}
	}
	q.Select = paths(in.Select)
	res, err := p.db.Search(ctx, string(in.Collection), q)
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			if isNameError(e) {
				return "/collection"
			}
			return "/" + strings.ReplaceAll(e.Field, ".", "/")
		})
	}
	out := searchReply{Hits: make([]hitReply, 0, len(res.Hits)), Limit: limit}
	if res.VectorMode != "" {
		out.VectorMode = &res.VectorMode
	}
	if in.Explain && f != nil {
		out.Plan = planOf(res.Plan, true)
	}
	shape := shapeOf(in.Select, in.Vectors)
	for _, h := range res.Hits {
		d, err := replyOf(h.Doc, shape)
		if err != nil {
			return nil, err
		}
		r := hitReply{hitDoc: d.hit(), Score: score(h.Score)}
		if h.MMR != nil {
			r.MMR = new(score(*h.MMR))
		}
		if in.Explain {
			r.Sources = &hitSources{Vector: sourceRankOf(h.Vector), Text: sourceRankOf(h.Text)}
		}
		out.Hits = append(out.Hits, r)
	}
	return out, nil
}

// vectorIndexReply is create_index's result for a vector index.
type vectorIndexReply struct {
	Created bool               `json:"created"`
	Vector  docstore.VectorDef `json:"vector"`
}

// createVectorIndex is create_index with type "vector": the collection's
// vector field, named by its one field.
func (p *Plugin) createVectorIndex(ctx context.Context, req *mcp.CallToolRequest, in createIndexArgs) (any, error) {
	switch {
	case in.Name != "":
		return nil, &mcpcore.ParamError{Path: "/name", Reason: "a vector index is named by its field: omit name"}
	case in.Unique:
		return nil, &mcpcore.ParamError{Path: "/unique", Reason: "a vector index cannot be unique"}
	case len(in.Fields) != 1:
		return nil, &mcpcore.ParamError{Path: "/fields", Reason: fmt.Sprintf("a vector index has one field (the vector), not %d", len(in.Fields))}
	case in.Dimension == 0:
		return nil, &mcpcore.ParamError{Path: "/dimension", Reason: "a vector index needs its dimension"}
	}
	def := docstore.VectorDef{Field: string(in.Fields[0]), Dimension: int(in.Dimension), Metric: string(in.Metric), Flat: in.Flat}
	created, err := p.db.SetVector(ctx, string(in.Collection), def, progressOf(ctx, p.host, req, "documents indexed"))
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			switch {
			case isNameError(e):
				return "/collection"
			case e.Field == "field":
				return "/fields/0"
			}
			return "/" + e.Field
		})
	}
	if def.Metric == "" {
		def.Metric = docstore.MetricCosine
	}
	return vectorIndexReply{Created: created, Vector: def}, nil
}
