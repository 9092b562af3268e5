package test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStoreArgumentsE2E: through `mcpkit store` and the Go SDK's client,
// in both eras, a bad argument is a tool error (isError, never a protocol
// error) whose message names the argument, the rule and the value briefly:
// mmr -0.1, a number beyond float64 (1e400), a document nested 600 levels
// deep; vector.k 0 is refused as -1 is, never read as "not given"; and an
// argument given empty means what it says (select [] keeps no field,
// set_schema fields null removes the declaration).
func TestStoreArgumentsE2E(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs, _ := serveStore(t, era)
			call := func(tool, args string) string { return storeCall(t, cs, tool, args) }
			searchNotes(t, call)
			for _, tc := range []struct{ tool, args, msg string }{
				{"search", `{"collection": "notes", "vector": {"vector": [1, 0]}, "mmr": -0.1}`, "invalid argument /mmr: -0.1 is below 0"},
				{"search", `{"collection": "notes", "vector": {"vector": [1, 0], "k": 0}}`, "invalid argument /vector/k: 0 is below 1"},
				{"search", `{"collection": "notes", "vector": {"vector": [1, 0], "k": -1}}`, "invalid argument /vector/k: -1 is below 1"},
				{"search", `{"collection": "notes", "vector": {"vector": [1, 0], "approximate": true, "ef": 0}}`, "invalid argument /vector/ef: 0 is below 1"},
				{"store", `{"collection": "notes", "id": 9, "doc": {"h": 1e400}}`, "invalid argument /doc/h: 1e400 is out of range: a number's magnitude is at most 1.7976931348623157e+308"},
				{"store", `{"collection": "notes", "id": 9, "doc": ` + deep + `}`, "invalid argument /doc: nested more than 512 levels deep"},
				{"page", `{"collection": "notes", "cursor": ""}`, `invalid argument /cursor: "" is empty`},
			} {
				res := callTool(t, cs, tc.tool, json.RawMessage(tc.args))
				if got := resultText(res); !res.IsError || got != tc.msg {
					t.Errorf("%s %.80s: isError %v, %q\nwant the tool error %q", tc.tool, tc.args, res.IsError, got, tc.msg)
				}
			}
			if got := call("page", `{"collection": "notes", "select": [], "limit": 2}`); !strings.HasPrefix(got, `{"docs":[{"id":1,"revision":1},{"id":2,"revision":2}],`) {
				t.Errorf("page select []: %s, want the ids only, no doc", got)
			}
			call("set_schema", `{"collection": "notes", "fields": [{"name": "lang", "type": "text", "required": true}]}`)
			if got := call("set_schema", `{"collection": "notes", "fields": null}`); got != `{"collection":"notes","fields":null}` {
				t.Errorf("set_schema fields null: %s", got)
			}
			if got := call("get_schema", `{"collection": "notes"}`); got != `{"fields":null}` {
				t.Errorf("get_schema after fields null: %s, want no schema", got)
			}
		})
	}
}
