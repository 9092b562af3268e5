package store

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// searchHits is search's result, decoded.
type searchHits struct {
	Hits []struct {
		ID      int64           `json:"id"`
		Doc     json.RawMessage `json:"doc"`
		Score   float64         `json:"score"`
		MMR     *float64        `json:"mmr"`
		Sources *struct {
			Vector *struct {
				Rank  int     `json:"rank"`
				Score float64 `json:"score"`
			} `json:"vector"`
		} `json:"sources"`
	} `json:"hits"`
	VectorMode *string `json:"vector_mode"`
	Limit      int     `json:"limit"`
	Plan       *struct {
		Index *string `json:"index"`
	} `json:"plan"`
}

func (r searchHits) ids() []int64 {
	var out []int64
	for _, h := range r.Hits {
		out = append(out, h.ID)
	}
	return out
}

// mmrDocs stores the worked example of TestSearchMMR (pkg/docstore): q =
// (1, 0); a = (0.8, 0.6), b = (0.6, 0.8), c = (0.28, -0.96), d = (0, 1),
// ids 1 to 4, in groups x, x, y, y.
func mmrDocs(e *env) {
	e.ok("create_index", `{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 2}`)
	for _, d := range []string{
		`{"collection": "c", "id": 1, "doc": {"v": {"$vector": [0.8, 0.6]}, "g": "x", "t": "a"}}`,
		`{"collection": "c", "id": 2, "doc": {"v": {"$vector": [0.6, 0.8]}, "g": "x", "t": "b"}}`,
		`{"collection": "c", "id": 3, "doc": {"v": {"$vector": [0.28, -0.96]}, "g": "y", "t": "c"}}`,
		`{"collection": "c", "id": 4, "doc": {"v": {"$vector": [0, 1]}, "g": "y", "t": "d"}}`,
		`{"collection": "c", "id": 5, "doc": {"g": "x", "t": "no vector"}}`,
	} {
		e.ok("store", d)
	}
}

// TestSearchTool: search ranks by the vector source exactly or
// approximately and says which ran, fuses by RRF (score 1/(60 + rank), as
// float32),
// re-picks by MMR (the worked example), filters first (through an index,
// shown by explain), projects and limits.
func TestSearchTool(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		mmrDocs(e)
		e.ok("create_scalar_index", `{"collection": "c", "field": "g"}`)
		for _, approx := range []string{"false", "true"} {
			r := okAs[searchHits](e, "search", `{"collection": "c", "vector": {"vector": [3, 0], "approximate": `+approx+`}, "explain": true}`)
			mode := map[string]string{"false": "exact", "true": "approximate"}[approx]
			if !slices.Equal(r.ids(), []int64{1, 2, 3, 4}) || r.VectorMode == nil || *r.VectorMode != mode || r.Limit != 10 {
				t.Fatalf("approximate %s: %+v", approx, r)
			}
			if h := r.Hits[1]; float32(h.Score) != float32(1.0/62) || h.Sources == nil || h.Sources.Vector.Rank != 2 || math.Abs(h.Sources.Vector.Score-0.6) > 1e-6 {
				t.Fatalf("hit 2: %+v", h)
			}
			r = okAs[searchHits](e, "search", `{"collection": "c", "vector": {"vector": [3, 0], "approximate": `+approx+`}, "mmr": 0.5, "limit": 3}`)
			if !slices.Equal(r.ids(), []int64{1, 3, 2}) {
				t.Fatalf("mmr: %v", r.ids())
			}
			for i, want := range []float64{0.4, 0.316, -0.18} {
				if m := r.Hits[i].MMR; m == nil || math.Abs(*m-want) > 1e-6 {
					t.Errorf("hit %d mmr %v, want %v", i, m, want)
				}
			}
		}
		r := okAs[searchHits](e, "search", `{"collection": "c", "filter": {"g": "y"}, "vector": {"vector": [3, 0]}, "select": ["t"], "explain": true}`)
		if !slices.Equal(r.ids(), []int64{3, 4}) || string(r.Hits[0].Doc) != `{"t":"c"}` || r.Plan == nil || r.Plan.Index == nil || *r.Plan.Index != "g" {
			t.Fatalf("filtered: %+v", r)
		}
		r = okAs[searchHits](e, "search", `{"collection": "c", "vector": {"vector": [0, 1], "k": 2}, "limit": 3, "rrf_k": 1}`)
		if !slices.Equal(r.ids(), []int64{4, 2}) || r.Hits[0].Score != 0.5 || r.Hits[0].Sources != nil {
			t.Fatalf("k 2, rrf_k 1: %+v", r)
		}
		if got := e.ok("search", `{"collection": "c", "filter": {"g": "z"}, "vector": {"vector": [0, 1]}}`); got != `{"hits":[],"vector_mode":"exact","limit":10}` {
			t.Fatalf("nothing passes the filter: %s", got)
		}
	})
}

// TestSearchToolErrors: bad ranking arguments are bad_params naming the
// argument; a missing collection is collection_not_found.
func TestSearchToolErrors(t *testing.T) {
	e := connect(t, Config{})
	mmrDocs(e)
	e.ok("store", `{"collection": "plain", "id": 1, "doc": {}}`)
	e.ok("create_index", `{"collection": "flat", "type": "vector", "fields": ["v"], "dimension": 2, "flat": true}`)
	for _, tc := range []struct{ args, path string }{
		{`{"collection": "c"}`, "/vector"},
		{`{"collection": "c", "vector": {"vector": [1, 2, 3]}}`, "/vector/vector"},
		{`{"collection": "c", "vector": {"vector": [1e39, 0]}}`, "/vector/vector"},
		{`{"collection": "c", "vector": {"vector": [0, 0]}}`, "/vector/vector"},
		{`{"collection": "c", "vector": {"vector": []}}`, "/vector/vector"},
		{`{"collection": "c", "vector": {"vector": ["a", 1]}}`, "/vector/vector/0"},
		{`{"collection": "c", "vector": {}}`, "/vector/vector"},
		{`{"collection": "c", "vector": {"vector": [1, 0], "k": -1}}`, "/vector/k"},
		{`{"collection": "c", "vector": {"vector": [1, 0], "k": 10001}}`, "/vector/k"},
		{`{"collection": "c", "vector": {"vector": [1, 0], "ef": -3}}`, "/vector/ef"},
		{`{"collection": "c", "vector": {"vector": [1, 0], "approximate": "yes"}}`, "/vector/approximate"},
		{`{"collection": "c", "vector": {"vector": [1, 0], "extra": 1}}`, "/vector/extra"},
		{`{"collection": "c", "vector": {"vector": [1, 0]}, "mmr": 1.5}`, "/mmr"},
		{`{"collection": "c", "vector": {"vector": [1, 0]}, "mmr": -0.1}`, "/mmr"},
		{`{"collection": "c", "vector": {"vector": [1, 0]}, "mmr": "0.5"}`, "/mmr"},
		{`{"collection": "c", "text": {"query": "x"}, "mmr": 0.5}`, "/mmr"},
		{`{"collection": "c", "vector": {"vector": [1, 0]}, "rrf_k": 0}`, "/rrf_k"},
		{`{"collection": "c", "vector": {"vector": [1, 0]}, "rrf_k": -60}`, "/rrf_k"},
		{`{"collection": "c", "vector": {"vector": [1, 0]}, "rrf_k": 1.5}`, "/rrf_k"},
		{`{"collection": "c", "vector": {"vector": [1, 0]}, "limit": 0}`, "/limit"},
		{`{"collection": "c", "vector": {"vector": [1, 0]}, "filter": {"g": {"$bogus": 1}}}`, "/filter/g/$bogus"},
		{`{"collection": "c", "text": {"query": "x", "bogus": 1}}`, "/text/bogus"},
		{`{"collection": "plain", "vector": {"vector": [1, 0]}}`, "/vector"},
		{`{"collection": "flat", "vector": {"vector": [1, 0], "approximate": true}}`, "/vector/approximate"},
		{`{"collection": "", "vector": {"vector": [1, 0]}}`, "/collection"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			if r := e.in(t).badParams("search", tc.args, tc.path); r.Error.Message == "" {
				t.Error("no message")
			}
		})
	}
	r := e.badParams("search", `{"collection": "c", "vector": {"vector": [1, 2, 3]}}`, "/vector/vector")
	if !strings.Contains(r.Error.Message, "3 dimensions, not 2") {
		t.Errorf("dimension message %q", r.Error.Message)
	}
	e.fail("search", `{"collection": "nope", "vector": {"vector": [1, 0]}}`, "collection_not_found")
}

// TestSearchToolHybrid: search fuses a vector and a text source (the
// engine's worked example: vectors rank 1, 2, 3; "heron" is in 3 alone,
// so 3 leads with 1/63 + 1/61), after the filter; explain gives each
// hit's rank in each source; a text query's errors are placed under
// /text.
func TestSearchToolHybrid(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("create_index", `{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 2}`)
		e.ok("create_text_index", `{"collection": "c", "name": "t", "fields": ["t"]}`)
		for _, d := range []string{
			`{"collection": "c", "id": 1, "doc": {"v": {"$vector": [1, 0.1]}, "t": "a gull on the shore", "g": 1}}`,
			`{"collection": "c", "id": 2, "doc": {"v": {"$vector": [1, 0.5]}, "t": "a tern at sea", "g": 1}}`,
			`{"collection": "c", "id": 3, "doc": {"v": {"$vector": [1, 0.9]}, "t": "a heron in the reeds", "g": 1}}`,
			`{"collection": "c", "id": 4, "doc": {"v": {"$vector": [1, 0]}, "t": "another heron", "g": 2}}`,
		} {
			e.ok("store", d)
		}
		r := okAs[searchHits](e, "search", `{"collection": "c", "filter": {"g": 1}, "vector": {"vector": [1, 0], "approximate": true}, "text": {"query": "heron"}, "explain": true}`)
		if !slices.Equal(r.ids(), []int64{3, 1, 2}) || float32(r.Hits[0].Score) != float32(1.0/63+1.0/61) || r.Hits[0].Sources.Vector.Rank != 3 {
			t.Fatalf("hybrid: %+v", r)
		}
		got := e.ok("search", `{"collection": "c", "text": {"query": "heron"}, "select": ["t"]}`)
		if !strings.HasPrefix(got, `{"hits":[{"id":`) || !strings.HasSuffix(got, `],"vector_mode":null,"limit":10}`) || strings.Count(got, `"id":`) != 2 {
			t.Fatalf("text only: %s", got)
		}
		e.badParams("search", `{"collection": "c", "text": {"query": "heron", "index": "nope"}}`, "/text/index")
	})
}
