package docstore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

func ref(coll string, id any) Ref {
	switch v := id.(type) {
	case int:
		return Ref{coll, Int(int64(v))}
	case string:
		return Ref{coll, Text(v)}
	}
	panic(id)
}

// put stores docs {"name": id} under the given text ids.
func putNamed(t *testing.T, s *Store, coll string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.Put(context.Background(), coll, Text(id), j(t, fmt.Sprintf(`{"name": %q}`, id))); err != nil {
			t.Fatal(err)
		}
	}
}

func link(t *testing.T, s *Store, from Ref, typ string, to Ref, props string) bool {
	t.Helper()
	p := Null()
	if props != "" {
		p = j(t, props)
	}
	created, err := s.Link(context.Background(), from, typ, to, p)
	if err != nil {
		t.Fatalf("link %s -%s-> %s: %v", from, typ, to, err)
	}
	return created
}

// edgeList renders a neighbours page as "type>coll/id" (out) or
// "coll/id>type" (in), with props when any.
func edgeList(t *testing.T, res NeighborResult, in bool) []string {
	t.Helper()
	var out []string
	for _, e := range res.Edges {
		other := e.To
		if in {
			other = e.From
		}
		id, _ := other.ID.Text()
		s := e.Type + ">" + other.Collection + "/" + id
		if !e.Props.IsNull() {
			s += js(t, e.Props)
		}
		if e.Doc != nil {
			s += js(t, e.Doc.Value)
		}
		out = append(out, s)
	}
	return out
}

// TestLinkNeighbors: typed edges between collections, with properties,
// listed both ways by type and page.
func TestLinkNeighbors(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		putNamed(t, s, "people", "ann", "bob", "cy")
		putNamed(t, s, "cities", "oslo", "rome")
		ann := ref("people", "ann")
		if !link(t, s, ann, "knows", ref("people", "bob"), `{"since": 2020}`) {
			t.Error("a new edge was not created")
		}
		link(t, s, ann, "knows", ref("people", "cy"), "")
		link(t, s, ann, "lives_in", ref("cities", "oslo"), "")
		link(t, s, ref("people", "bob"), "lives_in", ref("cities", "oslo"), "")
		link(t, s, ann, "likes", ann, "") // a loop
		// Linking again replaces the properties.
		if link(t, s, ann, "knows", ref("people", "bob"), `{"since": 2021}`) {
			t.Error("an existing edge was created again")
		}
		res, err := s.Neighbors(ctx, ann, NeighborQuery{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{`knows>people/bob{"since":2021}`, "knows>people/cy", "likes>people/ann", "lives_in>cities/oslo"}
		if got := edgeList(t, res, false); !slices.Equal(got, want) || res.Next != "" {
			t.Errorf("ann's edges: %v (next %q), want %v", got, res.Next, want)
		}
		res, _ = s.Neighbors(ctx, ann, NeighborQuery{Type: "knows", WithDocs: true, Select: []string{"name"}})
		if got := edgeList(t, res, false); !slices.Equal(got, []string{`knows>people/bob{"since":2021}{"name":"bob"}`, `knows>people/cy{"name":"cy"}`}) {
			t.Errorf("ann knows: %v", got)
		}
		res, _ = s.InNeighbors(ctx, ref("cities", "oslo"), NeighborQuery{WithDocs: true})
		if got := edgeList(t, res, true); !slices.Equal(got, []string{`lives_in>people/ann{"name":"ann"}`, `lives_in>people/bob{"name":"bob"}`}) {
			t.Errorf("into oslo: %v", got)
		}
		res, _ = s.InNeighbors(ctx, ref("people", "bob"), NeighborQuery{})
		if got := edgeList(t, res, true); !slices.Equal(got, []string{`knows>people/ann{"since":2021}`}) {
			t.Errorf("into bob (with the edge's properties): %v", got)
		}
		// Pages of one.
		var paged []string
		q := NeighborQuery{Limit: 1}
		for range 10 {
			res, err := s.Neighbors(ctx, ann, q)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, edgeList(t, res, false)...)
			if res.Next == "" {
				break
			}
			q.Cursor = res.Next
		}
		if !slices.Equal(paged, want) {
			t.Errorf("paged: %v", paged)
		}
		// A cursor of another document or type is refused.
		first, _ := s.Neighbors(ctx, ann, NeighborQuery{Limit: 1})
		if _, err := s.Neighbors(ctx, ref("people", "bob"), NeighborQuery{Cursor: first.Next}); ErrorCode(err) != CodeInvalid {
			t.Errorf("another document's cursor: %v", err)
		}
		if _, err := s.InNeighbors(ctx, ann, NeighborQuery{Cursor: first.Next}); ErrorCode(err) != CodeInvalid {
			t.Errorf("the other direction's cursor: %v", err)
		}
		// Unlink.
		for _, c := range []struct {
			from Ref
			typ  string
			to   Ref
			want bool
		}{
			{ann, "knows", ref("people", "cy"), true},
			{ann, "knows", ref("people", "cy"), false},
			{ann, "hates", ref("people", "bob"), false},
			{ann, "knows", ref("nowhere", "x"), false},
		} {
			if got, err := s.Unlink(ctx, c.from, c.typ, c.to); err != nil || got != c.want {
				t.Errorf("unlink %v %s %v: %v %v", c.from, c.typ, c.to, got, err)
			}
		}
		res, _ = s.InNeighbors(ctx, ref("people", "cy"), NeighborQuery{})
		if len(res.Edges) != 0 {
			t.Errorf("cy still has %v", edgeList(t, res, true))
		}
	})
}

// TestLinkErrors: both ends must exist; bad arguments name their field.
func TestLinkErrors(t *testing.T) {
	s := openStore(t, "memory")
	ctx := context.Background()
	putNamed(t, s, "a", "x")
	x := ref("a", "x")
	if e := wantCode(t, second(s.Link(ctx, x, "t", ref("a", "y"), Null())), CodeNotFound); e.Field != "to" {
		t.Errorf("missing target: %+v", e)
	}
	if e := wantCode(t, second(s.Link(ctx, ref("a", "y"), "t", x, Null())), CodeNotFound); e.Field != "from" {
		t.Errorf("missing source: %+v", e)
	}
	wantCode(t, second(s.Link(ctx, x, "t", ref("b", "y"), Null())), CodeCollectionNotFound)
	for field, call := range map[string]func() error{
		"type":            func() error { return second(s.Link(ctx, x, "", x, Null())) },
		"props":           func() error { return second(s.Link(ctx, x, "t", x, Int(1))) },
		"to.id":           func() error { return second(s.Link(ctx, x, "t", Ref{"a", Float(1)}, Null())) },
		"from.collection": func() error { return second(s.Link(ctx, Ref{"", Int(1)}, "t", x, Null())) },
		"id":              func() error { return second(s.Neighbors(ctx, Ref{"a", Null()}, NeighborQuery{})) },
		"direction":       func() error { return second(s.Traverse(ctx, x, TraverseQuery{MaxDepth: 1, Direction: "up"})) },
		"max_depth":       func() error { return second(s.Traverse(ctx, x, TraverseQuery{MaxDepth: 65})) },
		"types":           func() error { return second(s.Traverse(ctx, x, TraverseQuery{MaxDepth: 1, Types: []string{""}})) },
	} {
		if e := wantCode(t, call(), CodeInvalid); e.Field != field {
			t.Errorf("%s: field %q (%s)", field, e.Field, e.Message)
		}
	}
	if e := wantCode(t, second(s.Neighbors(ctx, ref("a", "y"), NeighborQuery{})), CodeNotFound); e.Field != "id" {
		t.Errorf("neighbours of a missing document: %+v", e)
	}
	wantCode(t, second(s.Traverse(ctx, ref("a", "y"), TraverseQuery{MaxDepth: 1})), CodeNotFound)
	wantCode(t, second(s.Neighbors(ctx, ref("b", "y"), NeighborQuery{})), CodeCollectionNotFound)
}

// TestEdgesGoWithTheirDocuments: deleting a document (delete,
// delete_where) deletes its edges both ways, and so does dropping its
// collection (a load that replaces it); replacing a document keeps them.
func TestEdgesGoWithTheirDocuments(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		putNamed(t, s, "p", "a", "b", "c", "d")
		putNamed(t, s, "q", "x", "y")
		for _, e := range [][3]string{{"a", "b", ""}, {"b", "a", ""}, {"b", "c", ""}, {"c", "a", ""}, {"d", "d", ""}} {
			link(t, s, ref("p", e[0]), "r", ref("p", e[1]), "")
		}
		link(t, s, ref("p", "a"), "at", ref("q", "x"), "")
		link(t, s, ref("q", "y"), "owns", ref("p", "b"), "")
		link(t, s, ref("q", "x"), "next", ref("q", "y"), "")
		edgesOf := func(r Ref) []string {
			out, _ := s.Neighbors(ctx, r, NeighborQuery{})
			in, _ := s.InNeighbors(ctx, r, NeighborQuery{})
			return append(edgeList(t, out, false), edgeList(t, in, true)...)
		}
		// Replacing b keeps its edges.
		if _, err := s.Put(ctx, "p", Text("b"), j(t, `{"new": true}`)); err != nil {
			t.Fatal(err)
		}
		if got := edgesOf(ref("p", "b")); len(got) != 4 {
			t.Errorf("b's edges after a replace: %v", got)
		}
		if _, err := s.Delete(ctx, "p", Text("b")); err != nil {
			t.Fatal(err)
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		if got := edgesOf(ref("p", "a")); !slices.Equal(got, []string{"at>q/x", "r>p/c"}) {
			t.Errorf("a's edges after b's delete: %v", got)
		}
		if got := edgesOf(ref("q", "y")); !slices.Equal(got, []string{"next>q/x"}) {
			t.Errorf("y's edges after b's delete: %v", got)
		}
		// A document put again under b's id has no edges.
		putNamed(t, s, "p", "b")
		if got := edgesOf(ref("p", "b")); len(got) != 0 {
			t.Errorf("a new b has %v", got)
		}
		if _, _, err := s.DeleteWhere(ctx, "p", flt(t, `{"name": {"$in": ["d", "c"]}}`)); err != nil {
			t.Fatal(err)
		}
		if got := edgesOf(ref("p", "a")); !slices.Equal(got, []string{"at>q/x"}) {
			t.Errorf("a's edges after delete_where: %v", got)
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		// Dropping q (a load that replaces it) drops a's edge into it.
		dump := `{"type":"dump","format":1}` + "\n" + `{"type":"collection","collection":"q"}` + "\n"
		if _, err := s.Load(ctx, strings.NewReader(dump), LoadReplace, 0, nil); err != nil {
			t.Fatal(err)
		}
		if got := edgesOf(ref("p", "a")); len(got) != 0 {
			t.Errorf("a's edges after q's drop: %v", got)
		}
		s.db.View(func(tx kv.Tx) error {
			for _, b := range [][]byte{outBucket("q"), inBucket("q")} {
				if tx.Bucket(b) != nil {
					t.Errorf("bucket %q outlived its collection", b)
				}
			}
			return nil
		})
	})
}

// TestTraverse: breadth-first, to a depth, along types and directions,
// each node once on a cyclic graph; the limit truncates and says so.
func TestTraverse(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		// a → b → c → a (a cycle), b → d, d ⇢ e (type "other"), f → a,
		// a → x in another collection.
		putNamed(t, s, "n", "a", "b", "c", "d", "e", "f")
		putNamed(t, s, "m", "x")
		for _, e := range [][3]string{{"a", "b", "next"}, {"b", "c", "next"}, {"c", "a", "next"}, {"b", "d", "next"}, {"d", "e", "other"}, {"f", "a", "next"}} {
			link(t, s, ref("n", e[0]), e[2], ref("n", e[1]), "")
		}
		link(t, s, ref("n", "a"), "next", ref("m", "x"), `{"w": 1}`)
		walk := func(start string, q TraverseQuery) ([]string, TraverseResult) {
			t.Helper()
			res, err := s.Traverse(ctx, ref("n", start), q)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, n := range res.Nodes {
				id, _ := n.Ref.ID.Text()
				out = append(out, fmt.Sprintf("%s/%s@%d", n.Ref.Collection, id, n.Depth))
			}
			return out, res
		}
		for _, c := range []struct {
			start string
			q     TraverseQuery
			want  []string
		}{
			{"a", TraverseQuery{MaxDepth: 1}, []string{"n/a@0", "m/x@1", "n/b@1"}},
			{"a", TraverseQuery{MaxDepth: 2}, []string{"n/a@0", "m/x@1", "n/b@1", "n/c@2", "n/d@2"}},
			{"a", TraverseQuery{MaxDepth: 10}, []string{"n/a@0", "m/x@1", "n/b@1", "n/c@2", "n/d@2", "n/e@3"}},
			{"a", TraverseQuery{MaxDepth: 10, Types: []string{"next"}}, []string{"n/a@0", "m/x@1", "n/b@1", "n/c@2", "n/d@2"}},
			{"a", TraverseQuery{MaxDepth: 10, Direction: In}, []string{"n/a@0", "n/c@1", "n/f@1", "n/b@2"}},
			{"e", TraverseQuery{MaxDepth: 2, Direction: Both}, []string{"n/e@0", "n/d@1", "n/b@2"}},
			{"e", TraverseQuery{MaxDepth: 2, Direction: Both, Types: []string{"next"}}, []string{"n/e@0"}},
			{"c", TraverseQuery{MaxDepth: 64, Direction: Both}, []string{"n/c@0", "n/a@1", "n/b@1", "m/x@2", "n/f@2", "n/d@2", "n/e@3"}},
		} {
			if got, res := walk(c.start, c.q); !slices.Equal(got, c.want) || res.Truncated {
				t.Errorf("from %s %+v: %v (truncated %v), want %v", c.start, c.q, got, res.Truncated, c.want)
			}
		}
		// The limit: 3 nodes besides the start, and more were reachable.
		got, res := walk("a", TraverseQuery{MaxDepth: 10, Limit: 3})
		if !slices.Equal(got, []string{"n/a@0", "m/x@1", "n/b@1", "n/c@2"}) || !res.Truncated {
			t.Errorf("limit 3: %v, truncated %v", got, res.Truncated)
		}
		// A limit that the graph just fits is no truncation.
		if _, res := walk("a", TraverseQuery{MaxDepth: 10, Limit: 5}); res.Truncated || len(res.Nodes) != 6 {
			t.Errorf("limit 5: %d nodes, truncated %v", len(res.Nodes), res.Truncated)
		}
		// Via: the edge that reached a node, with its properties; docs.
		_, res = walk("a", TraverseQuery{MaxDepth: 1, WithDocs: true, Select: []string{"name"}})
		x := res.Nodes[1]
		if x.Via == nil || js(t, x.Via.Props) != `{"w":1}` || x.Via.Type != "next" || js(t, x.Doc.Value) != `{"name":"x"}` || res.Nodes[0].Via != nil {
			t.Errorf("x: %+v", x)
		}
		_, res = walk("a", TraverseQuery{MaxDepth: 1, Direction: In})
		if f := res.Nodes[2]; f.Via == nil || f.Via.From.Collection != "n" || !Equal(f.Via.From.ID, Text("f")) {
			t.Errorf("f reached by %+v", f.Via)
		}
	})
}

// TestEdgesPersist: edges survive reopening the file; a dump's edges
// (dumpEdges) load into another store (loadEdges), among the collections
// dumped.
func TestEdgesPersist(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/g.db"
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	putNamed(t, s, "p", "a", "b")
	putNamed(t, s, "q", "x")
	link(t, s, ref("p", "a"), "r", ref("p", "b"), `{"w": 1.0, "tags": ["t"]}`)
	link(t, s, ref("p", "b"), "r", ref("q", "x"), "")
	link(t, s, ref("q", "x"), "s", ref("p", "a"), "")
	s.Close()
	if s, err = Open(path, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Neighbors(ctx, ref("p", "a"), NeighborQuery{})
	if err != nil || len(res.Edges) != 1 || js(t, res.Edges[0].Props) != `{"w":1.0,"tags":["t"]}` {
		t.Fatalf("reopened: %+v %v", res, err)
	}
	dumped := func(colls ...string) []edgeLine {
		var lines []edgeLine
		if err := s.db.View(func(tx kv.Tx) error {
			return dumpEdges(tx, colls, func(l edgeLine) error { lines = append(lines, l); return nil })
		}); err != nil {
			t.Fatal(err)
		}
		return lines
	}
	if got := dumped("p"); len(got) != 1 || string(got[0].Props) != `{"w":1.0,"tags":["t"]}` {
		t.Errorf("edges among p: %+v", got)
	}
	lines := dumped("p", "q")
	if len(lines) != 3 {
		t.Fatalf("edges among p and q: %+v", lines)
	}
	m := openStore(t, "memory")
	putNamed(t, m, "p", "a")
	putNamed(t, m, "q", "x")
	if e := wantCode(t, m.loadEdges(ctx, lines), CodeNotFound); e.Field != "to" {
		t.Errorf("an edge to a missing document: %+v", e)
	}
	putNamed(t, m, "p", "b")
	if err := m.loadEdges(ctx, lines); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	for _, st := range []*Store{s, m} {
		w := &a
		if st == m {
			w = &b
		}
		for _, r := range []Ref{ref("p", "a"), ref("p", "b"), ref("q", "x")} {
			res, _ := st.Neighbors(ctx, r, NeighborQuery{})
			fmt.Fprintln(w, edgeList(t, res, false))
		}
	}
	if a.String() != b.String() {
		t.Errorf("loaded edges\n%s differ from\n%s", b.String(), a.String())
	}
	if err := m.loadEdges(ctx, []edgeLine{{From: refLine{"p", []byte(`"a"`)}, Type: "r", To: refLine{"p", []byte(`{`)}}}); ErrorCode(err) != CodeInvalid {
		t.Errorf("a bad edge line: %v", err)
	}
}

// TestVerifyEdges: Verify finds an edge stored one way only, and one
// whose end is gone.
func TestVerifyEdges(t *testing.T) {
	s := openStore(t, "memory")
	ctx := context.Background()
	putNamed(t, s, "p", "a", "b")
	link(t, s, ref("p", "a"), "r", ref("p", "b"), "")
	inKey := edgeKey(AppendKey(nil, Text("b")), "r", "p", AppendKey(nil, Text("a")))
	update := func(fn func(tx kv.Tx) error) {
		if err := s.db.Update(fn); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx kv.Tx) error { return tx.Bucket(inBucket("p")).Delete(inKey) })
	if err := s.Verify(ctx); err == nil || !strings.Contains(err.Error(), "not stored the other way") {
		t.Errorf("a one-way edge: %v", err)
	}
	update(func(tx kv.Tx) error { return tx.Bucket(inBucket("p")).Put(inKey, nil) })
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	update(func(tx kv.Tx) error { return tx.Bucket(docsBucket("p")).Delete(AppendKey(nil, Text("b"))) })
	if err := s.Verify(ctx); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("an edge to a missing document: %v", err)
	}
	update(func(tx kv.Tx) error { return removeEdges(tx, "p", AppendKey(nil, Text("b"))) })
}

// TestEdgesAgainstModel: random links, unlinks, puts and deletes over two
// collections leave exactly the edges a model of them holds, listed the
// same both ways, and Verify passes.
func TestEdgesAgainstModel(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(9, 9))
		colls, types := []string{"a", "b"}, []string{"x", "y"}
		type edge struct{ from, typ, to string } // refs as "coll/id"
		model := map[edge]bool{}
		live := map[string]bool{}
		pick := func() (string, Ref) {
			c, id := colls[rng.IntN(2)], rng.IntN(12)
			return fmt.Sprintf("%s/%d", c, id), ref(c, id)
		}
		for range 600 {
			k1, r1 := pick()
			k2, r2 := pick()
			typ := types[rng.IntN(2)]
			switch op := rng.IntN(10); {
			case op < 3:
				if _, err := s.Put(ctx, r1.Collection, r1.ID, j(t, `{"v": 1}`)); err != nil {
					t.Fatal(err)
				}
				live[k1] = true
			case op < 4:
				if _, err := s.Delete(ctx, r1.Collection, r1.ID); err != nil {
					t.Fatal(err)
				}
				delete(live, k1)
				for e := range model {
					if e.from == k1 || e.to == k1 {
						delete(model, e)
					}
				}
			case op < 8:
				_, err := s.Link(ctx, r1, typ, r2, Null())
				if live[k1] && live[k2] {
					if err != nil {
						t.Fatal(err)
					}
					model[edge{k1, typ, k2}] = true
				} else if c := ErrorCode(err); c != CodeNotFound && c != CodeCollectionNotFound {
					t.Fatalf("link %s → %s, one missing: %v", k1, k2, err)
				}
			default:
				removed, err := s.Unlink(ctx, r1, typ, r2)
				if err != nil || removed != model[edge{k1, typ, k2}] {
					t.Fatalf("unlink %s -%s-> %s: %v %v", k1, typ, k2, removed, err)
				}
				delete(model, edge{k1, typ, k2})
			}
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		var want, out, in []string
		for e := range model {
			want = append(want, e.from+" "+e.typ+" "+e.to)
		}
		for k := range live {
			c, id, _ := strings.Cut(k, "/")
			n, _ := strconv.Atoi(id)
			o, err := s.Neighbors(ctx, ref(c, n), NeighborQuery{Limit: MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			i, err := s.InNeighbors(ctx, ref(c, n), NeighborQuery{Limit: MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range o.Edges {
				out = append(out, fmt.Sprintf("%s/%s %s %s/%s", e.From.Collection, js(t, e.From.ID), e.Type, e.To.Collection, js(t, e.To.ID)))
			}
			for _, e := range i.Edges {
				in = append(in, fmt.Sprintf("%s/%s %s %s/%s", e.From.Collection, js(t, e.From.ID), e.Type, e.To.Collection, js(t, e.To.ID)))
			}
		}
		slices.Sort(want)
		slices.Sort(out)
		slices.Sort(in)
		if len(want) < 20 || !slices.Equal(out, want) || !slices.Equal(in, want) {
			t.Fatalf("%d edges out, %d in, want %d", len(out), len(in), len(want))
		}
	})
}

// TestDumpCarriesEdges: a dump carries the edges among the collections
// it dumps, after their documents, and Load links them again.
func TestDumpCarriesEdges(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		putNamed(t, s, "p", "a", "b")
		putNamed(t, s, "q", "x")
		link(t, s, ref("p", "a"), "r", ref("p", "b"), `{"w": 1.0}`)
		link(t, s, ref("p", "b"), "r", ref("q", "x"), "")
		for _, c := range []struct {
			colls []string
			edges int
		}{{nil, 2}, {[]string{"p"}, 1}} {
			var dump bytes.Buffer
			if _, err := s.Dump(ctx, &dump, c.colls, nil); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(dump.String(), `{"type":"edge","edge":{`); got != c.edges {
				t.Fatalf("dump of %v: %d edge lines, want %d:\n%s", c.colls, got, c.edges, dump.String())
			}
			m := openStore(t, "memory")
			if _, err := m.Load(ctx, &dump, LoadRefuse, 0, nil); err != nil {
				t.Fatal(err)
			}
			res, err := m.Neighbors(ctx, ref("p", "a"), NeighborQuery{})
			if err != nil || len(res.Edges) != 1 || js(t, res.Edges[0].Props) != `{"w":1.0}` {
				t.Fatalf("loaded: %+v %v", res, err)
			}
			res, _ = m.Neighbors(ctx, ref("p", "b"), NeighborQuery{})
			if len(res.Edges) != c.edges-1 {
				t.Errorf("b's edges after loading %v: %v", c.colls, edgeList(t, res, false))
			}
		}
		bad := `{"type":"dump","format":1}` + "\n" + `{"type":"collection","collection":"p"}` + "\n" +
			`{"type":"edge","edge":{"from":{"collection":"p","id":"a"},"type":"r","to":{"collection":"p","id":"zz"}}}` + "\n"
		m := openStore(t, "memory")
		if _, err := m.Load(ctx, strings.NewReader(bad), LoadRefuse, 0, nil); ErrorCode(err) != CodeNotFound || !strings.Contains(err.Error(), "line 3") {
			t.Errorf("an edge to a missing document: %v", err)
		}
	})
}
