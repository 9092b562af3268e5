package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// storeVectorDocs stores two linked documents of "c" that hold vectors in
// their vector field v (indexed), nested in a map and in an array, with a
// text and a geo index over them.
func (e *env) storeVectorDocs() {
	e.ok("create_index", `{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 3}`)
	e.ok("store", `{"collection": "c", "id": 1, "doc": {"t": "solar panel", "loc": {"lat": 1, "lon": 2}, "v": {"$vector": [1, 0, 0]}, "m": {"a/b": {"$vector": [0.5]}}, "arr": [{"$vector": [2, 2]}, 3]}}`)
	e.ok("store", `{"collection": "c", "id": 2, "doc": {"t": "solar roof", "loc": {"lat": 1, "lon": 2}, "v": {"$vector": [0, 1, 0]}}}`)
	e.ok("create_text_index", `{"collection": "c", "name": "tx", "fields": ["t"]}`)
	e.ok("create_geo_index", `{"collection": "c", "field": "loc"}`)
	e.ok("link", `{"from": {"collection": "c", "id": 1}, "type": "e", "to": {"collection": "c", "id": 2}}`)
	e.ok("link", `{"from": {"collection": "c", "id": 2}, "type": "e", "to": {"collection": "c", "id": 1}}`)
}

// The documents of storeVectorDocs as the tools return them by default
// (vectors left out as markers) and with vectors.
const (
	doc1Omitted = `{"t":"solar panel","loc":{"lat":1,"lon":2},"v":{"$omitted":"vector","dims":3},"m":{"a/b":{"$omitted":"vector","dims":1}},"arr":[{"$omitted":"vector","dims":2},3]}`
	doc1Full    = `{"t":"solar panel","loc":{"lat":1,"lon":2},"v":{"$vector":[1,0,0]},"m":{"a/b":{"$vector":[0.5]}},"arr":[{"$vector":[2,2]},3]}`
)

// TestVectorsLeftOut: every tool that returns documents leaves each vector
// out by default, in place, as {"$omitted": "vector", "dims": n} (in
// nested maps and arrays too); vectors: true returns them, and so does a
// select, which returns exactly the paths it names.
func TestVectorsLeftOut(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.storeVectorDocs()
		for _, tc := range []struct{ tool, args string }{
			{"get", `{"collection": "c", "id": 1%s}`},
			{"page", `{"collection": "c", "limit": 1%s}`},
			{"search", `{"collection": "c", "vector": {"vector": [1, 0, 0]}, "limit": 1%s}`},
			{"search", `{"collection": "c", "text": {"query": "panel"}%s}`},
			{"phrase_search", `{"collection": "c", "phrase": "solar panel"%s}`},
			{"geo", `{"collection": "c", "near": {"lat": 1, "lon": 2, "radius_m": 10}, "limit": 1%s}`},
			{"neighbors", `{"collection": "c", "id": 2, "with_docs": true%s}`},
			{"in_neighbors", `{"collection": "c", "id": 2, "with_docs": true%s}`},
			{"traverse", `{"collection": "c", "id": 1, "with_docs": true, "max_depth": 1%s}`},
			{"join", `{"collection": "c", "foreign": "c", "edge_type": "e", "limit": 1, "filter": {"t": "solar panel"}%s}`},
			{"join", `{"collection": "c", "foreign": "c", "edge_type": "e", "limit": 1, "filter": {"t": "solar roof"}%s}`},
		} {
			def := e.ok(tc.tool, fmt.Sprintf(tc.args, ""))
			if !strings.Contains(def, `"doc":`+doc1Omitted) || strings.Contains(def, "$vector") {
				t.Errorf("%s by default = %s\nwant document 1 as %s, no vector", tc.tool, def, doc1Omitted)
			}
			full := e.ok(tc.tool, fmt.Sprintf(tc.args, `, "vectors": true`))
			if !strings.Contains(full, `"doc":`+doc1Full) || strings.Contains(full, "$omitted") {
				t.Errorf("%s with vectors = %s\nwant document 1 as %s", tc.tool, full, doc1Full)
			}
		}
		// A select returns the paths it names, vectors included, and
		// leaves out the vectors of the paths it does not name.
		for _, tc := range []struct{ tool, args, want string }{
			{"page", `{"collection": "c", "limit": 1, "select": ["v", "t"]}`, `"doc":{"v":{"$vector":[1,0,0]},"t":"solar panel"}`},
			{"search", `{"collection": "c", "vector": {"vector": [1, 0, 0]}, "limit": 1, "select": ["m.a/b"]}`, `"doc":{"m":{"a/b":{"$vector":[0.5]}}}`},
			{"join", `{"collection": "c", "foreign": "c", "edge_type": "e", "limit": 1, "select": ["v"]}`, `"doc":{"v":{"$vector":[1,0,0]}},"joined":[{"id":2,"revision":2,"doc":{"t":"solar roof","loc":{"lat":1,"lon":2},"v":{"$omitted":"vector","dims":3}}}]`},
		} {
			if got := e.ok(tc.tool, tc.args); !strings.Contains(got, tc.want) {
				t.Errorf("%s %s\n= %s\nwant %s", tc.tool, tc.args, got, tc.want)
			}
		}
		// The writes return no document, patch the merged one by default.
		if got := e.ok("patch", `{"collection": "c", "id": 1, "patch": {"n": 1}}`); !strings.Contains(got, `"v":{"$omitted":"vector","dims":3}`) || strings.Contains(got, "$vector") {
			t.Errorf("patch = %s, want the merged document with its vectors left out", got)
		}
		if got := e.ok("write", `{"ops": [{"op": "patch", "collection": "c", "id": 1, "patch": {"n": 2}}]}`); !strings.Contains(got, `"v":{"$omitted":"vector","dims":3}`) || strings.Contains(got, "$vector") {
			t.Errorf("write's patch = %s, want the merged document with its vectors left out", got)
		}
	})
}

// TestOmittedMarkerRefused: a document holding an omitted-vector marker
// (as read, or edited) is refused by every write with bad_params at the
// marker's JSON Pointer and a message saying how to get the vector, and
// the stored vector is intact; compare_and_set refuses one in expect_value.
func TestOmittedMarkerRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.storeVectorDocs()
		for _, tc := range []struct{ tool, args, path string }{
			{"store", `{"collection": "c", "id": 1, "doc": ` + doc1Omitted + `}`, "/doc/v"},
			{"store", `{"collection": "c", "id": 1, "doc": {"m": {"a/b": {"$omitted": "vector"}}}}`, "/doc/m/a~1b"},
			{"insert_auto", `{"collection": "c", "doc": {"arr": [{"$omitted": "vector", "dims": 2}]}}`, "/doc/arr/0"},
			{"patch", `{"collection": "c", "id": 1, "patch": {"v": {"$omitted": "vector", "dims": 3}}}`, "/patch/v"},
			{"compare_and_set", `{"collection": "c", "id": 1, "expect_revision": 1, "doc": ` + doc1Omitted + `}`, "/doc/v"},
			{"compare_and_set", `{"collection": "c", "id": 1, "expect_value": ` + doc1Omitted + `, "doc": {"x": 1}}`, "/expect_value/v"},
		} {
			r := e.badParams(tc.tool, tc.args, tc.path)
			if !strings.Contains(r.Error.Message, `"vectors": true`) {
				t.Errorf("%s: message %q does not say how to get the vector", tc.tool, r.Error.Message)
			}
		}
		e.writeFails(`[{"op": "store", "collection": "c", "id": 3, "doc": {}}, {"op": "store", "collection": "c", "id": 1, "doc": `+doc1Omitted+`}]`, 1, "bad_params", "/ops/1/doc/v")
		if got := e.ok("get", `{"collection": "c", "id": 1, "vectors": true}`); got != `{"id":1,"revision":1,"doc":`+doc1Full+`}` {
			t.Fatalf("document 1 after the refused writes = %s, want it intact", got)
		}
		e.fail("get", `{"collection": "c", "id": 3}`, "not_found")
		// A document read with its vectors stores back as it was.
		full := e.ok("get", `{"collection": "c", "id": 1, "vectors": true}`)
		doc := full[strings.Index(full, `"doc":`)+len(`"doc":`) : len(full)-1]
		e.ok("store", `{"collection": "c", "id": 1, "doc": `+doc+`}`)
		if got := e.ok("get", `{"collection": "c", "id": 1, "vectors": true}`); !strings.HasSuffix(got, `"doc":`+doc1Full+`}`) {
			t.Fatalf("document 1 stored back with its vectors = %s", got)
		}
	})
}

// TestSearchHitBytes measures a search hit whose document holds a
// 384-dimension embedding, with its vector and by default: the default
// hit is a small fraction of it.
func TestSearchHitBytes(t *testing.T) {
	e := connect(t, Config{})
	e.ok("create_index", `{"collection": "notes", "type": "vector", "fields": ["embedding"], "dimension": 384}`)
	vec := make([]string, 384)
	for i := range vec {
		vec[i] = fmt.Sprintf("%.7f", 0.0123457*float64(i%97+1)-0.5)
	}
	e.ok("store", `{"collection": "notes", "id": "n1", "doc": {"title": "Solar panels on the roof", "body": "Quote received for 12 panels; install in May.", "tags": ["home", "energy"], "embedding": {"$vector": [`+strings.Join(vec, ",")+`]}}}`)
	query := `{"collection": "notes", "vector": {"vector": [` + strings.Join(vec, ",") + `]}, "limit": 1%s}`
	full := e.ok("search", fmt.Sprintf(query, `, "vectors": true`))
	def := e.ok("search", fmt.Sprintf(query, ""))
	t.Logf("a search hit with a 384-dimension vector: %d bytes with vectors, %d by default:\n%s", len(full), len(def), def)
	if !strings.Contains(def, `"embedding":{"$omitted":"vector","dims":384}`) || len(def)*10 > len(full) {
		t.Fatalf("default hit = %d bytes against %d with the vector: %s", len(def), len(full), def)
	}
}

// TestHitShape: a hit of search, phrase_search or geo is the document's id
// and value with the tool's own fields, without the revision that get and
// page return; every score is in float32's shortest form (an RRF score
// 1/61 is 0.016393442, an MMR score 0.4, not 0.4000000059604645).
func TestHitShape(t *testing.T) {
	e := connect(t, Config{})
	mmrDocs(e)
	e.ok("store", `{"collection": "p", "id": 1, "doc": {"t": "a b", "loc": {"lat": 1, "lon": 2}}}`)
	e.ok("create_text_index", `{"collection": "p", "name": "tx", "fields": ["t"]}`)
	e.ok("create_geo_index", `{"collection": "p", "field": "loc"}`)
	doc := `"doc":{"t":"a b","loc":{"lat":1,"lon":2}}`
	for _, tc := range []struct{ tool, args, want string }{
		{"search", `{"collection": "p", "text": {"query": "b"}}`, `{"hits":[{"id":1,` + doc + `,"score":0.016393442}],"vector_mode":null,"limit":10}`},
		{"search", `{"collection": "p", "text": {"query": "b"}, "explain": true}`, `{"hits":[{"id":1,` + doc + `,"score":0.016393442,"sources":{"text":{"rank":1,"score":0.2876821}}}],"vector_mode":null,"limit":10}`},
		{"search", `{"collection": "c", "vector": {"vector": [3, 0]}, "mmr": 0.5, "limit": 3, "select": []}`,
			`{"hits":[{"id":1,"score":0.016393442,"mmr":0.4},{"id":3,"score":0.015873017,"mmr":0.316},{"id":2,"score":0.016129032,"mmr":-0.18}],"vector_mode":"exact","limit":3}`},
		{"phrase_search", `{"collection": "p", "phrase": "a b"}`, `{"hits":[{"id":1,` + doc + `,"field":"t","positions":[0,1],"matches":1}],"next_cursor":null,"limit":100}`},
		{"geo", `{"collection": "p", "near": {"lat": 1, "lon": 2, "radius_m": 10}}`, `{"hits":[{"id":1,` + doc + `,"point":{"lat":1,"lon":2},"distance_m":0}],"next_cursor":null,"limit":100}`},
		{"get", `{"collection": "p", "id": 1}`, `{"id":1,"revision":6,` + doc + `}`},
		{"page", `{"collection": "p"}`, `{"docs":[{"id":1,"revision":6,` + doc + `}],"next_cursor":null,"limit":100}`},
	} {
		if got := e.ok(tc.tool, tc.args); got != tc.want {
			t.Errorf("%s %s\n= %s\nwant %s", tc.tool, tc.args, got, tc.want)
		}
	}
	// Beyond float32's normal range a score keeps float64's form rather
	// than become 0 or infinite.
	for s, want := range map[score]string{0: "0", 1e-50: "1e-50", -3e39: "-3e+39", 1.0 / 3: "0.33333334"} {
		if got, err := json.Marshal(s); err != nil || string(got) != want {
			t.Errorf("score %v = %s, %v; want %s", float64(s), got, err, want)
		}
	}
}
