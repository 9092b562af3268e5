package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// typedDoc holds every kind of value; it must come back byte for byte.
const typedDoc = `{"int":1,"float":1.0,"frac":2.5,"exp":1e+21,"big":9007199254740993,"neg":-7,"text":"héllo \"q\"",` +
	`"bool":true,"null":null,"vec":{"$vector":[0.5,-0.25]},"bytes":{"$bytes":"AAH/"},"arr":[1,1.0,"x",[]],` +
	`"map":{"b":1,"a":{"$map":{"$vector":"not a vector"}}}}`

// TestStoreGet: documents round-trip exactly (ints stay ints, floats
// floats, vectors, bytes and literal maps survive; get returns vectors
// with vectors: true), ids are strings or integers (7 and "7" differ), and
// store replaces the whole document with a new revision.
func TestStoreGet(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		if got := e.ok("store", `{"collection": "c", "id": "a", "doc": `+typedDoc+`}`); got != `{"id":"a","revision":1}` {
			t.Fatalf("store = %s", got)
		}
		if got := e.ok("get", `{"collection": "c", "id": "a", "vectors": true}`); got != `{"id":"a","revision":1,"doc":`+typedDoc+`}` {
			t.Fatalf("get = %s\nwant the document as stored", got)
		}
		e.ok("store", `{"collection": "c", "id": 7, "doc": {"n": 7}}`)
		e.ok("store", `{"collection": "c", "id": "7", "doc": {"s": "7"}}`)
		if got := e.ok("get", `{"collection": "c", "id": 7}`); got != `{"id":7,"revision":2,"doc":{"n":7}}` {
			t.Fatalf("get 7 = %s", got)
		}
		if got := e.ok("get", `{"collection": "c", "id": "7"}`); got != `{"id":"7","revision":3,"doc":{"s":"7"}}` {
			t.Fatalf(`get "7" = %s`, got)
		}
		if got := e.ok("store", `{"collection": "c", "id": 7, "doc": {"m": 1.5}}`); got != `{"id":7,"revision":4}` {
			t.Fatalf("replace = %s", got)
		}
		if got := e.ok("get", `{"collection": "c", "id": 7}`); got != `{"id":7,"revision":4,"doc":{"m":1.5}}` {
			t.Fatalf("get after replace = %s", got)
		}
		big := `{"collection": "c", "id": -9223372036854775808, "doc": {}}`
		if got := e.ok("store", big); got != `{"id":-9223372036854775808,"revision":5}` {
			t.Fatalf("int64 id = %s", got)
		}
	})
}

// TestStoreErrors: arguments the schema or the engine refuses are
// bad_params at the argument, and nothing is written.
func TestStoreErrors(t *testing.T) {
	e := connect(t, Config{})
	for args, path := range map[string]string{
		`{"id": 1, "doc": {}}`:                                                   "/collection",
		`{"collection": "", "id": 1, "doc": {}}`:                                 "/collection",
		`{"collection": "` + strings.Repeat("c", 257) + `", "id": 1, "doc": {}}`: "/collection",
		`{"collection": "` + strings.Repeat("é", 200) + `", "id": 1, "doc": {}}`: "/collection", // 400 bytes: the engine refuses it
		`{"collection": 3, "id": 1, "doc": {}}`:                                  "/collection",
		`{"collection": "c", "doc": {}}`:                                         "/id",
		`{"collection": "c", "id": true, "doc": {}}`:                             "/id",
		`{"collection": "c", "id": null, "doc": {}}`:                             "/id",
		`{"collection": "c", "id": 1.5, "doc": {}}`:                              "/id",
		`{"collection": "c", "id": 1.0, "doc": {}}`:                              "/id", // a float, though JSON Schema calls it an integer
		`{"collection": "c", "id": 1e3, "doc": {}}`:                              "/id",
		`{"collection": "c", "id": 18446744073709551616, "doc": {}}`:             "/id", // beyond int64: a float
		`{"collection": "c", "id": "", "doc": {}}`:                               "/id",
		`{"collection": "c", "id": {"a": 1}, "doc": {}}`:                         "/id",
		`{"collection": "c", "id": 1}`:                                           "/doc",
		`{"collection": "c", "id": 1, "doc": [1]}`:                               "/doc",
		`{"collection": "c", "id": 1, "doc": "x"}`:                               "/doc",
		`{"collection": "c", "id": 1, "doc": {"$vector": [1, 2]}}`:               "/doc", // a vector, not a document
		`{"collection": "c", "id": 1, "doc": {}, "extra": 1}`:                    "/extra",
	} {
		t.Run(args, func(t *testing.T) { e.in(t).badParams("store", args, path) })
	}
	// A refused store writes nothing, not even its collection.
	e.fail("count", `{"collection": "c"}`, "collection_not_found")
}

// TestInsertAuto: ids grow and are never reused, even after a delete, and
// skip ids taken by store.
func TestInsertAuto(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		for i := 1; i <= 3; i++ {
			if got := e.ok("insert_auto", `{"collection": "c", "doc": {"i": 1.0}}`); got != fmt.Sprintf(`{"id":%d,"revision":%d}`, i, i) {
				t.Fatalf("insert_auto %d = %s", i, got)
			}
		}
		e.ok("delete", `{"collection": "c", "id": 3}`)
		e.ok("store", `{"collection": "c", "id": 4, "doc": {}}`)
		if got := e.ok("insert_auto", `{"collection": "c", "doc": {}}`); got != `{"id":5,"revision":5}` {
			t.Fatalf("insert_auto after delete and store = %s", got)
		}
		if got := e.ok("get", `{"collection": "c", "id": 1}`); got != `{"id":1,"revision":1,"doc":{"i":1.0}}` {
			t.Fatalf("get = %s", got)
		}
		e.badParams("insert_auto", `{"collection": "c", "doc": [1]}`, "/doc")
		e.badParams("insert_auto", `{"collection": "c", "doc": {"$bytes": "AAE="}}`, "/doc")
		e.badParams("insert_auto", `{"collection": "c"}`, "/doc")
	})
}

// TestGetErrors: a missing document is not_found, a missing collection
// collection_not_found; bad ids are bad_params.
func TestGetErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		r := e.fail("get", `{"collection": "nope", "id": 1}`, "collection_not_found")
		if !strings.Contains(r.Error.Message, `"nope"`) {
			t.Errorf("message %q does not name the collection", r.Error.Message)
		}
		e.ok("store", `{"collection": "c", "id": 1, "doc": {}}`)
		r = e.fail("get", `{"collection": "c", "id": 2}`, "not_found")
		if !strings.Contains(r.Error.Message, "2") {
			t.Errorf("message %q does not name the id", r.Error.Message)
		}
		e.fail("get", `{"collection": "c", "id": "1"}`, "not_found")
		e.badParams("get", `{"collection": "c", "id": 1.5}`, "/id")
		e.badParams("get", `{"collection": "c"}`, "/id")
		e.badParams("get", `{"collection": "c", "id": []}`, "/id")
	})
}

// TestPatch: RFC 7386 merge: null deletes, objects merge recursively, any
// other value (arrays, vectors) replaces; numbers keep their kind. The
// merged document comes back in the default shape (its vector left out,
// as its marker).
func TestPatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "c", "id": "p", "doc": {"a": 1, "b": {"x": 1, "y": 2}, "arr": [1, 2], "gone": true}}`)
		got := e.ok("patch", `{"collection": "c", "id": "p", "patch": {"a": 2.0, "b": {"y": null, "z": 3}, "arr": [3], "gone": null, "v": {"$vector": [1.5]}}}`)
		want := `{"id":"p","revision":2,"doc":{"a":2.0,"b":{"x":1,"z":3},"arr":[3],"v":{"$omitted":"vector","dims":1}}}`
		if got != want {
			t.Fatalf("patch = %s\nwant    %s", got, want)
		}
		if got := e.ok("get", `{"collection": "c", "id": "p"}`); got != want {
			t.Fatalf("get after patch = %s", got)
		}
		if got := e.ok("get", `{"collection": "c", "id": "p", "vectors": true}`); got != `{"id":"p","revision":2,"doc":{"a":2.0,"b":{"x":1,"z":3},"arr":[3],"v":{"$vector":[1.5]}}}` {
			t.Fatalf("get after patch, with vectors = %s", got)
		}
		e.fail("patch", `{"collection": "c", "id": "q", "patch": {"a": 1}}`, "not_found")
		e.fail("patch", `{"collection": "nope", "id": "q", "patch": {"a": 1}}`, "not_found")
		e.badParams("patch", `{"collection": "c", "id": "p", "patch": [1]}`, "/patch")
		e.badParams("patch", `{"collection": "c", "id": "p", "patch": {"$vector": [1]}}`, "/patch")
		e.badParams("patch", `{"collection": "c", "id": "p"}`, "/patch")
		e.badParams("patch", `{"collection": "c", "id": 0.5, "patch": {}}`, "/id")
	})
}

// TestCompareAndSet: by revision or by value, exactly one; a mismatch
// writes nothing and carries the current revision and existence.
func TestCompareAndSet(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		cas := func(expect, doc string) string {
			return `{"collection": "c", "id": "k", ` + expect + `, "doc": ` + doc + `}`
		}
		if got := e.ok("compare_and_set", cas(`"expect_revision": 0`, `{"v": 1}`)); got != `{"id":"k","revision":1}` {
			t.Fatalf("create by revision 0 = %s", got)
		}
		r := e.fail("compare_and_set", cas(`"expect_revision": 0`, `{"v": 2}`), "revision_mismatch")
		if r.Error.Revision == nil || *r.Error.Revision != 1 || r.Error.Exists == nil || !*r.Error.Exists || !strings.Contains(r.Error.Message, "revision 1") {
			t.Fatalf("mismatch = %+v", r.Error)
		}
		e.ok("compare_and_set", cas(`"expect_revision": 1`, `{"v": 2}`))
		e.fail("compare_and_set", cas(`"expect_revision": 1`, `{"v": 3}`), "revision_mismatch")
		// By value: fields in any order; int and float differ.
		e.ok("store", `{"collection": "c", "id": "k", "doc": {"a": 1, "b": "x"}}`)
		e.fail("compare_and_set", cas(`"expect_value": {"b": "x", "a": 1.0}`, `{}`), "revision_mismatch")
		if got := e.ok("compare_and_set", cas(`"expect_value": {"b": "x", "a": 1}`, `{"c": 1}`)); got != `{"id":"k","revision":4}` {
			t.Fatalf("by value = %s", got)
		}
		r = e.fail("compare_and_set", cas(`"expect_value": null`, `{}`), "revision_mismatch")
		if *r.Error.Revision != 4 || !*r.Error.Exists {
			t.Fatalf("expect_value null on an existing document: %+v", r.Error)
		}
		// A missing document: revision 0, exists false.
		r = e.fail("compare_and_set", `{"collection": "c", "id": "m", "expect_revision": 9, "doc": {}}`, "revision_mismatch")
		if r.Error.Revision == nil || *r.Error.Revision != 0 || r.Error.Exists == nil || *r.Error.Exists {
			t.Fatalf("mismatch on a missing document: %+v", r.Error)
		}
		e.fail("compare_and_set", `{"collection": "c", "id": "m", "expect_value": {}, "doc": {}}`, "revision_mismatch")
		e.ok("compare_and_set", `{"collection": "c", "id": "m", "expect_value": null, "doc": {"new": true}}`)
		if got := e.ok("get", `{"collection": "c", "id": "m"}`); got != `{"id":"m","revision":5,"doc":{"new":true}}` {
			t.Fatalf("get = %s", got)
		}
		// Exactly one expectation, well formed.
		e.badParams("compare_and_set", cas(`"expect_revision": 4, "expect_value": null`, `{}`), "/expect_value")
		e.badParams("compare_and_set", `{"collection": "c", "id": "k", "doc": {}}`, "")
		for _, bad := range []string{`"1"`, `1.5`, `-1`, `1.0`, `1e2`, `null`, `18446744073709551616`} {
			e.badParams("compare_and_set", cas(`"expect_revision": `+bad, `{}`), "/expect_revision")
		}
		e.badParams("compare_and_set", cas(`"expect_revision": 4`, `[]`), "/doc")
		if got := e.ok("get", `{"collection": "c", "id": "k"}`); got != `{"id":"k","revision":4,"doc":{"c":1}}` {
			t.Fatalf("a failed compare_and_set wrote: %s", got)
		}
	})
}

// TestDelete: deleted says whether the document existed; a missing
// collection deletes nothing.
func TestDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "c", "id": 1, "doc": {}}`)
		if got := e.ok("delete", `{"collection": "c", "id": 1}`); got != `{"deleted":true}` {
			t.Fatalf("delete = %s", got)
		}
		if got := e.ok("delete", `{"collection": "c", "id": 1}`); got != `{"deleted":false}` {
			t.Fatalf("delete again = %s", got)
		}
		if got := e.ok("delete", `{"collection": "nope", "id": 1}`); got != `{"deleted":false}` {
			t.Fatalf("delete in a missing collection = %s", got)
		}
		e.fail("get", `{"collection": "c", "id": 1}`, "not_found")
		e.badParams("delete", `{"collection": "c", "id": 1.5}`, "/id")
	})
}

// TestClosedStore: a call that reaches the plugin after its Close (a late
// handler) fails cleanly with kind unavailable.
func TestClosedStore(t *testing.T) {
	e := connect(t, Config{})
	e.ok("store", `{"collection": "c", "id": 1, "doc": {}}`)
	if err := e.plugin.db.Close(); err != nil {
		t.Fatal(err)
	}
	e.fail("get", `{"collection": "c", "id": 1}`, mcpcore.KindUnavailable)
	e.fail("store", `{"collection": "c", "id": 1, "doc": {}}`, mcpcore.KindUnavailable)
}
