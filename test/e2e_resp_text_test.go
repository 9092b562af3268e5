package test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRespExecuteText: through the built binary over stdio, resp_execute's
// default result is its text form (one text content, no
// structuredContent): the reply alone for one command, [N] before each of
// several, an outcome line and isError for an error reply; each reads back
// (pkg/resp's ParseTextForm) to the reply format "json" returns.
func TestRespExecuteText(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	cs := startResp(t, nil, "--port", strconv.Itoa(srv.Port), "--log-level", "warn")
	text := func(args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "resp_execute", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Content) != 1 || res.StructuredContent != nil {
			b, _ := json.Marshal(res)
			t.Fatalf("%v: want one text content and no structuredContent, got %s", args, b)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	for _, c := range []struct {
		cmds    [][]any
		want    string
		isError bool
	}{
		{[][]any{{"SET", "k", "v"}}, `(status) OK`, false},
		{[][]any{{"GET", "k"}}, `v`, false},
		{[][]any{{"GET", "nothing"}}, `(nil)`, false},
		{[][]any{{"SET", "b", map[string]any{"base64": "AP8="}}, {"GET", "b"}, {"RPUSH", "l", "x", "y"}, {"LRANGE", "l", 0, -1}},
			"[1] (status) OK\n[2] \"\\x00\\xff\"\n[3] (integer) 2\n[4] 1) x\n    2) y", false},
		{[][]any{{"INCR", "k"}, {"SET", "after", "yes"}}, "outcome: error\n[1] (error) ERR value is not an integer or out of range\n[2] (status) OK", true},
	} {
		if got, isErr := text(map[string]any{"commands": c.cmds}); got != c.want || isErr != c.isError {
			t.Errorf("%v: isError %v,\n%s\nwant isError %v,\n%s", c.cmds, isErr, got, c.isError, c.want)
		}
	}
	// Lossless: a binary value and an array read back to the JSON form.
	got, _ := text(map[string]any{"commands": [][]any{{"LRANGE", "l", 0, -1}}})
	v, err := resp.ParseTextForm([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	var asJSON struct{ Replies []json.RawMessage }
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "resp_execute", Arguments: map[string]any{"format": "json", "commands": [][]any{{"LRANGE", "l", 0, -1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &asJSON); err != nil {
		t.Fatal(err)
	}
	if js, _ := json.Marshal(v); string(js) != string(asJSON.Replies[0]) {
		t.Errorf("the text form %q reads back as %s, format json gives %s", got, js, asJSON.Replies[0])
	}
}
