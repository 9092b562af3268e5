package store

import (
	"strings"
	"testing"
)

// TestGivenEmptyArguments: an argument given as zero or empty is never
// read as not given. A number below its minimum, an empty string and an
// empty list that narrows a query are refused, at the argument, with a
// message that names the value and the rule; in every tool.
func TestGivenEmptyArguments(t *testing.T) {
	e := connect(t, Config{FilesDir: t.TempDir()})
	mmrDocs(e)
	e.ok("create_text_index", `{"collection": "c", "name": "tx", "fields": ["t"]}`)
	for _, tc := range []struct{ tool, args, path, msg string }{
		{"search", `{"collection": "c", "vector": {"vector": [1, 0], "k": 0}}`, "/vector/k", "0 is below 1"},
		{"search", `{"collection": "c", "vector": {"vector": [1, 0], "approximate": true, "ef": 0}}`, "/vector/ef", "0 is below 1"},
		{"search", `{"collection": "c", "vector": {"vector": [1, 0], "k": 10001}}`, "/vector/k", "10001 is above 10000"},
		{"search", `{"collection": "c", "vector": {"vector": [1, 0]}, "rrf_k": 0}`, "/rrf_k", "0 is below 1"},
		{"search", `{"collection": "c", "vector": {"vector": [1, 0]}, "limit": 0}`, "/limit", "0 is below 1"},
		{"search", `{"collection": "c", "text": {"query": "a", "index": ""}}`, "/text/index", `"" is empty`},
		{"search", `{"collection": "c", "text": {"query": "a", "fields": []}}`, "/text/fields", "[] is empty"},
		{"page", `{"collection": "c", "order_by": ""}`, "/order_by", `"" is empty`},
		{"page", `{"collection": "c", "cursor": ""}`, "/cursor", `"" is empty`},
		{"phrase_search", `{"collection": "c", "phrase": "a", "index": ""}`, "/index", `"" is empty`},
		{"phrase_search", `{"collection": "c", "phrase": "a", "fields": []}`, "/fields", "[] is empty"},
		{"phrase_search", `{"collection": "c", "phrase": "a", "cursor": ""}`, "/cursor", `"" is empty`},
		{"geo", `{"collection": "c", "near": {"lat": 0, "lon": 0, "radius_m": 1}, "cursor": ""}`, "/cursor", `"" is empty`},
		{"geo", `{"collection": "c", "near": {"lat": 0, "lon": 0, "radius_m": 0}}`, "/near/radius_m", "0 is not above 0"},
		{"neighbors", `{"collection": "c", "id": 1, "cursor": ""}`, "/cursor", `"" is empty`},
		{"in_neighbors", `{"collection": "c", "id": 1, "cursor": ""}`, "/cursor", `"" is empty`},
		{"neighbors", `{"collection": "c", "id": 1, "type": ""}`, "/type", `"" is empty`},
		{"traverse", `{"collection": "c", "id": 1, "types": []}`, "/types", "[] is empty"},
		{"traverse", `{"collection": "c", "id": 1, "max_depth": 0}`, "/max_depth", "0 is below 1"},
		{"join", `{"collection": "c", "foreign": "c", "edge_type": "e", "cursor": ""}`, "/cursor", `"" is empty`},
		{"join", `{"collection": "c", "foreign": "c", "local_field": "", "foreign_field": "g"}`, "/local_field", `"" is empty`},
		{"dump", `{"collections": []}`, "/collections", "[] is empty"},
		{"dump", `{"path": ""}`, "/path", `"" is empty`},
		{"load", `{"path": ""}`, "/path", `"" is empty`},
		{"backup", `{"path": ""}`, "/path", `"" is empty`},
		{"create_index", `{"collection": "c", "fields": ["g"], "name": ""}`, "/name", `"" is empty`},
		{"create_index", `{"collection": "c", "type": "vector", "fields": ["w"], "dimension": 0}`, "/dimension", "0 is below 1"},
		{"create_text_index", `{"collection": "c", "name": "t2", "fields": ["t"], "language": ""}`, "/language", `"" is not one of "english"`},
		{"store", `{"collection": "", "id": 9, "doc": {}}`, "/collection", `"" is empty`},
		{"link", `{"from": {"collection": "c", "id": 1}, "type": "", "to": {"collection": "c", "id": 2}}`, "/type", `"" is empty`},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			r := e.in(t).badParams(tc.tool, tc.args, tc.path)
			if want := "invalid argument " + tc.path + ": " + tc.msg; !strings.HasPrefix(r.Error.Message, want) {
				t.Errorf("message %q, want %q", r.Error.Message, want)
			}
		})
	}
}

// TestArgumentMessages: a bad argument's message names its path, the rule
// and the value briefly, in JSON's words: no fraction for a decimal, no Go
// type, no path hundreds of levels long.
func TestArgumentMessages(t *testing.T) {
	e := connect(t, Config{})
	mmrDocs(e)
	deep := strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600)
	for _, tc := range []struct{ tool, args, path, msg string }{
		{"search", `{"collection": "c", "vector": {"vector": [1, 0]}, "mmr": -0.1}`, "/mmr", "invalid argument /mmr: -0.1 is below 0"},
		{"search", `{"collection": "c", "vector": {"vector": [1, 0]}, "mmr": 1.5}`, "/mmr", "invalid argument /mmr: 1.5 is above 1"},
		{"store", `{"collection": "c", "id": 9, "doc": {"h": 1e400}}`, "/doc/h", "invalid argument /doc/h: 1e400 is out of range: a number's magnitude is at most 1.7976931348623157e+308"},
		{"page", `{"collection": "c", "limit": 1e30}`, "/limit", "invalid argument /limit: 1e30 is out of range: an integer from -9223372036854775808 to 9223372036854775807"},
		{"store", `{"collection": "c", "id": 9, "doc": ` + deep + `}`, "/doc", "invalid argument /doc: nested more than 512 levels deep"},
		{"count", `{"collection": "c", "filter": ` + deep + `}`, "/filter", "invalid argument /filter: nested more than 512 levels deep"},
		{"create_index", `{"collection": "c", "fields": ["g"], "type": "graph"}`, "/type", `invalid argument /type: "graph" is not one of "secondary", "vector"`},
	} {
		t.Run(tc.tool+" "+tc.path, func(t *testing.T) {
			r := e.in(t).badParams(tc.tool, tc.args, tc.path)
			if r.Error.Message != tc.msg {
				t.Errorf("message %q, want %q", r.Error.Message, tc.msg)
			}
		})
	}
}

// TestEmptyMeansWhatItSays: select [] keeps none of each document (no
// doc at all: the ids, revisions and the tool's own fields) in every tool
// that selects, where null, like leaving select out, keeps all of it; set_schema fields [] declares an empty
// schema and fields null removes the declaration.
func TestEmptyMeansWhatItSays(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "c", "id": 1, "doc": {"t": "a b", "n": 1, "loc": {"lat": 1, "lon": 2}}}`)
		e.ok("store", `{"collection": "c", "id": 2, "doc": {"t": "a c", "n": 2, "loc": {"lat": 1, "lon": 2}}}`)
		e.ok("create_text_index", `{"collection": "c", "name": "tx", "fields": ["t"]}`)
		e.ok("create_geo_index", `{"collection": "c", "field": "loc"}`)
		e.ok("link", `{"from": {"collection": "c", "id": 1}, "type": "e", "to": {"collection": "c", "id": 2}}`)
		for _, tc := range []struct{ tool, args, want string }{
			{"page", `{"collection": "c", "select": []}`, `{"docs":[{"id":1,"revision":1},{"id":2,"revision":2}],"next_cursor":null,"limit":100}`},
			{"page", `{"collection": "c", "select": null, "limit": 1}`, `{"docs":[{"id":1,"revision":1,"doc":{"t":"a b","n":1,"loc":{"lat":1,"lon":2}}}],"next_cursor":"`},
			{"search", `{"collection": "c", "text": {"query": "b"}, "select": []}`, `{"hits":[{"id":1,"score":`},
			{"phrase_search", `{"collection": "c", "phrase": "a c", "select": []}`, `{"hits":[{"id":2,"field":"t","positions":[0,1],"matches":1}]`},
			{"geo", `{"collection": "c", "near": {"lat": 1, "lon": 2, "radius_m": 10}, "select": [], "limit": 1}`, `{"hits":[{"id":1,"point":{"lat":1,"lon":2},"distance_m":0}]`},
			{"neighbors", `{"collection": "c", "id": 1, "with_docs": true, "select": []}`, `{"edges":[{"type":"e","from":{"collection":"c","id":1},"to":{"collection":"c","id":2},"doc":{"id":2,"revision":2}}]`},
			{"traverse", `{"collection": "c", "id": 1, "with_docs": true, "select": []}`, `{"nodes":[{"collection":"c","id":1,"depth":0,"doc":{"id":1,"revision":1}}`},
			{"join", `{"collection": "c", "foreign": "c", "edge_type": "e", "select": [], "foreign_select": [], "limit": 1}`, `{"rows":[{"id":1,"revision":1,"joined":[{"id":2,"revision":2}],"more":false}]`},
		} {
			if got := e.ok(tc.tool, tc.args); !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s %s\n= %s\nwant %s...", tc.tool, tc.args, got, tc.want)
			}
		}

		e.ok("set_schema", `{"collection": "c", "fields": [{"name": "n", "type": "int", "required": true, "unique": true}]}`)
		e.fail("store", `{"collection": "c", "id": 3, "doc": {"n": 1}}`, "unique_violation")
		if got := e.ok("set_schema", `{"collection": "c", "fields": null}`); got != `{"collection":"c","fields":null}` {
			t.Fatalf("set_schema fields null = %s", got)
		}
		if got := e.ok("get_schema", `{"collection": "c"}`); got != `{"fields":null}` {
			t.Fatalf("get_schema after fields null = %s, want no schema", got)
		}
		e.ok("store", `{"collection": "c", "id": 3, "doc": {"n": 1}}`) // the unique index went with the schema
		e.ok("store", `{"collection": "c", "id": 4, "doc": {}}`)       // and required with it
		e.ok("set_schema", `{"collection": "c", "fields": []}`)
		if got := e.ok("get_schema", `{"collection": "c"}`); got != `{"fields":[]}` {
			t.Fatalf("get_schema after fields [] = %s, want a declared empty schema", got)
		}
		e.ok("set_schema", `{"collection": "none", "fields": null}`) // nothing to remove
		e.fail("get_schema", `{"collection": "none"}`, "collection_not_found")
	})
}
