package docstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpkit/mcpkit/internal/pgtest"
)

// backends runs fn against an in-memory store, a file store and a store
// on PostgreSQL (postgres_test.go): the engine has one semantics on all.
func backends(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Helper()
	for _, name := range []string{"memory", "file", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, openStore(t, name))
		})
	}
}

// openStore opens a store of the named backend, closed when the test ends.
func openStore(t *testing.T, backend string) *Store {
	t.Helper()
	path := ""
	switch backend {
	case "file":
		path = filepath.Join(t.TempDir(), "store.db")
	case "postgres":
		path = pgtest.Shared(t).StoreURL()
	}
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Verify(context.Background()); err != nil {
			t.Error(err)
		}
		s.Close()
	})
	return s
}

// j parses a JSON value in the store's conversion (FromJSON).
func j(t testing.TB, s string) Value {
	t.Helper()
	v, err := FromJSON([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// js renders a value as JSON.
func js(t testing.TB, v Value) string {
	t.Helper()
	b, err := ToJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// flt parses a filter.
func flt(t testing.TB, s string) *Filter {
	t.Helper()
	f, err := ParseFilter(j(t, s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return f
}

// wantCode fails unless err is an engine error of code c.
func wantCode(t testing.TB, err error, c Code) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != c {
		t.Fatalf("error %v, want code %s", err, c)
	}
	return e
}

var ctx = context.Background()

func TestPutGetReplace(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		d1, err := s.Put(ctx, "c", Text("a"), j(t, `{"n":1,"f":1.0,"v":{"$vector":[1,2.5]},"b":{"$bytes":"AP8="},"m":{"z":1,"a":[true,null]}}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "c", Text("a"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != d1.Revision || js(t, got.Value) != js(t, d1.Value) {
			t.Fatalf("got %d %s, want %d %s", got.Revision, js(t, got.Value), d1.Revision, js(t, d1.Value))
		}
		if n, _ := got.Value.Get("n"); n.Kind() != KindInt {
			t.Error("an int came back as", n.Kind())
		}
		if f, _ := got.Value.Get("f"); f.Kind() != KindFloat {
			t.Error("a float came back as", f.Kind())
		}
		d2, err := s.Put(ctx, "c", Text("a"), j(t, `{"n":2}`))
		if err != nil || d2.Revision <= d1.Revision {
			t.Fatalf("replace: rev %d after %d, %v", d2.Revision, d1.Revision, err)
		}
		if got, _ := s.Get(ctx, "c", Text("a")); js(t, got.Value) != `{"n":2}` {
			t.Errorf("replaced document is %s", js(t, got.Value))
		}
		if _, err := s.Put(ctx, "c", Int(7), j(t, `{"x":1}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "c", Int(7)); err != nil {
			t.Fatal("an int id:", err)
		}
		wantCode(t, func() error { _, err := s.Get(ctx, "c", Text("nope")); return err }(), CodeNotFound)
		wantCode(t, func() error { _, err := s.Get(ctx, "nope", Text("a")); return err }(), CodeCollectionNotFound)
		wantCode(t, func() error { _, err := s.Put(ctx, "c", Text(""), j(t, `{}`)); return err }(), CodeInvalid)
		wantCode(t, func() error { _, err := s.Put(ctx, "c", Float(1), j(t, `{}`)); return err }(), CodeInvalid)
		wantCode(t, func() error { _, err := s.Put(ctx, "c", Text("x"), j(t, `[1]`)); return err }(), CodeInvalid)
		wantCode(t, func() error { _, err := s.Put(ctx, "", Text("x"), j(t, `{}`)); return err }(), CodeInvalid)
	})
}

func TestInsertAutoIDs(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.Put(ctx, "c", Int(2), j(t, `{"taken":true}`)); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for range 3 {
			d, err := s.Insert(ctx, "c", j(t, `{"x":1}`))
			if err != nil {
				t.Fatal(err)
			}
			i, _ := d.ID.Int()
			ids = append(ids, i)
		}
		if !slices.IsSorted(ids) || slices.Contains(ids, 2) || len(slices.Compact(slices.Clone(ids))) != 3 {
			t.Fatalf("auto ids %v: want increasing, distinct, skipping the taken 2", ids)
		}
		if _, err := s.Delete(ctx, "c", Int(ids[2])); err != nil {
			t.Fatal(err)
		}
		d, err := s.Insert(ctx, "c", j(t, `{"x":2}`))
		if i, _ := d.ID.Int(); err != nil || i <= ids[2] {
			t.Fatalf("after a delete, insert gave %d (%v): ids are never reused", i, err)
		}
	})
}

func TestPatch(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.Put(ctx, "c", Text("a"), j(t, `{"keep":1,"drop":2,"m":{"x":1,"y":2},"arr":[1,2],"s":"t"}`)); err != nil {
			t.Fatal(err)
		}
		d, err := s.Patch(ctx, "c", Text("a"), j(t, `{"drop":null,"m":{"y":null,"z":3},"arr":[3],"s":{"now":"map"},"new":1.5}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := js(t, d.Value), `{"keep":1,"m":{"x":1,"z":3},"arr":[3],"s":{"now":"map"},"new":1.5}`; got != want {
			t.Errorf("patched %s, want %s", got, want)
		}
		wantCode(t, func() error { _, err := s.Patch(ctx, "c", Text("zz"), j(t, `{"a":1}`)); return err }(), CodeNotFound)
		wantCode(t, func() error { _, err := s.Patch(ctx, "c", Text("a"), j(t, `[1]`)); return err }(), CodeInvalid)
	})
}

func TestCompareAndSet(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		zero := uint64(0)
		d, err := s.CompareAndSet(ctx, "c", Text("a"), Expect{Revision: &zero}, j(t, `{"v":1}`))
		if err != nil {
			t.Fatal("create with revision 0:", err)
		}
		e := wantCode(t, func() error {
			_, err := s.CompareAndSet(ctx, "c", Text("a"), Expect{Revision: &zero}, j(t, `{"v":2}`))
			return err
		}(), CodeRevisionMismatch)
		if e.Revision != d.Revision || !e.Exists {
			t.Errorf("mismatch carries revision %d exists %v, want %d true", e.Revision, e.Exists, d.Revision)
		}
		rev := d.Revision
		d2, err := s.CompareAndSet(ctx, "c", Text("a"), Expect{Revision: &rev}, j(t, `{"v":2}`))
		if err != nil || d2.Revision <= rev {
			t.Fatal(err)
		}
		old := j(t, `{"v":2}`)
		if _, err := s.CompareAndSet(ctx, "c", Text("a"), Expect{Value: &old}, j(t, `{"v":3}`)); err != nil {
			t.Fatal("by value:", err)
		}
		e = wantCode(t, func() error {
			_, err := s.CompareAndSet(ctx, "c", Text("a"), Expect{Value: &old}, j(t, `{"v":4}`))
			return err
		}(), CodeRevisionMismatch)
		if !e.Exists || e.Revision == 0 {
			t.Errorf("mismatch by value: %+v", e)
		}
		null := Null()
		e = wantCode(t, func() error {
			_, err := s.CompareAndSet(ctx, "c", Text("b"), Expect{Value: &old}, j(t, `{}`))
			return err
		}(), CodeRevisionMismatch)
		if e.Exists || e.Revision != 0 {
			t.Errorf("mismatch on a missing document: %+v", e)
		}
		if _, err := s.CompareAndSet(ctx, "c", Text("b"), Expect{Value: &null}, j(t, `{}`)); err != nil {
			t.Fatal("expect absent:", err)
		}
		wantCode(t, func() error { _, err := s.CompareAndSet(ctx, "c", Text("b"), Expect{}, j(t, `{}`)); return err }(), CodeInvalid)
	})
}

func TestDeleteAndDeleteWhere(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "by_n", Fields: []string{"n"}}, nil); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := s.Put(ctx, "c", Int(int64(i)), j(t, fmt.Sprintf(`{"n":%d}`, i%3))); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := s.Delete(ctx, "c", Int(0)); !ok || err != nil {
			t.Fatal("delete an existing document:", ok, err)
		}
		if ok, err := s.Delete(ctx, "c", Int(0)); ok || err != nil {
			t.Fatal("delete again:", ok, err)
		}
		n, plan, err := s.DeleteWhere(ctx, "c", flt(t, `{"n":1}`))
		if err != nil || n != 3 || plan.Index != "by_n" {
			t.Fatalf("delete_where n=1: %d %+v %v", n, plan, err)
		}
		if c, _, _ := s.Count(ctx, "c", nil); c != 6 {
			t.Fatalf("%d documents left, want 6", c)
		}
	})
}

func TestIndexesAndPlans(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		for i := range 50 {
			doc := fmt.Sprintf(`{"city":"c%d","age":%d,"score":%d.5,"tag":"t%d"}`, i%5, i, i, i%2)
			if i == 7 {
				doc = `{"city":"c2","age":7.0}` // a float equal to an int
			}
			if _, err := s.Put(ctx, "people", Int(int64(i)), j(t, doc)); err != nil {
				t.Fatal(err)
			}
		}
		for _, def := range []IndexDef{{Name: "by_age", Fields: []string{"age"}}, {Name: "city_age", Fields: []string{"city", "age"}}} {
			if created, err := s.CreateIndex(ctx, "people", def, nil); !created || err != nil {
				t.Fatal(def.Name, created, err)
			}
		}
		if created, err := s.CreateIndex(ctx, "people", IndexDef{Name: "by_age", Fields: []string{"age"}}, nil); created || err != nil {
			t.Fatal("the same index again:", created, err)
		}
		wantCode(t, func() error {
			_, err := s.CreateIndex(ctx, "people", IndexDef{Name: "by_age", Fields: []string{"city"}}, nil)
			return err
		}(), CodeIndexExists)
		for _, tc := range []struct {
			filter string
			count  int
			index  string
		}{
			{`{"age":7}`, 1, "by_age"},
			{`{"age":{"$gte":10,"$lt":20}}`, 10, "by_age"},
			{`{"age":{"$in":[1,2,7,99]}}`, 3, "by_age"},
			{`{"city":"c2"}`, 10, "city_age"},
			{`{"city":"c2","age":{"$gt":20}}`, 6, "city_age"},
			{`{"tag":"t1"}`, 24, ""},
			{`{"$or":[{"age":1},{"age":2}]}`, 2, ""},
		} {
			n, plan, err := s.Count(ctx, "people", flt(t, tc.filter))
			if err != nil || n != tc.count || plan.Index != tc.index {
				t.Errorf("count %s: %d via %q (%+v, %v), want %d via %q", tc.filter, n, plan.Index, plan, err, tc.count, tc.index)
			}
		}
		// A filter of equalities an index covers is counted from the index
		// alone; anything else reads the documents.
		for filter, want := range map[string][2]int{
			`{"age":7}`: {1, 0}, `{"age":{"$in":[7,7.0,1]}}`: {2, 0}, `{"city":"c2"}`: {10, 0},
			`{"city":"c2","age":7}`: {1, 0}, `{"city":"c2","age":{"$gt":20}}`: {6, 6}, `{"age":{"$eq":7,"$ne":8}}`: {1, 1},
			`{"age":7,"tag":"t1"}`: {0, 1},
		} {
			n, plan, err := s.Count(ctx, "people", flt(t, filter))
			if err != nil || n != want[0] || plan.Examined != want[1] {
				t.Errorf("count %s: %d examining %d (%v), want %d examining %d", filter, n, plan.Examined, err, want[0], want[1])
			}
		}
		// An integral bound takes both the int and the equal float (7 and
		// 7.0), inclusive, and neither, exclusive.
		for filter, want := range map[string]int{
			`{"age":{"$gte":7.0,"$lte":7}}`: 1, `{"age":{"$gte":7,"$lt":8}}`: 1, `{"age":{"$gt":6.0,"$lte":7.0}}`: 1,
			`{"age":{"$gt":7,"$lt":9}}`: 1, `{"age":{"$gt":6,"$lt":7.0}}`: 0, `{"age":{"$in":[]}}`: 0,
		} {
			if n, plan, err := s.Count(ctx, "people", flt(t, filter)); err != nil || n != want || plan.Index != "by_age" {
				t.Errorf("count %s: %d via %q (%v), want %d via by_age", filter, n, plan.Index, err, want)
			}
		}
		// Writes keep the indexes: Verify (at cleanup) checks them all.
		if _, err := s.Patch(ctx, "people", Int(3), j(t, `{"age":1000}`)); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := s.Count(ctx, "people", flt(t, `{"age":1000}`)); n != 1 {
			t.Error("the patched value is not found through the index")
		}
		if n, _, _ := s.Count(ctx, "people", flt(t, `{"age":3}`)); n != 0 {
			t.Error("the old value is still found through the index")
		}
	})
}

func TestUniqueIndex(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.Put(ctx, "u", Text("a"), j(t, `{"email":"x@y"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "u", Text("b"), j(t, `{"email":"x@y"}`)); err != nil {
			t.Fatal(err)
		}
		wantCode(t, func() error {
			_, err := s.CreateIndex(ctx, "u", IndexDef{Name: "email", Fields: []string{"email"}, Unique: true}, nil)
			return err
		}(), CodeUniqueViolation)
		if _, err := s.Delete(ctx, "u", Text("b")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateIndex(ctx, "u", IndexDef{Name: "email", Fields: []string{"email"}, Unique: true}, nil); err != nil {
			t.Fatal(err)
		}
		e := wantCode(t, func() error { _, err := s.Put(ctx, "u", Text("c"), j(t, `{"email":"x@y"}`)); return err }(), CodeUniqueViolation)
		if e.Index != "email" {
			t.Errorf("violation names index %q", e.Index)
		}
		if _, err := s.Put(ctx, "u", Text("a"), j(t, `{"email":"x@y","more":1}`)); err != nil {
			t.Fatal("rewriting the holder of the value:", err)
		}
		for _, id := range []string{"n1", "n2"} {
			if _, err := s.Put(ctx, "u", Text(id), j(t, `{"other":1}`)); err != nil {
				t.Fatal("missing values are not compared:", err)
			}
		}
		if _, err := s.Get(ctx, "u", Text("c")); ErrorCode(err) != CodeNotFound {
			t.Error("the refused document was written")
		}
	})
}

func TestPaging(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		for i := range 25 {
			if _, err := s.Put(ctx, "p", Int(int64(i)), j(t, fmt.Sprintf(`{"rank":%d,"name":"n%02d","deep":{"x":%d,"y":0}}`, (i*7)%25, i, i))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateIndex(ctx, "p", IndexDef{Name: "rank", Fields: []string{"rank"}}, nil); err != nil {
			t.Fatal(err)
		}
		collect := func(q Query) []string {
			var out []string
			for pages := 0; ; pages++ {
				res, err := s.Page(ctx, "p", q)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range res.Docs {
					out = append(out, js(t, d.ID))
				}
				if res.Next == "" {
					return out
				}
				if pages > 30 {
					t.Fatal("paging does not end")
				}
				q.Cursor = res.Next
			}
		}
		ids := collect(Query{Limit: 10})
		if len(ids) != 25 || ids[0] != "0" || ids[24] != "24" {
			t.Fatalf("id order: %v", ids)
		}
		desc := collect(Query{Limit: 4, Desc: true})
		if len(desc) != 25 || desc[0] != "24" {
			t.Fatalf("descending: %v", desc)
		}
		byRank := collect(Query{OrderBy: "rank", Limit: 7, Filter: flt(t, `{"rank":{"$gte":5}}`)})
		if len(byRank) != 20 {
			t.Fatalf("rank >= 5: %d documents", len(byRank))
		}
		res, err := s.Page(ctx, "p", Query{OrderBy: "rank", Limit: 3, Desc: true, Select: []string{"name", "deep.x", "missing"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := js(t, res.Docs[0].Value); !strings.HasPrefix(got, `{"name":`) || !strings.Contains(got, `"deep":{"x":`) || strings.Contains(got, "rank") {
			t.Errorf("projection: %s", got)
		}
		if r, _ := res.Docs[0].Value.Path("deep.x"); js(t, r) != "7" { // rank 24 is i=7 (7*7 = 49 = 24 mod 25)
			t.Errorf("highest rank first: %s", js(t, res.Docs[0].Value))
		}
		wantCode(t, func() error { _, err := s.Page(ctx, "p", Query{OrderBy: "name"}); return err }(), CodeInvalid)
		wantCode(t, func() error { _, err := s.Page(ctx, "p", Query{Cursor: res.Next}); return err }(), CodeInvalid)
		wantCode(t, func() error { _, err := s.Page(ctx, "p", Query{Cursor: "!!"}); return err }(), CodeInvalid)
		if big, _ := s.Page(ctx, "p", Query{Limit: 1 << 30}); len(big.Docs) != 25 {
			t.Error("an oversized limit is clamped, not refused")
		}
		if clampLimit(1<<30) != MaxLimit || clampLimit(0) != DefaultLimit {
			t.Error("limits")
		}
	})
}

func TestSchemas(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.Put(ctx, "s", Text("old"), j(t, `{"name":"x"}`)); err != nil {
			t.Fatal(err)
		}
		if sc, err := s.Schema(ctx, "s"); sc != nil || err != nil {
			t.Fatal("undeclared schema:", sc, err)
		}
		if err := s.SetSchema(ctx, "s", Schema{}); err != nil {
			t.Fatal(err)
		}
		if sc, _ := s.Schema(ctx, "s"); sc == nil || sc.Fields == nil || len(sc.Fields) != 0 {
			t.Fatal("a declared empty schema must differ from none:", sc)
		}
		wantCode(t, s.SetSchema(ctx, "s", Schema{Fields: []FieldDef{{Name: "age", Type: "int", Required: true}}}), CodeSchemaViolation)
		if err := s.SetSchema(ctx, "s", Schema{Fields: []FieldDef{{Name: "name", Type: "text", Required: true, Unique: true}, {Name: "age", Type: "int"}, {Name: "any", Type: "any"}}}); err != nil {
			t.Fatal(err)
		}
		e := wantCode(t, func() error { _, err := s.Put(ctx, "s", Text("a"), j(t, `{"age":1}`)); return err }(), CodeSchemaViolation)
		if e.Field != "name" {
			t.Errorf("violation names %q", e.Field)
		}
		wantCode(t, func() error { _, err := s.Put(ctx, "s", Text("a"), j(t, `{"name":"y","age":1.5}`)); return err }(), CodeSchemaViolation)
		wantCode(t, func() error { _, err := s.Put(ctx, "s", Text("a"), j(t, `{"name":"x"}`)); return err }(), CodeUniqueViolation)
		if _, err := s.Put(ctx, "s", Text("a"), j(t, `{"name":"y","age":2,"any":[1]}`)); err != nil {
			t.Fatal(err)
		}
		wantCode(t, func() error { _, err := s.Patch(ctx, "s", Text("a"), j(t, `{"name":null}`)); return err }(), CodeSchemaViolation)
		wantCode(t, func() error { _, err := s.Insert(ctx, "s", j(t, `{"age":"x","name":"z"}`)); return err }(), CodeSchemaViolation)
		wantCode(t, s.SetSchema(ctx, "s", Schema{Fields: []FieldDef{{Name: "x", Type: "number"}}}), CodeInvalid)
		wantCode(t, s.SetSchema(ctx, "s", Schema{Fields: []FieldDef{{Name: "x", Type: "int"}, {Name: "x", Type: "int"}}}), CodeInvalid)
		// Dropping the unique flag drops its index.
		if err := s.SetSchema(ctx, "s", Schema{Fields: []FieldDef{{Name: "name", Type: "text"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "s", Text("b"), j(t, `{"name":"y"}`)); err != nil {
			t.Fatal("not unique any more:", err)
		}
	})
}

// TestDropSchema: DropSchema takes a collection back to no schema (not an
// empty one): any document is accepted, the unique fields' indexes go,
// and Schema reports none; a collection without one, or none at all,
// has nothing to drop (and is not created).
func TestDropSchema(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if err := s.SetSchema(ctx, "s", Schema{Fields: []FieldDef{{Name: "name", Type: "text", Required: true, Unique: true}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "s", Int(1), j(t, `{"name":"a"}`)); err != nil {
			t.Fatal(err)
		}
		if dropped, err := s.DropSchema(ctx, "s"); !dropped || err != nil {
			t.Fatalf("DropSchema = %v, %v, want true", dropped, err)
		}
		if sc, err := s.Schema(ctx, "s"); sc != nil || err != nil {
			t.Fatalf("Schema after DropSchema = %v, %v, want none", sc, err)
		}
		for i, doc := range []string{`{"name":"a"}`, `{"other":1}`} { // unique and required no more
			if _, err := s.Put(ctx, "s", Int(int64(i+2)), j(t, doc)); err != nil {
				t.Fatal(err)
			}
		}
		if info, _ := s.Collections(ctx); len(info) != 1 || len(info[0].Indexes) != 0 || info[0].Schema != nil {
			t.Fatalf("collections after DropSchema = %+v, want no index and no schema", info)
		}
		if dropped, err := s.DropSchema(ctx, "s"); dropped || err != nil {
			t.Fatalf("DropSchema again = %v, %v, want false", dropped, err)
		}
		if dropped, err := s.DropSchema(ctx, "none"); dropped || err != nil {
			t.Fatalf("DropSchema of no collection = %v, %v, want false", dropped, err)
		}
		if _, err := s.Schema(ctx, "none"); err == nil {
			t.Fatal("DropSchema created the collection")
		}
		wantCode(t, func() error { _, err := s.DropSchema(ctx, ""); return err }(), CodeInvalid)
	})
}

// TestSelectNone: an empty selection keeps none of a document (an empty
// map), as it says; no selection (nil) keeps all of it.
func TestSelectNone(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.Put(ctx, "c", Int(1), j(t, `{"a":1,"b":{"c":2}}`)); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			sel  []string
			want string
		}{{nil, `{"a":1,"b":{"c":2}}`}, {[]string{}, `{}`}, {[]string{"b.c"}, `{"b":{"c":2}}`}} {
			res, err := s.Page(ctx, "c", Query{Select: tc.sel})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := ToJSON(res.Docs[0].Value); string(got) != tc.want {
				t.Errorf("Select %#v: %s, want %s", tc.sel, got, tc.want)
			}
		}
	})
}

func TestPersistenceAndBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetSchema(ctx, "c", Schema{Fields: []FieldDef{{Name: "k", Type: "int", Unique: true}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "by_k", Fields: []string{"k"}}, nil); err != nil {
		t.Fatal(err)
	}
	d, err := s.Insert(ctx, "c", j(t, `{"k":1,"v":{"$vector":[0.5]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Get(ctx, "c", d.ID); err != nil || got.Revision != d.Revision {
		t.Fatal("after reopening:", got, err)
	}
	if _, err := s.Put(ctx, "c", Text("dup"), j(t, `{"k":1}`)); ErrorCode(err) != CodeUniqueViolation {
		t.Fatal("the schema and its index came back:", err)
	}
	d2, err := s.Insert(ctx, "c", j(t, `{"k":2}`))
	if a, _ := d.ID.Int(); err != nil || func() bool { b, _ := d2.ID.Int(); return b <= a }() {
		t.Fatal("the id sequence came back:", d2.ID, err)
	}
	for _, src := range []*Store{s, memoryCopy(t, s)} {
		var buf bytes.Buffer
		if _, err := src.Backup(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		bpath := filepath.Join(dir, fmt.Sprintf("backup-%p.db", src))
		if _, err := src.BackupFile(ctx, bpath); err != nil {
			t.Fatal(err)
		}
		b, err := Open(bpath, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := b.Count(ctx, "c", nil); n != 2 {
			t.Errorf("backup holds %d documents", n)
		}
		if err := b.Verify(ctx); err != nil {
			t.Error(err)
		}
		b.Close()
	}
}

// memoryCopy loads a dump of s into a new in-memory store.
func memoryCopy(t *testing.T, s *Store) *Store {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.Dump(ctx, &buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	m := openStore(t, "memory")
	if _, err := m.Load(ctx, &buf, LoadRefuse, 0, nil); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDumpLoad(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		docs := []string{
			`{"i":-9007199254740993,"f":1.0,"neg0":-0.0,"big":1e300,"t":"é\u0000","b":{"$bytes":"AAEC"},"v":{"$vector":[1.5,-2]},"a":[1,1.0,"1",null,true],"m":{"z":{"y":[]},"a":{}}}`,
			`{"looks":{"$map":{"$bytes":"AAEC"}}}`,
		}
		if err := s.SetSchema(ctx, "one", Schema{Fields: []FieldDef{{Name: "i", Type: "int"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateIndex(ctx, "one", IndexDef{Name: "ti", Fields: []string{"t", "i"}, Unique: true}, nil); err != nil {
			t.Fatal(err)
		}
		for i, d := range docs {
			if _, err := s.Put(ctx, "one", Int(int64(i)), j(t, d)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Put(ctx, "two", Text("x"), j(t, `{}`)); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		var last int64
		n, err := s.Dump(ctx, &buf, nil, func(done, total int64) { last = done })
		if err != nil || n != 3 || last != 3 {
			t.Fatalf("dump: %d documents, progress %d, %v", n, last, err)
		}
		dump := buf.String()
		for _, backend := range []string{"memory", "file"} {
			d := openStore(t, backend)
			st, err := d.Load(ctx, strings.NewReader(dump), "", 0, nil)
			if err != nil || st.Documents != 3 || st.Collections != 2 {
				t.Fatalf("load: %+v %v", st, err)
			}
			for i := range docs {
				a, _ := s.Get(ctx, "one", Int(int64(i)))
				b, err := d.Get(ctx, "one", Int(int64(i)))
				if err != nil || !Equal(a.Value, b.Value) || js(t, a.Value) != js(t, b.Value) {
					t.Errorf("%s: document %d: %s, want %s (%v)", backend, i, js(t, b.Value), js(t, a.Value), err)
				}
			}
			if sc, _ := d.Schema(ctx, "one"); sc == nil || len(sc.Fields) != 1 {
				t.Error("the schema did not come back")
			}
			infos, _ := d.Collections(ctx)
			if len(infos) != 2 || len(infos[0].Indexes) != 1 || infos[0].Count != 2 {
				t.Errorf("collections after load: %+v", infos)
			}
			// Modes: refuse, replace, merge.
			if _, err := d.Load(ctx, strings.NewReader(dump), LoadRefuse, 0, nil); ErrorCode(err) != CodeInvalid {
				t.Errorf("loading over existing documents: %v", err)
			}
			if _, err := d.Put(ctx, "two", Text("extra"), j(t, `{}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Load(ctx, strings.NewReader(dump), LoadMerge, 0, nil); err != nil {
				t.Fatal(err)
			}
			if n, _, _ := d.Count(ctx, "two", nil); n != 2 {
				t.Errorf("merge kept %d documents of two, want 2", n)
			}
			if _, err := d.Load(ctx, strings.NewReader(dump), LoadReplace, 0, nil); err != nil {
				t.Fatal(err)
			}
			if n, _, _ := d.Count(ctx, "two", nil); n != 1 {
				t.Errorf("replace left %d documents of two, want 1", n)
			}
		}
		for _, bad := range []string{`{"type":"dump","format":99}`, `nope`, `{"type":"document","collection":"one","id":1,"doc":{}}`, `{"type":"what"}`} {
			if _, err := openStore(t, "memory").Load(ctx, strings.NewReader(bad), "", 0, nil); ErrorCode(err) != CodeInvalid {
				t.Errorf("%s: %v", bad, err)
			}
		}
		if _, err := s.Load(ctx, strings.NewReader(""), "sideways", 0, nil); ErrorCode(err) != CodeInvalid {
			t.Error("an unknown mode is refused")
		}
	})
}

func TestConcurrentWriters(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "w", Fields: []string{"writer", "n"}, Unique: true}, nil); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		const writers, each = 8, 50
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for n := range each {
					if _, err := s.Insert(ctx, "c", j(t, fmt.Sprintf(`{"writer":%d,"n":%d}`, w, n))); err != nil {
						errs <- err
						return
					}
					if _, _, err := s.Count(ctx, "c", flt(t, fmt.Sprintf(`{"writer":%d}`, w))); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n, _, _ := s.Count(ctx, "c", nil); n != writers*each {
			t.Fatalf("%d documents, want %d", n, writers*each)
		}
	})
}

func TestClosedStore(t *testing.T) {
	s, err := Open("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Put(ctx, "c", Text("a"), Map()); ErrorCode(err) != CodeClosed {
		t.Fatal("a write after Close:", err)
	}
	if _, err := s.Get(ctx, "c", Text("a")); ErrorCode(err) != CodeClosed {
		t.Fatal("a read after Close:", err)
	}
}

// TestRefusedWritesCreateNothing: a write refused before it reaches the
// documents leaves no collection behind.
func TestRefusedWritesCreateNothing(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		one := uint64(1)
		for what, err := range map[string]error{
			"put":   func() error { _, err := s.Put(ctx, "a", Text("x"), Int(1)); return err }(),
			"many":  func() error { _, err := s.PutMany(ctx, "b", []Doc{{ID: Text("x"), Value: Int(1)}}); return err }(),
			"ins":   func() error { _, err := s.Insert(ctx, "c", Array()); return err }(),
			"patch": func() error { _, err := s.Patch(ctx, "d", Text("x"), Map()); return err }(),
			"cas": func() error {
				_, err := s.CompareAndSet(ctx, "e", Text("x"), Expect{Revision: &one}, Map())
				return err
			}(),
		} {
			if err == nil {
				t.Errorf("%s: accepted", what)
			}
		}
		if infos, _ := s.Collections(ctx); len(infos) != 0 {
			t.Errorf("refused writes created %+v", infos)
		}
	})
}

func TestTooDeepDocument(t *testing.T) {
	s := openStore(t, "memory")
	v := Int(1)
	for range MaxDepth {
		v = Array(v)
	}
	if _, err := s.Put(ctx, "c", Text("deep"), Map(Field{Key: "a", Value: v})); ErrorCode(err) != CodeInvalid {
		t.Fatalf("a document deeper than MaxDepth: %v", err)
	}
	edge, _ := v.Array() // the map and 511 arrays: MaxDepth exactly
	if _, err := s.Put(ctx, "c", Text("ok"), Map(Field{Key: "a", Value: edge[0]})); err != nil {
		t.Fatal("a document exactly MaxDepth deep:", err)
	}
}

func TestValueEdgeCases(t *testing.T) {
	nan := float32(0)
	nan = nan / nan
	if !Equal(Vector([]float32{nan}), Vector([]float32{nan})) {
		t.Error("vectors with NaN components are Equal, as floats are")
	}
	fields := make([]Field, 0, 20001)
	for i := range 20000 {
		fields = append(fields, Field{Key: fmt.Sprint(i), Value: Int(int64(i))})
	}
	fields = append(fields, Field{Key: "0", Value: Text("last")})
	m := Map(fields...)
	if f, _ := m.Fields(); len(f) != 20000 || js(t, f[0].Value) != `"last"` {
		t.Errorf("a repeated key keeps its first place and its last value: %d fields", len(f))
	}
}

// TestPutManyKeepsIndexes: one PutMany that writes an id several times and
// moves values back and forth leaves every index exact (Verify at cleanup)
// and is all or nothing.
func TestPutManyKeepsIndexes(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "n", Fields: []string{"n"}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "u", Fields: []string{"u"}, Unique: true}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "c", Int(1), j(t, `{"n":1,"u":"a"}`)); err != nil {
			t.Fatal(err)
		}
		docs := []Doc{
			{ID: Int(1), Value: j(t, `{"n":2,"u":"b"}`)},
			{ID: Int(2), Value: j(t, `{"n":2,"u":"a"}`)},
			{ID: Int(1), Value: j(t, `{"n":1,"u":"c"}`)},
			{ID: Int(3), Value: j(t, `{"n":3}`)},
		}
		if _, err := s.PutMany(ctx, "c", docs); err != nil {
			t.Fatal(err)
		}
		for filter, want := range map[string]int{`{"n":1}`: 1, `{"n":2}`: 1, `{"n":3}`: 1, `{"u":"a"}`: 1} {
			if n, _, _ := s.Count(ctx, "c", flt(t, filter)); n != want {
				t.Errorf("count %s = %d, want %d", filter, n, want)
			}
		}
		if _, err := s.PutMany(ctx, "c", []Doc{{ID: Int(9), Value: j(t, `{"n":9}`)}, {ID: Int(10), Value: j(t, `{"u":"a"}`)}}); ErrorCode(err) != CodeUniqueViolation {
			t.Fatal("a unique violation in a batch:", err)
		}
		if _, err := s.Get(ctx, "c", Int(9)); ErrorCode(err) != CodeNotFound {
			t.Error("a failed batch wrote its first document")
		}
	})
}
