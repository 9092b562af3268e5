package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

type joinOut struct {
	Rows []struct {
		ID     json.RawMessage `json:"id"`
		Doc    json.RawMessage `json:"doc"`
		Joined []struct {
			ID  json.RawMessage `json:"id"`
			Doc json.RawMessage `json:"doc"`
		} `json:"joined"`
		More bool `json:"more"`
	} `json:"rows"`
	NextCursor *string `json:"next_cursor"`
	Limit      int     `json:"limit"`
	Plan       *struct {
		Local           planOut `json:"local"`
		Method          string  `json:"method"`
		ForeignIndex    string  `json:"foreign_index"`
		ForeignExamined int     `json:"foreign_examined"`
	} `json:"plan"`
}

// rows renders rows as "id:[joined ids]" (+ "+" when more).
func (j joinOut) rows() []string {
	var out []string
	for _, r := range j.Rows {
		var ids []string
		for _, d := range r.Joined {
			ids = append(ids, string(d.ID))
		}
		s := fmt.Sprintf("%s:[%s]", r.ID, strings.Join(ids, " "))
		if r.More {
			s += "+"
		}
		out = append(out, s)
	}
	return out
}

// storeShop stores users 1..3 (with uid = id) and orders 10..14.
func (e *env) storeShop() {
	e.t.Helper()
	for i, u := range []string{`{"uid": 1, "tier": "gold"}`, `{"uid": 2, "tier": "free"}`, `{"uid": 3, "tier": "gold"}`} {
		e.ok("store", fmt.Sprintf(`{"collection": "users", "id": %d, "doc": %s}`, i+1, u))
	}
	for i, o := range []string{`{"uid": 1, "total": 5}`, `{"uid": 2.0, "total": 7}`, `{"uid": 1, "total": 9}`, `{"uid": 4, "total": 1}`, `{"uid": [1, 3], "total": 2}`} {
		e.ok("store", fmt.Sprintf(`{"collection": "orders", "id": %d, "doc": %s}`, 10+i, o))
	}
}

// TestJoinTool: users to their orders and orders to their user (by
// field, without and with an index: the same rows), projections, limits,
// pages, and a join by edges, over MCP.
func TestJoinTool(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.storeShop()
		uo := `{"collection": "users", "foreign": "orders", "local_field": "uid", "foreign_field": "uid", "explain": true}`
		ou := `{"collection": "orders", "foreign": "users", "local_field": "uid", "foreign_field": "uid", "explain": true}`
		for _, method := range []string{"scan", "index"} {
			j := okAs[joinOut](e, "join", uo)
			if !slices.Equal(j.rows(), []string{"1:[10 12]", "2:[11]", "3:[]"}) || j.Plan.Method != method {
				t.Errorf("%s: users → orders: %v %+v", method, j.rows(), j.Plan)
			}
			j = okAs[joinOut](e, "join", ou)
			if !slices.Equal(j.rows(), []string{"10:[1]", "11:[2]", "12:[1]", "13:[]", "14:[1 3]"}) || j.Plan.Method != method {
				t.Errorf("%s: orders → users: %v %+v", method, j.rows(), j.Plan)
			}
			e.ok("create_index", `{"collection": "orders", "name": "uid", "fields": ["uid"]}`)
			e.ok("create_index", `{"collection": "users", "name": "uid", "fields": ["uid"]}`)
		}
		j := okAs[joinOut](e, "join", `{"collection": "users", "filter": {"tier": "gold"}, "select": ["tier"], "limit": 1, "foreign": "orders", "local_field": "uid", "foreign_field": "uid", "foreign_select": ["total"], "foreign_filter": {"total": {"$gte": 5}}, "foreign_limit": 1}`)
		if !slices.Equal(j.rows(), []string{"1:[10]+"}) || string(j.Rows[0].Doc) != `{"tier":"gold"}` || string(j.Rows[0].Joined[0].Doc) != `{"total":5}` || j.NextCursor == nil || j.Plan != nil {
			t.Fatalf("gold users, one: %s", e.ok("join", `{"collection": "users", "foreign": "orders", "local_field": "uid", "foreign_field": "uid"}`))
		}
		j = okAs[joinOut](e, "join", fmt.Sprintf(`{"collection": "users", "filter": {"tier": "gold"}, "limit": 1, "cursor": %q, "foreign": "orders", "local_field": "uid", "foreign_field": "uid"}`, *j.NextCursor))
		if !slices.Equal(j.rows(), []string{"3:[]"}) || j.NextCursor != nil {
			t.Errorf("gold users, the next page: %v", j.rows())
		}
		// By edges: users who rated orders.
		e.ok("link", `{"from": {"collection": "users", "id": 2}, "type": "rated", "to": {"collection": "orders", "id": 12}, "props": {"stars": 4}}`)
		if got := okAs[joinOut](e, "join", `{"collection": "users", "foreign": "orders", "edge_type": "rated"}`).rows(); !slices.Equal(got, []string{"1:[]", "2:[12]", "3:[]"}) {
			t.Errorf("users rated: %v", got)
		}
		if got := okAs[joinOut](e, "join", `{"collection": "orders", "filter": {"total": 9}, "foreign": "users", "edge_type": "rated", "direction": "in"}`).rows(); !slices.Equal(got, []string{"12:[2]"}) {
			t.Errorf("order 12 rated by: %v", got)
		}
	})
}

// TestJoinToolErrors: bad joins are bad_params at the argument at fault.
func TestJoinToolErrors(t *testing.T) {
	e := connect(t, Config{})
	e.storeShop()
	for args, path := range map[string]string{
		`"foreign": "orders"`:                                                 "/local_field",
		`"foreign": "orders", "local_field": "uid"`:                           "/foreign_field",
		`"foreign": "orders", "local_field": "uid", "edge_type": "t"`:         "/local_field",
		`"foreign": "orders", "edge_type": "t", "direction": "both"`:          "/direction",
		`"foreign": "orders", "edge_type": "t", "cursor": "x"`:                "/cursor",
		`"foreign": "orders", "edge_type": "t", "foreign_filter": {"$or": 1}`: "/foreign_filter/$or",
		`"foreign": "orders", "edge_type": "t", "filter": {"a": {"$in": 1}}`:  "/filter/a/$in",
		`"foreign": "", "edge_type": "t"`:                                     "/foreign",
		`"edge_type": "t"`:                                                    "/foreign",
		`"foreign": "orders", "edge_type": "t", "foreign_limit": 0`:           "/foreign_limit",
	} {
		e.badParams("join", `{"collection": "users", `+args+`}`, path)
	}
	e.fail("join", `{"collection": "users", "foreign": "nope", "edge_type": "t"}`, "collection_not_found")
	e.fail("join", `{"collection": "nope", "foreign": "users", "edge_type": "t"}`, "collection_not_found")
}
