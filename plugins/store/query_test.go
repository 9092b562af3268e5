package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// dumpOf returns a dump (the JSON Lines load reads) of collection coll
// with documents 1..n, document i being doc(i).
func dumpOf(coll string, n int, doc func(i int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\"type\":\"dump\",\"format\":1}\n{\"type\":\"collection\",\"collection\":%q}\n", coll)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "{\"type\":\"document\",\"collection\":%q,\"id\":%d,\"doc\":%s}\n", coll, i, doc(i))
	}
	return b.String()
}

// fill loads documents 1..n into coll through the load tool.
func (e *env) fill(coll string, n int, doc func(i int) string) {
	e.t.Helper()
	data, _ := json.Marshal(dumpOf(coll, n, doc))
	e.ok("load", `{"data": `+string(data)+`}`)
}

// pageOut is page's result.
type pageOut struct {
	Docs []struct {
		ID       json.RawMessage `json:"id"`
		Revision uint64          `json:"revision"`
		Doc      json.RawMessage `json:"doc"`
	} `json:"docs"`
	NextCursor *string  `json:"next_cursor"`
	Limit      int      `json:"limit"`
	Plan       *planOut `json:"plan"`
}

type planOut struct {
	Index    *string `json:"index"`
	Ranges   int     `json:"ranges"`
	Examined int     `json:"examined"`
}

// ids lists the ids of a page.
func (p pageOut) ids() []string {
	var out []string
	for _, d := range p.Docs {
		out = append(out, string(d.ID))
	}
	return out
}

func seq(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// TestPageCursor: pages follow each other by cursor, in id order or
// reversed, each once, and the last has next_cursor null.
func TestPageCursor(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.fill("c", 25, func(i int) string { return fmt.Sprintf(`{"n":%d,"odd":%v}`, i, i%2 == 1) })
		for _, desc := range []bool{false, true} {
			var got []string
			args := fmt.Sprintf(`{"collection": "c", "limit": 10, "desc": %v`, desc)
			p := okAs[pageOut](e, "page", args+`}`)
			for pages := 1; ; pages++ {
				if p.Limit != 10 || len(p.Docs) > 10 {
					t.Fatalf("page %d: limit %d, %d docs", pages, p.Limit, len(p.Docs))
				}
				got = append(got, p.ids()...)
				if p.NextCursor == nil {
					if pages != 3 {
						t.Fatalf("%d pages, want 3", pages)
					}
					break
				}
				p = okAs[pageOut](e, "page", args+`, "cursor": "`+*p.NextCursor+`"}`)
			}
			want := seq(1, 25)
			if desc {
				slices.Reverse(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("desc %v: ids %v", desc, got)
			}
		}
		// A filter pages the same way.
		p := okAs[pageOut](e, "page", `{"collection": "c", "filter": {"odd": true, "n": {"$gt": 10}}, "limit": 4}`)
		p2 := okAs[pageOut](e, "page", `{"collection": "c", "filter": {"odd": true, "n": {"$gt": 10}}, "limit": 4, "cursor": "`+*p.NextCursor+`"}`)
		if got := append(p.ids(), p2.ids()...); !slices.Equal(got, []string{"11", "13", "15", "17", "19", "21", "23", "25"}) || p2.NextCursor != nil {
			t.Fatalf("filtered pages: %v, next %v", got, p2.NextCursor)
		}
		// The documents come whole, in their typed form.
		if string(p.Docs[0].Doc) != `{"n":11,"odd":true}` || p.Docs[0].Revision == 0 {
			t.Fatalf("doc %s revision %d", p.Docs[0].Doc, p.Docs[0].Revision)
		}
	})
}

// TestPageLimit: the default page is 100 documents, a larger limit is
// clamped to 10,000 (the reply says so), and a limit below 1 or not an
// integer is bad_params.
func TestPageLimit(t *testing.T) {
	e := connect(t, Config{}, func(l *mcpcore.Limits) { l.InlineResultBytes = mcpcore.MiB })
	e.fill("c", 10_001, func(int) string { return `{}` })
	if p := okAs[pageOut](e, "page", `{"collection": "c"}`); len(p.Docs) != 100 || p.Limit != 100 || p.NextCursor == nil {
		t.Fatalf("default page: %d docs, limit %d", len(p.Docs), p.Limit)
	}
	p := okAs[pageOut](e, "page", `{"collection": "c", "limit": 20000}`)
	if len(p.Docs) != 10_000 || p.Limit != 10_000 || p.NextCursor == nil {
		t.Fatalf("clamped page: %d docs, limit %d, next %v", len(p.Docs), p.Limit, p.NextCursor)
	}
	p = okAs[pageOut](e, "page", `{"collection": "c", "limit": 20000, "cursor": "`+*p.NextCursor+`"}`)
	if !slices.Equal(p.ids(), []string{"10001"}) || p.NextCursor != nil {
		t.Fatalf("last page: %v", p.ids())
	}
	for _, bad := range []string{`0`, `-1`, `1.5`, `"10"`, `null`} {
		e.badParams("page", `{"collection": "c", "limit": `+bad+`}`, "/limit")
	}
}

// TestPageOrderSelect: order_by follows an index's first field (missing
// values first, then by value, then id), select projects dotted paths;
// an unindexed order and a cursor of another order are bad_params.
func TestPageOrderSelect(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "c", "id": 1, "doc": {"n": 3, "a": {"b": 1, "c": 2}, "x": 1}}`)
		e.ok("store", `{"collection": "c", "id": 2, "doc": {"n": 1.5, "a": {"b": 2}}}`)
		e.ok("store", `{"collection": "c", "id": 3, "doc": {"x": 1}}`)
		e.ok("store", `{"collection": "c", "id": 4, "doc": {"n": 2}}`)
		e.badParams("page", `{"collection": "c", "order_by": "n"}`, "/order_by")
		e.ok("create_scalar_index", `{"collection": "c", "field": "n"}`)
		if p := okAs[pageOut](e, "page", `{"collection": "c", "order_by": "n"}`); !slices.Equal(p.ids(), []string{"3", "2", "4", "1"}) {
			t.Fatalf("order_by n: %v", p.ids())
		}
		p := okAs[pageOut](e, "page", `{"collection": "c", "order_by": "n", "desc": true, "limit": 2}`)
		if !slices.Equal(p.ids(), []string{"1", "4"}) {
			t.Fatalf("order_by n desc: %v", p.ids())
		}
		p2 := okAs[pageOut](e, "page", `{"collection": "c", "order_by": "n", "desc": true, "limit": 2, "cursor": "`+*p.NextCursor+`"}`)
		if !slices.Equal(p2.ids(), []string{"2", "3"}) {
			t.Fatalf("order_by n desc, page 2: %v", p2.ids())
		}
		e.badParams("page", `{"collection": "c", "cursor": "`+*p.NextCursor+`"}`, "/cursor")
		e.badParams("page", `{"collection": "c", "cursor": "garbage!"}`, "/cursor")
		sel := okAs[pageOut](e, "page", `{"collection": "c", "select": ["a.b", "x"], "limit": 3}`)
		var docs []string
		for _, d := range sel.Docs {
			docs = append(docs, string(d.Doc))
		}
		if want := []string{`{"a":{"b":1},"x":1}`, `{"a":{"b":2}}`, `{"x":1}`}; !slices.Equal(docs, want) {
			t.Fatalf("select: %v, want %v", docs, want)
		}
		e.badParams("page", `{"collection": "c", "select": [""]}`, "/select/0")
		e.badParams("page", `{"collection": "c", "select": "x"}`, "/select")
		e.fail("page", `{"collection": "nope"}`, "collection_not_found")
	})
}

// TestFilterErrors: a filter the engine refuses is bad_params at the JSON
// Pointer of the fault inside the filter argument.
func TestFilterErrors(t *testing.T) {
	e := connect(t, Config{})
	e.ok("store", `{"collection": "c", "id": 1, "doc": {"age": 30}}`)
	for filter, path := range map[string]string{
		`{"$or": [{"a": 1}, {"age": {"$gt": [1]}}]}`: "/filter/$or/1/age/$gt",
		`{"a": {"$bogus": 1}}`:                       "/filter/a/$bogus",
		`{"$and": []}`:                               "/filter/$and",
		`{"a": {"$in": 3}}`:                          "/filter/a/$in",
		`{"a": {"$exists": "yes"}}`:                  "/filter/a/$exists",
		`{"a": {"$eq": 1, "b": 2}}`:                  "/filter/a/b",
		`{"a..b": 1}`:                                "/filter/a..b",
		`{"a/b": {"$gt": []}}`:                       "/filter/a~1b/$gt",
		`[1]`:                                        "/filter",
		`"x"`:                                        "/filter",
	} {
		for _, tool := range []string{"page", "count", "delete_where"} {
			t.Run(tool+" "+filter, func(t *testing.T) {
				if r := e.in(t).badParams(tool, `{"collection": "c", "filter": `+filter+`}`, path); r.Error.Message == "" {
					t.Errorf("%s %s: no message", tool, filter)
				}
			})
		}
	}
	if got := e.ok("count", `{"collection": "c"}`); got != `{"count":1}` {
		t.Fatalf("a refused delete_where deleted: %s", got)
	}
}

// TestCountDeleteWhere: count and delete_where take the same filters
// (typed: 1 matches 1 and 1.0, never "1"); delete_where needs a filter
// and deletes in a missing collection nothing.
func TestCountDeleteWhere(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "c", "id": 1, "doc": {"v": 1}}`)
		e.ok("store", `{"collection": "c", "id": 2, "doc": {"v": 1.0}}`)
		e.ok("store", `{"collection": "c", "id": 3, "doc": {"v": "1"}}`)
		e.ok("store", `{"collection": "c", "id": 4, "doc": {"v": [1], "tags": ["x", "y"]}}`)
		e.ok("store", `{"collection": "c", "id": 5, "doc": {}}`)
		for filter, n := range map[string]int{
			`{}`:                                5,
			`{"v": 1}`:                          2,
			`{"v": "1"}`:                        1,
			`{"v": {"$exists": false}}`:         1,
			`{"tags": {"$contains": "y"}}`:      1,
			`{"$or": [{"v": "1"}, {"v": 1.0}]}`: 3,
			`{"v": {"$gte": 0, "$lt": 2}}`:      2,
			`{"$not": {"v": 1}}`:                3,
		} {
			if got := e.ok("count", `{"collection": "c", "filter": `+filter+`}`); got != fmt.Sprintf(`{"count":%d}`, n) {
				t.Errorf("count %s = %s, want %d", filter, got, n)
			}
		}
		if got := e.ok("count", `{"collection": "c"}`); got != `{"count":5}` {
			t.Fatalf("count all = %s", got)
		}
		e.fail("count", `{"collection": "nope"}`, "collection_not_found")
		e.badParams("delete_where", `{"collection": "c"}`, "/filter")
		if got := e.ok("delete_where", `{"collection": "c", "filter": {"v": 1}}`); got != `{"deleted":2}` {
			t.Fatalf("delete_where = %s", got)
		}
		if got := e.ok("count", `{"collection": "c"}`); got != `{"count":3}` {
			t.Fatalf("count after delete_where = %s", got)
		}
		if got := e.ok("delete_where", `{"collection": "nope", "filter": {}}`); got != `{"deleted":0}` {
			t.Fatalf("delete_where in a missing collection = %s", got)
		}
		if got := e.ok("delete_where", `{"collection": "c", "filter": {}}`); got != `{"deleted":3}` {
			t.Fatalf("delete_where {} = %s", got)
		}
	})
}

// TestExplain: explain adds the plan: a scan examines every document, an
// index only its range; without explain there is no plan.
func TestExplain(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.fill("c", 50, func(i int) string { return fmt.Sprintf(`{"n":%d,"city":"c%d"}`, i, i%5) })
		scan := okAs[pageOut](e, "page", `{"collection": "c", "filter": {"n": {"$gte": 45}}, "explain": true}`)
		if len(scan.Docs) != 6 || scan.Plan == nil || scan.Plan.Index != nil || scan.Plan.Examined != 50 {
			t.Fatalf("scan plan %+v, %d docs", scan.Plan, len(scan.Docs))
		}
		if p := okAs[pageOut](e, "page", `{"collection": "c", "filter": {"n": {"$gte": 45}}}`); p.Plan != nil {
			t.Fatalf("a plan without explain: %+v", p.Plan)
		}
		e.ok("create_index", `{"collection": "c", "name": "by_n", "fields": ["n"]}`)
		p := okAs[pageOut](e, "page", `{"collection": "c", "filter": {"n": {"$gte": 45}}, "explain": true}`)
		if len(p.Docs) != 6 || p.Plan == nil || p.Plan.Index == nil || *p.Plan.Index != "by_n" || p.Plan.Examined != 6 || p.Plan.Ranges != 1 {
			t.Fatalf("index plan %+v", p.Plan)
		}
		type counted struct {
			Count int      `json:"count"`
			Plan  *planOut `json:"plan"`
		}
		// Equalities the index covers are counted from its entries alone.
		c := okAs[counted](e, "count", `{"collection": "c", "filter": {"n": {"$in": [1, 2, 3]}}, "explain": true}`)
		if c.Count != 3 || c.Plan == nil || *c.Plan.Index != "by_n" || c.Plan.Examined != 0 || c.Plan.Ranges != 3 {
			t.Fatalf("count plan %+v", c)
		}
		e.ok("create_compound_index", `{"collection": "c", "fields": ["city", "n"]}`)
		c = okAs[counted](e, "count", `{"collection": "c", "filter": {"city": "c1", "n": {"$lt": 20}}, "explain": true}`)
		if c.Count != 4 || *c.Plan.Index != "city+n" || c.Plan.Examined != 4 {
			t.Fatalf("compound plan %+v", c)
		}
		type deleted struct {
			Deleted int      `json:"deleted"`
			Plan    *planOut `json:"plan"`
		}
		d := okAs[deleted](e, "delete_where", `{"collection": "c", "filter": {"n": {"$lte": 2}}, "explain": true}`)
		if d.Deleted != 2 || d.Plan == nil || *d.Plan.Index != "by_n" || d.Plan.Examined != 2 {
			t.Fatalf("delete_where plan %+v", d)
		}
		for _, tool := range []string{"page", "count", "delete_where"} {
			e.badParams(tool, `{"collection": "c", "filter": {}, "explain": "yes"}`, "/explain")
		}
		e.badParams("page", `{"collection": "c", "desc": 1}`, "/desc")
	})
}
