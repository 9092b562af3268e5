package test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// storeCall calls a store tool with raw JSON arguments (ints and floats
// as written) and returns the result's JSON text, failing on an error.
func storeCall(t *testing.T, cs *mcp.ClientSession, tool, args string) string {
	t.Helper()
	res := callTool(t, cs, tool, json.RawMessage(args))
	if res.IsError {
		t.Fatalf("%s %s: %s", tool, args, resultText(res))
	}
	return resultText(res)
}

// serveStore launches `mcpkit store args...` as an MCP client does, over
// stdio, in era; closing the session ends the process.
func serveStore(t *testing.T, era string, args ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	stderr := &syncBuffer{}
	return connectCommandStdio(t, era, stderr, binary(t), append([]string{"store"}, args...)...), stderr
}

// TestStoreE2E: `mcpkit store FILE` serves the seed's tool names over
// stdio in both eras; what one process stores, a second process over the
// same file finds, typed values intact.
func TestStoreE2E(t *testing.T) {
	for i, era := range eras {
		t.Run(era, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.db")
			cs, _ := serveStore(t, era, path)
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{"store", "get", "page", "compare_and_set", "dump", "load", "backup", "result"} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools/list lacks %s: %v", want, names)
				}
			}
			doc := `{"n":1,"f":1.0,"v":{"$vector":[0.5]},"b":{"$bytes":"AAE="},"era":` + strconv.Itoa(i) + `}`
			if got := storeCall(t, cs, "store", `{"collection": "c", "id": "a", "doc": `+doc+`}`); got != `{"id":"a","revision":1}` {
				t.Fatalf("store = %s", got)
			}
			storeCall(t, cs, "insert_auto", `{"collection": "c", "doc": {"n": 2}}`)
			if got := storeCall(t, cs, "get", `{"collection": "c", "id": "a", "vectors": true}`); got != `{"id":"a","revision":1,"doc":`+doc+`}` {
				t.Fatalf("get = %s", got)
			}
			omitted := strings.Replace(doc, `{"$vector":[0.5]}`, `{"$omitted":"vector","dims":1}`, 1) // the default shape
			page := storeCall(t, cs, "page", `{"collection": "c", "filter": {"n": {"$gte": 1}}, "explain": true}`)
			if !strings.HasPrefix(page, `{"docs":[{"id":1,"revision":2,"doc":{"n":2}},{"id":"a","revision":1,"doc":`+omitted+`}],"next_cursor":null,"limit":100,"plan":`) {
				t.Fatalf("page = %s", page)
			}
			cs.Close() // the process exits at EOF and releases the file

			cs, _ = serveStore(t, era, path)
			if got := storeCall(t, cs, "get", `{"collection": "c", "id": "a", "vectors": true}`); got != `{"id":"a","revision":1,"doc":`+doc+`}` {
				t.Fatalf("get in a second process = %s", got)
			}
			if got := storeCall(t, cs, "count", `{"collection": "c"}`); got != `{"count":2}` {
				t.Fatalf("count in a second process = %s", got)
			}
		})
	}
}

// TestStoreCLIVerbs: `mcpkit store dump|load|backup` run from the command
// line on store files, with plain progress lines on a stderr that is not
// a terminal; the backup serves what was loaded.
func TestStoreCLIVerbs(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	cs, _ := serveStore(t, legacyEra, src)
	storeCall(t, cs, "load", `{"data": `+mustJSON(t, storeDump(1500))+`}`)
	storeCall(t, cs, "create_scalar_index", `{"collection": "c", "field": "n"}`)
	cs.Close()

	out := filepath.Join(dir, "c.jsonl")
	code, stdout, stderr := runBinary(t, bin, "store", "dump", src, "--out", out)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "dump: 1500/1500 documents\n") || !strings.Contains(stderr, "dumped 1500 documents to "+out) {
		t.Fatalf("store dump: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runBinary(t, bin, "store", "dump", "--collection", "c", src)
	if code != 0 || strings.Count(stdout, "\n") != 1502 || !strings.Contains(stdout, `"indexes":[{"name":"n","fields":["n"]}]`) {
		t.Fatalf("store dump to stdout: exit %d, %d lines", code, strings.Count(stdout, "\n"))
	}
	loaded := filepath.Join(dir, "loaded.db")
	code, _, stderr = runBinary(t, bin, "store", "load", loaded, "--in", out)
	if code != 0 || !strings.Contains(stderr, "load: 1502/1502 lines\n") || !strings.Contains(stderr, "loaded 1500 documents in 1 collections") {
		t.Fatalf("store load: exit %d, stderr %q", code, stderr)
	}
	backup := filepath.Join(dir, "backup.db")
	code, _, stderr = runBinary(t, bin, "store", "backup", loaded, "--out", backup)
	if code != 0 || !strings.Contains(stderr, "backed up "+loaded+" to "+backup) {
		t.Fatalf("store backup: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr = runBinary(t, bin, "store", "load", "--in", out, loaded); code != 1 || !strings.Contains(stderr, "replace or merge") {
		t.Fatalf("a second load: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr = runBinary(t, bin, "store", "load", loaded); code != 2 {
		t.Fatalf("load without --in: exit %d, stderr %q", code, stderr)
	}
	for _, s := range []string{"\r", "\x1b"} {
		if strings.Contains(stderr, s) {
			t.Errorf("stderr is not a terminal, yet the progress draws: %q", stderr)
		}
	}
	cs, _ = serveStore(t, modernEra, backup)
	got := storeCall(t, cs, "page", `{"collection": "c", "order_by": "n", "desc": true, "limit": 1, "explain": true}`)
	if !strings.HasPrefix(got, `{"docs":[{"id":1500,"revision":`) || !strings.Contains(got, `"doc":{"n":1500,"x":0.5}}]`) || !strings.Contains(got, `"index":"n"`) {
		t.Fatalf("page of the backup = %s", got)
	}
}

// storeDump is a dump of collection "c" with documents 1..n.
func storeDump(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"dump","format":1}` + "\n" + `{"type":"collection","collection":"c"}` + "\n")
	for i := 1; i <= n; i++ {
		id, _ := json.Marshal(i)
		b.WriteString(`{"type":"document","collection":"c","id":` + string(id) + `,"doc":{"n":` + string(id) + `,"x":0.5}}` + "\n")
	}
	return b.String()
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
