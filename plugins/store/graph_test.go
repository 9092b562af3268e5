package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// refOut is a document reference in a reply.
type refOut struct {
	Collection string          `json:"collection"`
	ID         json.RawMessage `json:"id"`
}

func (r refOut) String() string { return r.Collection + "/" + string(r.ID) }

// edgeOut is an edge in a reply.
type edgeOut struct {
	Type  string          `json:"type"`
	From  refOut          `json:"from"`
	To    refOut          `json:"to"`
	Props json.RawMessage `json:"props"`
	Doc   *struct {
		ID  json.RawMessage `json:"id"`
		Doc json.RawMessage `json:"doc"`
	} `json:"doc"`
}

type neighborsOut struct {
	Edges      []edgeOut `json:"edges"`
	NextCursor *string   `json:"next_cursor"`
	Limit      int       `json:"limit"`
}

// storePeople stores people ann, bob, cy (ids text) and city 1 (id int),
// with ann → bob (knows, {"since": 2020}), ann → cy (knows), bob → cy
// (knows), cy → ann (knows), ann → city 1 (lives_in).
func (e *env) storePeople() {
	e.t.Helper()
	for _, p := range []string{"ann", "bob", "cy"} {
		e.ok("store", fmt.Sprintf(`{"collection": "people", "id": %q, "doc": {"name": %q}}`, p, p))
	}
	e.ok("store", `{"collection": "cities", "id": 1, "doc": {"name": "Oslo"}}`)
	for _, l := range []string{
		`"from": {"collection": "people", "id": "ann"}, "type": "knows", "to": {"collection": "people", "id": "bob"}, "props": {"since": 2020}`,
		`"from": {"collection": "people", "id": "ann"}, "type": "knows", "to": {"collection": "people", "id": "cy"}`,
		`"from": {"collection": "people", "id": "bob"}, "type": "knows", "to": {"collection": "people", "id": "cy"}`,
		`"from": {"collection": "people", "id": "cy"}, "type": "knows", "to": {"collection": "people", "id": "ann"}`,
		`"from": {"collection": "people", "id": "ann"}, "type": "lives_in", "to": {"collection": "cities", "id": 1}`,
	} {
		if got := e.ok("link", "{"+l+"}"); got != `{"created":true}` {
			e.t.Fatalf("link %s: %s", l, got)
		}
	}
}

// TestLinkTools: link, neighbors (paged, with documents), in_neighbors,
// unlink, and edges going with a deleted document, over MCP.
func TestLinkTools(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.storePeople()
		// Again: replaces the properties.
		if got := e.ok("link", `{"from": {"collection": "people", "id": "ann"}, "type": "knows", "to": {"collection": "people", "id": "bob"}, "props": {"since": 2021, "w": 0.5}}`); got != `{"created":false}` {
			t.Errorf("link again: %s", got)
		}
		n := okAs[neighborsOut](e, "neighbors", `{"collection": "people", "id": "ann"}`)
		var got []string
		for _, ed := range n.Edges {
			got = append(got, ed.Type+">"+ed.To.String()+string(ed.Props))
		}
		want := []string{`knows>people/"bob"{"since":2021,"w":0.5}`, `knows>people/"cy"`, `lives_in>cities/1`}
		if !slices.Equal(got, want) || n.NextCursor != nil || n.Limit != 100 {
			t.Errorf("ann's edges: %v %+v", got, n)
		}
		// Pages of one, with the neighbours' documents projected.
		var paged []string
		args := `{"collection": "people", "id": "ann", "type": "knows", "limit": 1, "with_docs": true, "select": ["name"]`
		n = okAs[neighborsOut](e, "neighbors", args+`}`)
		for range 5 {
			for _, ed := range n.Edges {
				paged = append(paged, ed.To.String()+string(ed.Doc.Doc))
			}
			if n.NextCursor == nil {
				break
			}
			n = okAs[neighborsOut](e, "neighbors", args+fmt.Sprintf(`, "cursor": %q}`, *n.NextCursor))
		}
		if !slices.Equal(paged, []string{`people/"bob"{"name":"bob"}`, `people/"cy"{"name":"cy"}`}) {
			t.Errorf("ann knows, paged: %v", paged)
		}
		n = okAs[neighborsOut](e, "in_neighbors", `{"collection": "people", "id": "cy"}`)
		got = nil
		for _, ed := range n.Edges {
			got = append(got, ed.From.String()+">"+ed.Type+">"+ed.To.String())
		}
		if !slices.Equal(got, []string{`people/"ann">knows>people/"cy"`, `people/"bob">knows>people/"cy"`}) {
			t.Errorf("into cy: %v", got)
		}
		if got := e.ok("in_neighbors", `{"collection": "cities", "id": 1, "with_docs": true}`); got != `{"edges":[{"type":"lives_in","from":{"collection":"people","id":"ann"},"to":{"collection":"cities","id":1},"doc":{"id":"ann","revision":1,"doc":{"name":"ann"}}}],"next_cursor":null,"limit":100}` {
			t.Errorf("into Oslo: %s", got)
		}
		// unlink
		unlink := `{"from": {"collection": "people", "id": "bob"}, "type": "knows", "to": {"collection": "people", "id": "cy"}}`
		for _, want := range []string{`{"removed":true}`, `{"removed":false}`} {
			if got := e.ok("unlink", unlink); got != want {
				t.Errorf("unlink: %s, want %s", got, want)
			}
		}
		// Deleting cy deletes its edges, both ways.
		e.ok("delete", `{"collection": "people", "id": "cy"}`)
		if got := okAs[neighborsOut](e, "neighbors", `{"collection": "people", "id": "ann", "type": "knows"}`); len(got.Edges) != 1 || got.Edges[0].To.String() != `people/"bob"` {
			t.Errorf("ann knows after cy's delete: %+v", got)
		}
		if got := okAs[neighborsOut](e, "in_neighbors", `{"collection": "people", "id": "ann"}`); len(got.Edges) != 0 {
			t.Errorf("into ann after cy's delete: %+v", got)
		}
		e.fail("neighbors", `{"collection": "people", "id": "cy"}`, "not_found")
	})
}

// TestLinkToolErrors: a missing end, bad arguments at their places.
func TestLinkToolErrors(t *testing.T) {
	e := connect(t, Config{})
	e.storePeople()
	ann, nobody := `{"collection": "people", "id": "ann"}`, `{"collection": "people", "id": "nobody"}`
	r := e.fail("link", `{"from": `+ann+`, "type": "t", "to": `+nobody+`}`, "not_found")
	if r.Error.Message != `cannot link: no document "nobody" in "people" (the edge's to end)` {
		t.Errorf("a missing target: %s", r.Error.Message)
	}
	e.fail("link", `{"from": `+nobody+`, "type": "t", "to": `+ann+`}`, "not_found")
	e.fail("link", `{"from": `+ann+`, "type": "t", "to": {"collection": "nope", "id": 1}}`, "collection_not_found")
	for args, path := range map[string]string{
		`{"from": ` + ann + `, "type": "", "to": ` + ann + `}`:                          "/type",
		`{"from": ` + ann + `, "type": "t", "to": ` + ann + `, "props": [1]}`:           "/props",
		`{"from": ` + ann + `, "type": "t", "to": {"collection": "people", "id": 1.5}}`: "/to/id",
		`{"from": {"collection": "people", "id": ""}, "type": "t", "to": ` + ann + `}`:  "/from/id",
		`{"from": {"collection": "", "id": "ann"}, "type": "t", "to": ` + ann + `}`:     "/from/collection",
		`{"from": ` + ann + `, "type": "t"}`:                                            "/to",
	} {
		e.badParams("link", args, path)
	}
	e.badParams("unlink", `{"from": `+ann+`, "type": "t", "to": {"collection": "people", "id": true}}`, "/to/id")
	e.badParams("neighbors", `{"collection": "people", "id": "ann", "cursor": "x"}`, "/cursor")
	e.badParams("neighbors", `{"collection": "people", "id": "ann", "limit": -1}`, "/limit")
	e.badParams("in_neighbors", `{"collection": "people", "id": [1]}`, "/id")
	e.fail("in_neighbors", `{"collection": "nope", "id": 1}`, "collection_not_found")
	// A cursor of one document is refused for another.
	n := okAs[neighborsOut](e, "neighbors", `{"collection": "people", "id": "ann", "limit": 1}`)
	e.badParams("neighbors", fmt.Sprintf(`{"collection": "people", "id": "bob", "cursor": %q}`, *n.NextCursor), "/cursor")
}

type traverseOut struct {
	Nodes []struct {
		refOut
		Depth int      `json:"depth"`
		Via   *edgeOut `json:"via"`
		Doc   *struct {
			Doc json.RawMessage `json:"doc"`
		} `json:"doc"`
	} `json:"nodes"`
	Truncated bool `json:"truncated"`
	EdgesRead int  `json:"edges_read"`
}

func (tr traverseOut) nodes() []string {
	var out []string
	for _, n := range tr.Nodes {
		out = append(out, fmt.Sprintf("%s@%d", n.refOut, n.Depth))
	}
	return out
}

// TestTraverseTool: depth, types, direction, the cycle, truncation and
// documents over MCP.
func TestTraverseTool(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.storePeople()
		for args, want := range map[string][]string{
			`"max_depth": 1`:                        {`people/"ann"@0`, `people/"bob"@1`, `people/"cy"@1`, `cities/1@1`},
			`"types": ["knows"]`:                    {`people/"ann"@0`, `people/"bob"@1`, `people/"cy"@1`},
			`"types": ["knows"], "direction": "in"`: {`people/"ann"@0`, `people/"cy"@1`, `people/"bob"@2`},
			`"direction": "both", "max_depth": 64`:  {`people/"ann"@0`, `people/"bob"@1`, `people/"cy"@1`, `cities/1@1`},
		} {
			tr := okAs[traverseOut](e, "traverse", `{"collection": "people", "id": "ann", `+args+`}`)
			if !slices.Equal(tr.nodes(), want) || tr.Truncated {
				t.Errorf("%s: %v (truncated %v), want %v", args, tr.nodes(), tr.Truncated, want)
			}
		}
		tr := okAs[traverseOut](e, "traverse", `{"collection": "people", "id": "bob", "limit": 1, "with_docs": true, "select": ["name"]}`)
		if !slices.Equal(tr.nodes(), []string{`people/"bob"@0`, `people/"cy"@1`}) || !tr.Truncated {
			t.Errorf("limit 1: %v truncated %v", tr.nodes(), tr.Truncated)
		}
		if v := tr.Nodes[1].Via; v == nil || v.Type != "knows" || v.From.String() != `people/"bob"` || string(tr.Nodes[1].Doc.Doc) != `{"name":"cy"}` || tr.Nodes[0].Via != nil {
			t.Errorf("cy: %+v", tr.Nodes[1])
		}
		tr = okAs[traverseOut](e, "traverse", `{"collection": "people", "id": "bob", "max_depth": 2}`)
		if v := tr.Nodes[2].Via; !slices.Equal(tr.nodes(), []string{`people/"bob"@0`, `people/"cy"@1`, `people/"ann"@2`}) || v.From.String() != `people/"cy"` {
			t.Errorf("from bob, depth 2: %v", tr.nodes())
		}
	})
}

// TestTraverseToolErrors: bad arguments at their places; a missing start.
func TestTraverseToolErrors(t *testing.T) {
	e := connect(t, Config{})
	e.storePeople()
	for args, path := range map[string]string{
		`{"collection": "people", "id": "ann", "max_depth": 0}`:         "/max_depth",
		`{"collection": "people", "id": "ann", "max_depth": 65}`:        "/max_depth",
		`{"collection": "people", "id": "ann", "direction": "up"}`:      "/direction",
		`{"collection": "people", "id": "ann", "types": [""]}`:          "/types/0",
		`{"collection": "people", "id": 1.5}`:                           "/id",
		`{"collection": "", "id": "ann"}`:                               "/collection",
		`{"collection": "people", "id": "ann", "select": [""]}`:         "/select/0",
		`{"collection": "people", "id": "ann", "limit": 1, "extra": 1}`: "/extra",
	} {
		e.badParams("traverse", args, path)
	}
	e.fail("traverse", `{"collection": "people", "id": "nobody"}`, "not_found")
	e.fail("traverse", `{"collection": "nope", "id": "ann"}`, "collection_not_found")
}
