package store

import (
	"strings"
	"testing"
)

// TestCreateVectorIndex: create_index with type "vector" declares the
// collection's vector field over the existing documents (created, then
// not for the same definition), list_collections shows it, another
// definition is index_exists, and documents whose field is not a vector
// of the dimension are schema_violation naming the field, at creation and
// on later writes.
func TestCreateVectorIndex(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "c", "id": 1, "doc": {"emb": {"$vector": [1, 2, 3]}}}`)
		e.ok("store", `{"collection": "c", "id": 2, "doc": {"emb": null}}`)
		e.ok("store", `{"collection": "bad", "id": 1, "doc": {"emb": [1, 2, 3]}}`)
		r := e.fail("create_index", `{"collection": "bad", "type": "vector", "fields": ["emb"], "dimension": 3}`, "schema_violation")
		if !strings.Contains(r.Error.Message, `"emb"`) {
			t.Errorf("schema_violation %q does not name the field", r.Error.Message)
		}
		for _, tc := range []struct{ args, want string }{
			{`{"collection": "c", "type": "vector", "fields": ["emb"], "dimension": 3}`, `{"created":true,"vector":{"field":"emb","dimension":3,"metric":"cosine"}}`},
			{`{"collection": "c", "type": "vector", "fields": ["emb"], "dimension": 3, "metric": "cosine"}`, `{"created":false,"vector":{"field":"emb","dimension":3,"metric":"cosine"}}`},
			{`{"collection": "d", "type": "vector", "fields": ["a.b"], "dimension": 2, "metric": "l2"}`, `{"created":true,"vector":{"field":"a.b","dimension":2,"metric":"l2"}}`},
			{`{"collection": "d", "type": "secondary", "name": "n", "fields": ["n"]}`, `{"created":true,"index":{"name":"n","fields":["n"]}}`},
			{`{"collection": "f", "type": "vector", "fields": ["v"], "dimension": 2, "flat": true}`, `{"created":true,"vector":{"field":"v","dimension":2,"metric":"cosine","flat":true}}`},
		} {
			if got := e.ok("create_index", tc.args); got != tc.want {
				t.Errorf("create_index %s = %s, want %s", tc.args, got, tc.want)
			}
		}
		e.fail("create_index", `{"collection": "c", "type": "vector", "fields": ["emb"], "dimension": 4}`, "index_exists")
		e.fail("create_index", `{"collection": "c", "type": "vector", "fields": ["other"], "dimension": 3}`, "index_exists")
		r = e.fail("store", `{"collection": "c", "id": 3, "doc": {"emb": {"$vector": [1, 2]}}}`, "schema_violation")
		if !strings.Contains(r.Error.Message, `"emb"`) || !strings.Contains(r.Error.Message, "2 dimensions, not 3") {
			t.Errorf("schema_violation %q", r.Error.Message)
		}
		e.fail("patch", `{"collection": "c", "id": 1, "patch": {"emb": "text"}}`, "schema_violation")
		got := e.ok("list_collections", `{}`)
		if !strings.Contains(got, `{"name":"c","count":2,"indexes":[],"schema":null,"vector":{"field":"emb","dimension":3,"metric":"cosine"}}`) {
			t.Fatalf("list_collections = %s", got)
		}
	})
}

// TestCreateVectorIndexErrors: a vector index's arguments are bad_params
// at the argument, and a secondary index refuses the vector arguments.
func TestCreateVectorIndexErrors(t *testing.T) {
	e := connect(t, Config{})
	for _, tc := range []struct{ args, path string }{
		{`{"collection": "c", "type": "vector", "fields": ["v"]}`, "/dimension"},
		{`{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 0}`, "/dimension"},
		{`{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 4097}`, "/dimension"},
		{`{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 1.5}`, "/dimension"},
		{`{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 3, "metric": "manhattan"}`, "/metric"},
		{`{"collection": "c", "type": "vector", "fields": ["v", "w"], "dimension": 3}`, "/fields"},
		{`{"collection": "c", "type": "vector", "fields": ["$v"], "dimension": 3}`, "/fields/0"},
		{`{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 3, "name": "v"}`, "/name"},
		{`{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 3, "unique": true}`, "/unique"},
		{`{"collection": "c", "type": "fulltext", "fields": ["v"]}`, "/type"},
		{`{"collection": "c", "name": "i", "fields": ["v"], "dimension": 3}`, "/dimension"},
		{`{"collection": "c", "name": "i", "fields": ["v"], "metric": "l2"}`, "/metric"},
		{`{"collection": "c", "name": "i", "fields": ["v"], "flat": true}`, "/flat"},
		{`{"collection": "c", "type": "vector", "fields": ["v"], "dimension": 2, "flat": "yes"}`, "/flat"},
		{`{"collection": "c", "type": "secondary", "fields": ["v"]}`, "/name"},
		{`{"collection": "", "type": "vector", "fields": ["v"], "dimension": 3}`, "/collection"},
	} {
		t.Run(tc.args, func(t *testing.T) { e.in(t).badParams("create_index", tc.args, tc.path) })
	}
	if got := e.ok("list_collections", `{}`); got != `{"collections":[]}` {
		t.Fatalf("a refused create_index created a collection: %s", got)
	}
}
