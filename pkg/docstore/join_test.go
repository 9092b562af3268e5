package docstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// joinRows renders a join's rows as "id:[joined ids]" (+ "+" when more
// joined than the limit).
func joinRows(t *testing.T, res JoinResult) []string {
	t.Helper()
	var out []string
	for _, r := range res.Rows {
		var ids []string
		for _, d := range r.Joined {
			ids = append(ids, js(t, d.ID))
		}
		s := fmt.Sprintf("%s:[%s]", js(t, r.Doc.ID), strings.Join(ids, " "))
		if r.More {
			s += "+"
		}
		out = append(out, s)
	}
	return out
}

// fillShop stores users 1..3 and orders 10..15 (user_id: an int, a float,
// an unknown user, an array, or none).
func fillShop(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for _, u := range []string{`{"name": "ann", "tier": "gold"}`, `{"name": "bob", "tier": "free"}`, `{"name": "cy", "tier": "gold", "friends": [1, 2.0, 9]}`} {
		if _, err := s.Insert(ctx, "users", j(t, u)); err != nil {
			t.Fatal(err)
		}
	}
	for i, o := range []string{`{"user_id": 1, "total": 5}`, `{"user_id": 2.0, "total": 7}`, `{"user_id": 1, "total": 9}`, `{"user_id": 4, "total": 1}`, `{"user_id": [1], "total": 2}`, `{"total": 3}`} {
		if _, err := s.Put(ctx, "orders", Int(int64(10+i)), j(t, o)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJoinByField: users join their orders (one to many) and orders their
// user (many to one), with and without an index on the foreign field (the
// same rows), numbers equal across int and float, arrays on the local
// side joining each element.
func TestJoinByField(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		fillShop(t, s)
		usersOrders := JoinQuery{Foreign: "orders", LocalField: "id", ForeignField: "user_id"}
		// A document's id is not one of its fields: give users an id field.
		for _, u := range []int64{1, 2, 3} {
			if _, err := s.Patch(ctx, "users", Int(u), j(t, fmt.Sprintf(`{"id": %d}`, u))); err != nil {
				t.Fatal(err)
			}
		}
		orderUser := JoinQuery{Foreign: "users", LocalField: "user_id", ForeignField: "id"}
		friends := JoinQuery{Foreign: "users", LocalField: "friends", ForeignField: "id"}
		wantUO := []string{"1:[10 12]", "2:[11]", "3:[]"}
		wantOU := []string{"10:[1]", "11:[2]", "12:[1]", "13:[]", "14:[1]", "15:[]"}
		wantF := []string{"1:[]", "2:[]", "3:[1 2]"}
		check := func(method string) {
			t.Helper()
			for _, c := range []struct {
				coll string
				q    JoinQuery
				want []string
			}{{"users", usersOrders, wantUO}, {"orders", orderUser, wantOU}, {"users", friends, wantF}} {
				res, err := s.Join(ctx, c.coll, c.q)
				if err != nil {
					t.Fatal(err)
				}
				if got := joinRows(t, res); !slices.Equal(got, c.want) {
					t.Errorf("%s %s→%s: %v, want %v", method, c.coll, c.q.Foreign, got, c.want)
				}
				if res.Plan.Method != method {
					t.Errorf("%s→%s: method %q, want %q", c.coll, c.q.Foreign, res.Plan.Method, method)
				}
			}
		}
		check("scan")
		for coll, field := range map[string]string{"orders": "user_id", "users": "id"} {
			if _, err := s.CreateIndex(ctx, coll, IndexDef{Name: field, Fields: []string{field, "total"}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		check("index")
		res, _ := s.Join(ctx, "users", usersOrders)
		if res.Plan.ForeignIndex != "user_id" || res.Plan.ForeignExamined != 3 {
			t.Errorf("plan %+v", res.Plan)
		}
	})
}

// TestJoinShapes: projection on both sides, a foreign filter, the
// foreign limit (saying there is more), local paging by cursor and a
// local filter.
func TestJoinShapes(t *testing.T) {
	s := openStore(t, "file")
	ctx := context.Background()
	fillShop(t, s)
	for _, u := range []int64{1, 2, 3} {
		if _, err := s.Patch(ctx, "users", Int(u), j(t, fmt.Sprintf(`{"id": %d}`, u))); err != nil {
			t.Fatal(err)
		}
	}
	q := JoinQuery{Foreign: "orders", LocalField: "id", ForeignField: "user_id",
		Select: []string{"name"}, ForeignSelect: []string{"total"}, ForeignLimit: 1}
	res, err := s.Join(ctx, "users", q)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinRows(t, res); !slices.Equal(got, []string{"1:[10]+", "2:[11]", "3:[]"}) {
		t.Errorf("foreign limit 1: %v", got)
	}
	if js(t, res.Rows[0].Doc.Value) != `{"name":"ann"}` || js(t, res.Rows[0].Joined[0].Value) != `{"total":5}` {
		t.Errorf("projections: %s %s", js(t, res.Rows[0].Doc.Value), js(t, res.Rows[0].Joined[0].Value))
	}
	q.ForeignLimit, q.ForeignFilter = 0, flt(t, `{"total": {"$gt": 6}}`)
	q.Filter, q.Limit = flt(t, `{"tier": "gold"}`), 1
	var pages []string
	for range 5 {
		res, err := s.Join(ctx, "users", q)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, joinRows(t, res)...)
		if res.Next == "" {
			break
		}
		q.Cursor = res.Next
	}
	if !slices.Equal(pages, []string{"1:[12]", "3:[]"}) {
		t.Errorf("gold users' orders over 6, by pages of one: %v", pages)
	}
}

// TestJoinByEdges: documents joined to the foreign documents their edges
// of a type lead to, or come from.
func TestJoinByEdges(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		putNamed(t, s, "people", "ann", "bob")
		putNamed(t, s, "books", "dune", "emma")
		link(t, s, ref("people", "ann"), "read", ref("books", "emma"), "")
		link(t, s, ref("people", "ann"), "read", ref("books", "dune"), "")
		link(t, s, ref("people", "ann"), "read", ref("people", "bob"), "") // not a book
		link(t, s, ref("people", "bob"), "wrote", ref("books", "emma"), "")
		res, err := s.Join(ctx, "people", JoinQuery{Foreign: "books", EdgeType: "read"})
		if err != nil {
			t.Fatal(err)
		}
		if got := joinRows(t, res); !slices.Equal(got, []string{`"ann":["dune" "emma"]`, `"bob":[]`}) || res.Plan.Method != "edges" {
			t.Errorf("people read: %v (%+v)", got, res.Plan)
		}
		res, err = s.Join(ctx, "books", JoinQuery{Foreign: "people", EdgeType: "read", Direction: In, ForeignSelect: []string{"name"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := joinRows(t, res); !slices.Equal(got, []string{`"dune":["ann"]`, `"emma":["ann"]`}) || js(t, res.Rows[0].Joined[0].Value) != `{"name":"ann"}` {
			t.Errorf("books read by: %v", got)
		}
	})
}

// TestJoinErrors: bad joins name their field.
func TestJoinErrors(t *testing.T) {
	s := openStore(t, "memory")
	ctx := context.Background()
	fillShop(t, s)
	for field, q := range map[string]JoinQuery{
		"foreign":       {LocalField: "a", ForeignField: "b"},
		"local_field":   {Foreign: "orders"},
		"foreign_field": {Foreign: "orders", LocalField: "a"},
		"edge_type":     {Foreign: "orders", EdgeType: strings.Repeat("x", 300)},
		"direction":     {Foreign: "orders", EdgeType: "t", Direction: Both},
		"cursor":        {Foreign: "orders", EdgeType: "t", Cursor: "nope"},
	} {
		if e := wantCode(t, second(s.Join(ctx, "users", q)), CodeInvalid); e.Field != field {
			t.Errorf("%s: field %q (%s)", field, e.Field, e.Message)
		}
	}
	wantCode(t, second(s.Join(ctx, "users", JoinQuery{Foreign: "nope", EdgeType: "t"})), CodeCollectionNotFound)
	wantCode(t, second(s.Join(ctx, "nope", JoinQuery{Foreign: "users", EdgeType: "t"})), CodeCollectionNotFound)
	if e := wantCode(t, second(s.Join(ctx, "users", JoinQuery{Foreign: "users", LocalField: "a", EdgeType: "t"})), CodeInvalid); e.Field != "local_field" {
		t.Errorf("both kinds: %+v", e)
	}
}

// TestJoinAgainstFilter: on random values (ints and floats that are equal,
// text, bools, arrays, null, missing), a join by field joins exactly the
// foreign documents that the filter {foreign_field: key} matches for each
// scalar key of the local field (each element of an array), by a scan and
// through an index alike.
func TestJoinAgainstFilter(t *testing.T) {
	s := openStore(t, "memory")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 4))
	values := []string{`1`, `1.0`, `2`, `2.0`, `2.5`, `-0.0`, `0`, `"1"`, `true`, `null`, `[1, 2.0]`, `[]`, `{"a": 1}`, `{"$bytes": "AQ=="}`}
	randomDoc := func() Value {
		if rng.IntN(8) == 0 {
			return Map()
		}
		return j(t, `{"k": `+values[rng.IntN(len(values))]+`}`)
	}
	var locals, foreigns []Doc
	for i := range 60 {
		locals = append(locals, Doc{ID: Int(int64(i)), Value: randomDoc()})
		foreigns = append(foreigns, Doc{ID: Int(int64(i)), Value: randomDoc()})
	}
	if _, err := s.PutMany(ctx, "l", locals); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutMany(ctx, "f", foreigns); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range locals {
		var ids []string
		for _, f := range foreigns {
			for _, k := range joinKeys(l.Value, "k") {
				if flt(t, `{"k": {"$eq": `+js(t, k)+`}}`).Match(f.Value) {
					ids = append(ids, js(t, f.ID))
					break
				}
			}
		}
		want = append(want, fmt.Sprintf("%s:[%s]", js(t, l.ID), strings.Join(ids, " ")))
	}
	q := JoinQuery{Foreign: "f", LocalField: "k", ForeignField: "k", Limit: MaxLimit, ForeignLimit: MaxLimit}
	for _, method := range []string{"scan", "index"} {
		res, err := s.Join(ctx, "l", q)
		if err != nil {
			t.Fatal(err)
		}
		if got := joinRows(t, res); !slices.Equal(got, want) || res.Plan.Method != method {
			t.Fatalf("%s (%s):\n%v\nwant\n%v", method, res.Plan.Method, got, want)
		}
		if _, err := s.CreateIndex(ctx, "f", IndexDef{Name: "k", Fields: []string{"k"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
}
