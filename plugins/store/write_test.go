package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/internal/fastpath/fastpathtest"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// writeFails calls write with ops and wants it to fail at operation op
// with kind (and path, when not ""); nothing the call wrote is left.
func (e *env) writeFails(ops string, op int, kind, path string) errReply {
	e.t.Helper()
	before := e.ok("list_collections", `{}`)
	res := e.call("write", `{"ops": `+ops+`}`)
	var r errReply
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil || !res.IsError || r.Error.Kind != kind || r.Error.Op == nil || *r.Error.Op != op || r.Error.Path != path {
		e.t.Fatalf("write %s: %s; want %s at operation %d, path %q", ops, text(res), kind, op, path)
	}
	if after := e.ok("list_collections", `{}`); after != before {
		e.t.Fatalf("write %s failed but changed the store: %s, was %s", ops, after, before)
	}
	return r
}

// TestWrite: one result per operation, in order, each the single tool's
// own result; each operation sees those before it, across collections.
func TestWrite(t *testing.T) {
	e := connect(t, Config{})
	got := e.ok("write", `{"ops": [
		{"op": "store", "collection": "notes", "id": "n1", "doc": {"t": "a", "n": 1}},
		{"op": "patch", "collection": "notes", "id": "n1", "patch": {"n": 2.0, "t": null}},
		{"op": "insert_auto", "collection": "log", "doc": {"e": 1}},
		{"op": "insert_auto", "collection": "log", "doc": {"e": 2}},
		{"op": "compare_and_set", "collection": "notes", "id": "n1", "expect_revision": 2, "doc": {"n": 3}},
		{"op": "link", "from": {"collection": "log", "id": 1}, "type": "about", "to": {"collection": "notes", "id": "n1"}, "props": {"w": 1}},
		{"op": "unlink", "from": {"collection": "log", "id": 2}, "type": "about", "to": {"collection": "notes", "id": "n1"}},
		{"op": "delete", "collection": "log", "id": 2},
		{"op": "delete", "collection": "nowhere", "id": 2}]}`)
	want := `{"results":[{"id":"n1","revision":1},{"id":"n1","revision":2,"doc":{"n":2.0}},{"id":1,"revision":3},{"id":2,"revision":4},` +
		`{"id":"n1","revision":5},{"created":true},{"removed":false},{"deleted":true},{"deleted":false}]}`
	if got != want {
		t.Fatalf("write = %s\nwant %s", got, want)
	}
	if got := e.ok("get", `{"collection": "notes", "id": "n1"}`); got != `{"id":"n1","revision":5,"doc":{"n":3}}` {
		t.Errorf("n1 after the write: %s", got)
	}
	if got := e.ok("neighbors", `{"collection": "log", "id": 1}`); !strings.Contains(got, `"props":{"w":1}`) {
		t.Errorf("log 1's edges: %s", got)
	}
	if got := e.ok("list_collections", `{}`); strings.Contains(got, "nowhere") {
		t.Errorf("delete created its collection: %s", got)
	}
}

// TestWriteFailure: a failing operation fails the call with the kind its
// tool reports, its index and (bad_params) its path under /ops/<index>;
// nothing of the call is written.
func TestWriteFailure(t *testing.T) {
	e := connect(t, Config{})
	e.ok("create_scalar_index", `{"collection": "users", "field": "email", "unique": true}`)
	e.ok("set_schema", `{"collection": "typed", "fields": [{"name": "n", "type": "int", "required": true}]}`)
	e.ok("store", `{"collection": "users", "id": "u1", "doc": {"email": "a@x"}}`)
	first := `{"op": "store", "collection": "users", "id": "u2", "doc": {"email": "b@x"}}, {"op": "store", "collection": "fresh", "id": 1, "doc": {}}, `
	e.writeFails(`[`+first+`{"op": "store", "collection": "users", "id": "u3", "doc": {"email": "a@x"}}]`, 2, "unique_violation", "")
	e.writeFails(`[`+first+`{"op": "store", "collection": "typed", "id": 1, "doc": {"n": "x"}}]`, 2, "schema_violation", "")
	e.writeFails(`[`+first+`{"op": "patch", "collection": "users", "id": "zz", "patch": {}}]`, 2, "not_found", "")
	e.writeFails(`[`+first+`{"op": "link", "from": {"collection": "users", "id": "u2"}, "type": "t", "to": {"collection": "nope", "id": 1}}]`, 2, "collection_not_found", "")
	r := e.writeFails(`[`+first+`{"op": "compare_and_set", "collection": "users", "id": "u1", "expect_revision": 9, "doc": {}}]`, 2, "revision_mismatch", "")
	if r.Error.Revision == nil || *r.Error.Revision != 1 || r.Error.Exists == nil || !*r.Error.Exists {
		t.Errorf("revision_mismatch without the document's state: %+v", r.Error)
	}
	// Arguments are checked as the single tools check them, at their
	// paths under the operation.
	for ops, path := range map[string]string{
		`{"op": "store", "collection": "c", "id": 1, "doc": [1]}`:                                                "/ops/2/doc",
		`{"op": "store", "collection": "c", "id": 1.5, "doc": {}}`:                                               "/ops/2/id",
		`{"op": "store", "collection": "c", "id": 1}`:                                                            "/ops/2/doc",
		`{"op": "store", "collection": "", "id": 1, "doc": {}}`:                                                  "/ops/2/collection",
		`{"op": "insert_auto", "collection": "c", "doc": {}, "id": 3}`:                                           "/ops/2/id",
		`{"op": "patch", "collection": "c", "id": 1, "doc": {}}`:                                                 "/ops/2/doc",
		`{"op": "compare_and_set", "collection": "c", "id": 1, "doc": {}}`:                                       "/ops/2",
		`{"op": "compare_and_set", "collection": "c", "id": 1, "expect_revision": -1, "doc": {}}`:                "/ops/2/expect_revision",
		`{"op": "link", "from": {"collection": "c", "id": {}}, "type": "t", "to": {"collection": "c", "id": 1}}`: "/ops/2/from/id",
		`{"op": "unlink", "from": {"collection": "c", "id": 1}, "type": "", "to": {"collection": "c", "id": 1}}`: "/ops/2/type",
	} {
		e.writeFails(`[`+first+ops+`]`, 2, mcpcore.KindBadParams, path)
	}
	e.badParams("write", `{"ops": [`+first+`{"op": "upsert", "collection": "c"}]}`, "/ops/2/op")
	e.badParams("write", `{"ops": [`+first+`{"collection": "c"}]}`, "/ops/2/op")
	// The failed calls left nothing: the index and the collections agree.
	if got := e.ok("count", `{"collection": "users", "filter": {}}`); got != `{"count":1}` {
		t.Errorf("users after the failed writes: %s", got)
	}
	e.ok("write", `{"ops": [`+first+`{"op": "store", "collection": "users", "id": "u3", "doc": {"email": "c@x"}}]}`)
	e.fail("store", `{"collection": "users", "id": "u4", "doc": {"email": "b@x"}}`, "unique_violation")
}

// TestWriteLimit: more operations than write_ops are refused with kind
// limit before anything is written; write_ops operations are applied.
func TestWriteLimit(t *testing.T) {
	e, err := connectWith(t, Config{}, json.RawMessage(`{"write_ops": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	ops := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"op": "store", "collection": "c", "id": %d, "doc": {}}`, i)
		}
		return `{"ops": [` + b.String() + `]}`
	}
	r := e.fail("write", ops(4), mcpcore.KindLimit)
	if r.Error.Limit != LimitWriteOps || !strings.Contains(r.Error.Message, "nothing was written") {
		t.Fatalf("4 operations: %+v", r.Error)
	}
	if got := e.ok("list_collections", `{}`); strings.Contains(got, `"c"`) {
		t.Fatalf("a refused write created its collection: %s", got)
	}
	e.ok("write", ops(3))
	if got := e.ok("count", `{"collection": "c", "filter": {}}`); got != `{"count":3}` {
		t.Fatalf("after 3 operations: %s", got)
	}
	// The default is 10000, and the limit is listed with the others.
	e2 := connect(t, Config{})
	r = e2.fail("write", ops(10_001), mcpcore.KindLimit)
	if r.Error.Limit != LimitWriteOps {
		t.Fatalf("10001 operations: %+v", r.Error)
	}
	e2.ok("write", ops(10_000))
	if _, err := connectWith(t, Config{}, json.RawMessage(`{"write_ops": 0}`)); err == nil {
		t.Fatal("write_ops 0 was accepted")
	}
}

// TestWritePlainOps: the operations write converts directly (plainWrite)
// give what the general path (each tool's validation and decoding) gives,
// errors included; every other form takes the general path.
func TestWritePlainOps(t *testing.T) {
	long := strings.Repeat("c", maxNameChars)
	for raw, plain := range map[string]bool{
		`{"op": "store", "collection": "notes", "id": "n1", "doc": {"text": "a b", "n": 1, "f": 1.0}}`: true,
		`{"doc": {"v": {"$vector": [0.5, 1]}}, "id": -42, "collection": "notes", "op": "store"}`:       true,
		`{"op": "store", "collection": "notes", "id": 0, "doc": {}}`:                                   true,
		`{"op": "store", "collection": "notes", "id": 9223372036854775807, "doc": {}}`:                 true,
		`{"op": "store", "collection": "` + long + `", "id": "x", "doc": {}}`:                          true,
		`{"op": "store", "collection": "notes", "id": "", "doc": {}}`:                                  true, // refused by the engine, as on the general path
		`{"op": "store", "collection": "notes", "id": "n1", "doc": {"x": {"$omitted": "vector"}}}`:     true,
		`{"op": "store", "collection": "notes", "id": "n1", "doc": {"b": {"$bytes": "!"}}}`:            true,
		`{"op": "insert_auto", "collection": "log", "doc": {"e": [1, 2]}}`:                             true,
		`{"op": "store", "collection": "` + long + `c", "id": "x", "doc": {}}`:                         false,
		`{"op": "store", "collection": "", "id": "x", "doc": {}}`:                                      false,
		`{"op": "store", "collection": "n\u00f6tes", "id": "x", "doc": {}}`:                            false,
		`{"op": "store", "collection": "notes", "id": "\u0041", "doc": {}}`:                            false,
		`{"op": "store", "collection": "notes", "id": 1.0, "doc": {}}`:                                 false,
		`{"op": "store", "collection": "notes", "id": 1e3, "doc": {}}`:                                 false,
		`{"op": "store", "collection": "notes", "id": 99999999999999999999, "doc": {}}`:                false,
		`{"op": "store", "collection": "notes", "id": true, "doc": {}}`:                                false,
		`{"op": "store", "collection": "notes", "doc": {}}`:                                            false,
		`{"op": "store", "collection": "notes", "id": 1, "doc": [1]}`:                                  false,
		`{"op": "store", "collection": "notes", "id": 1}`:                                              false,
		`{"op": "store", "collection": 7, "id": 1, "doc": {}}`:                                         false,
		`{"op": "store", "collection": "notes", "id": 1, "doc": {}, "extra": 1}`:                       false,
		`{"op": "store", "op": "insert_auto", "collection": "notes", "id": 1, "doc": {}}`:              false,
		`{"op": "store", "collection": "a", "collection": "b", "id": 1, "doc": {}}`:                    false,
		`{"op": "insert_auto", "collection": "log", "id": 1, "doc": {}}`:                               false,
		`{"op": "patch", "collection": "notes", "id": 1, "patch": {}}`:                                 false,
		`{"op": "st\u006fre", "collection": "notes", "id": 1, "doc": {}}`:                              false,
		`{"\u006fp": "store", "collection": "notes", "id": 1, "doc": {}}`:                              true,
	} {
		if _, ok := plainWrite([]byte(raw)); ok != plain {
			t.Errorf("plainWrite(%s) took it: %v, want %v", raw, ok, plain)
		}
		got, gotErr := decodeWriteOp(json.RawMessage(raw))
		want, wantErr := decodeOpFully(json.RawMessage(raw))
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || got.Kind != want.Kind || got.Collection != want.Collection ||
			!docstore.Equal(got.ID, want.ID) || !docstore.Equal(got.Doc, want.Doc) {
			t.Errorf("%s:\ndecoded %+v, %v\nin full %+v, %v", raw, got, gotErr, want, wantErr)
		}
	}
}

// writeArgInputs are arguments of write, plain and not.
var writeArgInputs = []string{
	`{"ops": [{"op": "store", "collection": "c", "id": 1, "doc": {}}, {"op": "delete", "collection": "c", "id": 1}]}`,
	`{"ops": []}`,
	`{"ops": null}`,
	`{"ops": {}}`,
	`{"ops": [1]}`,
	`{"ops": [[]]}`,
	`{"ops": [{}]}`,
	`{"ops": [{"op": null}]}`,
	`{"ops": [{"op": 1}]}`,
	`{"ops": [{"op": "upsert"}]}`,
	`{"ops": [{"op": "store", "op": "upsert"}]}`,
	`{"ops": [{"op": "upsert", "op": "store"}]}`,
	`{"ops": [{"op": "st\u006fre", "collection": "c", "id": 1, "doc": {}}]}`,
	`{"ops": [{"\u006fp": "store", "collection": "c", "id": 1, "doc": {}}]}`,
	`{"ops": [{"op": "store"}], "extra": 1}`,
	`{"ops": [{"op": "store"}], "ops": []}`,
	`{"Ops": [{"op": "store"}]}`,
	`{}`,
}

// TestWriteArgsDecoder: write's own decoder refuses what the input schema
// refuses, and decodes every input as the host's general path does.
func TestWriteArgsDecoder(t *testing.T) {
	schema, err := inputSchema[writeArgs]()
	if err != nil {
		t.Fatal(err)
	}
	fastpathtest.RefusesAsSchema(t, schema, func() fastpath.ArgumentsDecoder { return new(writeArgs) }, writeArgInputs...)
	plain := 0
	for _, in := range writeArgInputs {
		var got writeArgs
		gotErr := got.DecodeArguments(json.RawMessage(in))
		want, wantErr := writeArgsDecoder().Decode(json.RawMessage(in))
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || len(got.Ops) != len(want.Ops) {
			t.Errorf("%s: decoded %v, %v; the general path %v, %v", in, got.Ops, gotErr, want.Ops, wantErr)
			continue
		}
		for i := range got.Ops {
			if !jsonEqual(got.Ops[i].raw, want.Ops[i].raw) {
				t.Errorf("%s: operation %d is %s, the general path's %s", in, i, got.Ops[i].raw, want.Ops[i].raw)
			}
		}
		if _, ok := plainOps([]byte(in)); ok {
			plain++
		}
	}
	if plain != 3 {
		t.Errorf("%d inputs in the plain form, want 3", plain)
	}
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}
