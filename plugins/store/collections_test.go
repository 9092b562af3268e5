package store

import (
	"strings"
	"testing"
)

// TestIndexes: the three index tools create an index (named after the
// field, or the fields joined by "+", unless named), report an identical
// one as not created, refuse another definition under the same name and a
// unique index over shared values, and a unique index refuses writes.
func TestIndexes(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "c", "id": 1, "doc": {"email": "a@x", "city": "Oslo", "age": 30}}`)
		e.ok("store", `{"collection": "c", "id": 2, "doc": {"email": "b@x", "city": "Oslo", "age": 30}}`)
		for _, tc := range []struct{ tool, args, want string }{
			{"create_scalar_index", `{"collection": "c", "field": "email", "unique": true}`, `{"created":true,"index":{"name":"email","fields":["email"],"unique":true}}`},
			{"create_scalar_index", `{"collection": "c", "field": "email", "unique": true}`, `{"created":false,"index":{"name":"email","fields":["email"],"unique":true}}`},
			{"create_scalar_index", `{"collection": "c", "field": "age", "name": "by_age"}`, `{"created":true,"index":{"name":"by_age","fields":["age"]}}`},
			{"create_compound_index", `{"collection": "c", "fields": ["city", "age"]}`, `{"created":true,"index":{"name":"city+age","fields":["city","age"]}}`},
			{"create_compound_index", `{"collection": "d", "fields": ["a", "b.c"], "name": "ab"}`, `{"created":true,"index":{"name":"ab","fields":["a","b.c"]}}`},
			{"create_index", `{"collection": "c", "name": "geo", "fields": ["city"]}`, `{"created":true,"index":{"name":"geo","fields":["city"]}}`},
		} {
			if got := e.ok(tc.tool, tc.args); got != tc.want {
				t.Errorf("%s %s = %s, want %s", tc.tool, tc.args, got, tc.want)
			}
		}
		e.fail("create_index", `{"collection": "c", "name": "geo", "fields": ["age"]}`, "index_exists")
		e.fail("create_index", `{"collection": "c", "name": "geo", "fields": ["city"], "unique": true}`, "index_exists")
		r := e.fail("create_scalar_index", `{"collection": "c", "field": "city", "unique": true}`, "unique_violation")
		if !strings.Contains(r.Error.Message, "city") {
			t.Errorf("unique_violation %q does not name the field", r.Error.Message)
		}
		r = e.fail("store", `{"collection": "c", "id": 3, "doc": {"email": "a@x"}}`, "unique_violation")
		if !strings.Contains(r.Error.Message, `"email"`) {
			t.Errorf("unique_violation %q does not name the index", r.Error.Message)
		}
		e.ok("store", `{"collection": "c", "id": 3, "doc": {"email": null}}`)
		e.ok("store", `{"collection": "c", "id": 4, "doc": {}}`)
		e.fail("get", `{"collection": "c", "id": 5}`, "not_found")
	})
}

// TestIndexErrors: malformed definitions are bad_params at the argument
// (from the input schema, or from the engine), and flags must be booleans.
func TestIndexErrors(t *testing.T) {
	e := connect(t, Config{})
	for _, tc := range []struct{ tool, args, path string }{
		{"create_index", `{"collection": "c", "name": "i", "fields": []}`, "/fields"},
		{"create_index", `{"collection": "c", "name": "i", "fields": [""]}`, "/fields/0"},
		{"create_index", `{"collection": "c", "name": "i", "fields": ["a", "$b"]}`, "/fields/1"},
		{"create_index", `{"collection": "c", "name": "i", "fields": ["a", "b."]}`, "/fields/1"},
		{"create_index", `{"collection": "c", "name": "i", "fields": ["a", "a"]}`, "/fields/1"},
		{"create_index", `{"collection": "c", "name": "", "fields": ["a"]}`, "/name"},
		{"create_index", `{"collection": "c", "fields": ["a"]}`, "/name"},
		{"create_index", `{"collection": "c", "name": "i", "fields": ["a"], "unique": "yes"}`, "/unique"},
		{"create_index", `{"collection": "c", "name": "i", "fields": ["a"], "unique": 1}`, "/unique"},
		{"create_index", `{"collection": "c", "name": "i", "fields": ["a"], "unique": null}`, "/unique"},
		{"create_scalar_index", `{"collection": "c"}`, "/field"},
		{"create_scalar_index", `{"collection": "c", "field": "..a"}`, "/field"},
		{"create_scalar_index", `{"collection": "c", "field": "a", "unique": "true"}`, "/unique"},
		{"create_scalar_index", `{"collection": "c", "field": "a", "name": ""}`, "/name"},
		{"create_compound_index", `{"collection": "c", "fields": ["a"]}`, "/fields"},
		{"create_compound_index", `{"collection": "c", "fields": ["a", "$x"]}`, "/fields/1"},
		{"create_compound_index", `{"collection": "c", "fields": ["a", "b"], "unique": "no"}`, "/unique"},
		{"create_compound_index", `{"collection": "", "fields": ["a", "b"]}`, "/collection"},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) { e.in(t).badParams(tc.tool, tc.args, tc.path) })
	}
	// An index name the engine refuses (too long in bytes, though not in
	// characters) is reported with the name in the message.
	r := e.badParams("create_index", `{"collection": "c", "name": "`+strings.Repeat("é", 200)+`", "fields": ["a"]}`, "")
	if !strings.Contains(r.Error.Message, "index name") {
		t.Errorf("message %q", r.Error.Message)
	}
}

// TestSchema: set_schema validates later writes (types, required, unique),
// refuses a schema the documents break, and get_schema tells an undeclared
// schema (null) from a declared empty one ([]); flags are booleans.
func TestSchema(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "c", "id": 1, "doc": {"name": "a", "n": 1}}`)
		if got := e.ok("get_schema", `{"collection": "c"}`); got != `{"fields":null}` {
			t.Fatalf("undeclared schema = %s", got)
		}
		e.fail("get_schema", `{"collection": "nope"}`, "collection_not_found")
		r := e.fail("set_schema", `{"collection": "c", "fields": [{"name": "n", "type": "float"}]}`, "schema_violation")
		if !strings.Contains(r.Error.Message, `"n"`) {
			t.Errorf("schema_violation %q does not name the field", r.Error.Message)
		}
		got := e.ok("set_schema", `{"collection": "c", "fields": [{"name": "name", "type": "text", "required": true, "unique": true}, {"name": "n", "type": "int"}, {"name": "v", "type": "vector"}, {"name": "any", "type": "any"}]}`)
		want := `{"collection":"c","fields":[{"name":"name","type":"text","required":true,"unique":true},{"name":"n","type":"int"},{"name":"v","type":"vector"},{"name":"any","type":"any"}]}`
		if got != want {
			t.Fatalf("set_schema = %s", got)
		}
		if got := e.ok("get_schema", `{"collection": "c"}`); got != `{"fields":[{"name":"name","type":"text","required":true,"unique":true},{"name":"n","type":"int"},{"name":"v","type":"vector"},{"name":"any","type":"any"}]}` {
			t.Fatalf("get_schema = %s", got)
		}
		e.fail("store", `{"collection": "c", "id": 2, "doc": {"n": 1}}`, "schema_violation")                  // required
		e.fail("store", `{"collection": "c", "id": 2, "doc": {"name": "b", "n": 1.0}}`, "schema_violation")   // int, not float
		e.fail("store", `{"collection": "c", "id": 2, "doc": {"name": "b", "v": [0.5]}}`, "schema_violation") // an array, not a vector
		e.fail("store", `{"collection": "c", "id": 2, "doc": {"name": "a"}}`, "unique_violation")             // unique
		e.fail("patch", `{"collection": "c", "id": 1, "patch": {"name": null}}`, "schema_violation")          // required
		e.ok("store", `{"collection": "c", "id": 2, "doc": {"name": "b", "n": 2, "v": {"$vector": [0.5]}, "any": [1]}}`)
		// fields [] declares an empty schema: distinct from none.
		e.ok("set_schema", `{"collection": "e", "fields": []}`)
		if got := e.ok("get_schema", `{"collection": "e"}`); got != `{"fields":[]}` {
			t.Fatalf("declared empty schema = %s", got)
		}
		e.ok("store", `{"collection": "e", "id": 1, "doc": {"x": 1}}`)
		// Replacing the schema drops the unique index it implied.
		e.ok("set_schema", `{"collection": "c", "fields": [{"name": "name", "type": "text"}]}`)
		e.ok("store", `{"collection": "c", "id": 3, "doc": {"name": "a"}}`)
	})
}

// TestSchemaErrors: present-but-non-boolean flags are bad_params naming
// the flag; types outside the list, names the engine refuses and a name
// declared twice are bad_params at that field.
func TestSchemaErrors(t *testing.T) {
	e := connect(t, Config{})
	for args, path := range map[string]string{
		`{"collection": "c", "fields": [{"name": "a", "type": "int", "required": "yes"}]}`:                         "/fields/0/required",
		`{"collection": "c", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "int", "unique": 1}]}`: "/fields/1/unique",
		`{"collection": "c", "fields": [{"name": "a", "type": "int", "unique": null}]}`:                            "/fields/0/unique",
		`{"collection": "c", "fields": [{"name": "a", "type": "integer"}]}`:                                        "/fields/0/type",
		`{"collection": "c", "fields": [{"name": "a", "type": "null"}]}`:                                           "/fields/0/type",
		`{"collection": "c", "fields": [{"name": "a"}]}`:                                                           "/fields/0/type",
		`{"collection": "c", "fields": [{"type": "int"}]}`:                                                         "/fields/0/name",
		`{"collection": "c", "fields": [{"name": "a", "type": "int", "extra": 1}]}`:                                "/fields/0/extra",
		`{"collection": "c", "fields": [{"name": "a.b", "type": "int"}]}`:                                          "/fields/0/name",
		`{"collection": "c", "fields": [{"name": "$a", "type": "int"}]}`:                                           "/fields/0/name",
		`{"collection": "c", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "text"}]}`:             "/fields/1/name",
		`{"collection": "c", "fields": {"name": "a"}}`:                                                             "/fields",
		`{"collection": "c"}`: "/fields",
		`{"fields": []}`:      "/collection",
	} {
		t.Run(args, func(t *testing.T) {
			if r := e.in(t).badParams("set_schema", args, path); r.Error.Message == "" {
				t.Errorf("%s: no message", args)
			}
		})
	}
	if got := e.ok("list_collections", `{}`); got != `{"collections":[]}` {
		t.Fatalf("a refused set_schema created a collection: %s", got)
	}
}

// TestListCollections: every collection with its count, indexes (the
// unique schema fields' too) and schema, in name order.
func TestListCollections(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		if got := e.ok("list_collections", `{}`); got != `{"collections":[]}` {
			t.Fatalf("empty store = %s", got)
		}
		e.ok("store", `{"collection": "b", "id": 1, "doc": {}}`)
		e.ok("store", `{"collection": "b", "id": 2, "doc": {}}`)
		e.ok("create_scalar_index", `{"collection": "a", "field": "x"}`)
		e.ok("set_schema", `{"collection": "a", "fields": [{"name": "k", "type": "text", "unique": true}]}`)
		want := `{"collections":[{"name":"a","count":0,"indexes":[{"name":"x","fields":["x"]},{"name":"$unique:k","fields":["k"],"unique":true}],"schema":{"fields":[{"name":"k","type":"text","unique":true}]}},` +
			`{"name":"b","count":2,"indexes":[],"schema":null}]}`
		if got := e.ok("list_collections", `{}`); got != want {
			t.Fatalf("list_collections = %s\nwant %s", got, want)
		}
		e.badParams("list_collections", `{"collection": "a"}`, "/collection")
	})
}
