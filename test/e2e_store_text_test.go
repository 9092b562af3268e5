package test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// textNotes creates a stemming text index with stop words on "notes" and
// stores three notes.
func textNotes(t *testing.T, call func(tool, args string) string) {
	t.Helper()
	want := `{"created":true,"index":{"name":"body","fields":["title","body"],"language":"english","stem":true,"stop_words":true}}`
	if got := call("create_text_index", `{"collection": "notes", "name": "body", "fields": ["title", "body"], "stem": true, "stop_words": true}`); got != want {
		t.Fatalf("create_text_index = %s", got)
	}
	for _, doc := range []string{
		`{"collection": "notes", "id": 1, "doc": {"title": "Solar panels", "body": "The panels on the roof were running hot", "lang": "en"}}`,
		`{"collection": "notes", "id": 2, "doc": {"title": "Garden", "body": "A solar lamp runs all night", "lang": "en"}}`,
		`{"collection": "notes", "id": 3, "doc": {"title": "Panneaux", "body": "solar panel solar panel", "lang": "fr"}}`,
	} {
		call("store", doc)
	}
}

// dumpAndLoad dumps the store file path with `mcpkit store dump` and
// loads the dump into a new store file beside it with `mcpkit store
// load`, whose path it returns.
func dumpAndLoad(t *testing.T, path string) string {
	t.Helper()
	bin := binary(t)
	dump := path + ".dump.jsonl"
	if code, _, stderr := runBinary(t, bin, "store", "dump", path, "--out", dump); code != 0 {
		t.Fatalf("store dump: exit %d, %s", code, stderr)
	}
	loaded := path + ".loaded.db"
	if code, _, stderr := runBinary(t, bin, "store", "load", loaded, "--in", dump); code != 0 {
		t.Fatalf("store load: exit %d, %s", code, stderr)
	}
	return loaded
}

// The calls TestStoreTextE2E makes, and their answers.
var textE2E = []struct{ tool, args, want string }{
	{"phrase_search", `{"collection": "notes", "phrase": "solar panels", "select": ["lang"]}`,
		`{"hits":[{"id":1,"doc":{"lang":"en"},"field":"title","positions":[0,1],"matches":1},{"id":3,"doc":{"lang":"fr"},"field":"body","positions":[0,1],"matches":2}],"next_cursor":null,"limit":100}`},
	{"phrase_search", `{"collection": "notes", "phrase": "roof were running", "fields": ["body"], "select": ["none"]}`,
		`{"hits":[{"id":1,"doc":{},"field":"body","positions":[4,6],"matches":1}],"next_cursor":null,"limit":100}`},
	{"phrase_search", `{"collection": "notes", "phrase": "solar runs", "slop": 1, "filter": {"lang": "en"}, "select": ["none"]}`,
		`{"hits":[{"id":2,"doc":{},"field":"body","positions":[1,3],"matches":1}],"next_cursor":null,"limit":100}`},
}

// TestStoreTextE2E: `mcpkit store FILE` serves create_text_index,
// phrase_search and search's text source over stdio in both eras; a
// second process over the same file, and a store loaded from the first
// one's dump (`mcpkit store dump` then `load`, which rebuilds the index
// from its definition), answer the same.
func TestStoreTextE2E(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.db")
			cs, _ := serveStore(t, era, path)
			call := func(tool, args string) string { return storeCall(t, cs, tool, args) }
			textNotes(t, call)
			var ranked string
			check := func(where string) {
				t.Helper()
				for _, c := range textE2E {
					if got := call(c.tool, c.args); got != c.want {
						t.Fatalf("%s: %s %s\n= %s\nwant %s", where, c.tool, c.args, got, c.want)
					}
				}
				// BM25: note 3 has "solar" and "panel" twice in a short body.
				got := call("search", `{"collection": "notes", "text": {"query": "solar panel"}, "select": ["none"], "explain": true}`)
				if !strings.HasPrefix(got, `{"hits":[{"id":3,`) || strings.Count(got, `"id":`) != 3 {
					t.Fatalf("%s: search = %s", where, got)
				}
				if ranked == "" {
					ranked = got
				} else if got != ranked {
					t.Fatalf("%s: search = %s\nwant %s", where, got, ranked)
				}
			}
			check("first process")
			res := callTool(t, cs, "phrase_search", json.RawMessage(`{"collection": "notes", "phrase": "the of"}`))
			if !res.IsError || !strings.Contains(resultText(res), "/phrase") {
				t.Fatalf("a phrase of stop words: %s", resultText(res))
			}
			res = callTool(t, cs, "create_text_index", json.RawMessage(`{"collection": "notes", "name": "x", "fields": ["b"], "language": "klingon"}`))
			if !res.IsError || !strings.Contains(resultText(res), "/language") {
				t.Fatalf("an unknown language: %s", resultText(res))
			}
			cs.Close()

			cs, _ = serveStore(t, era, path)
			check("second process")
			// Writes keep the index: a replaced and a deleted note.
			call("store", `{"collection": "notes", "id": 3, "doc": {"title": "Panneaux", "body": "nothing here"}}`)
			call("delete", `{"collection": "notes", "id": 1}`)
			if got := call("phrase_search", `{"collection": "notes", "phrase": "solar panel", "select": ["none"]}`); got != `{"hits":[],"next_cursor":null,"limit":100}` {
				t.Fatalf("after the writes: %s", got)
			}
			cs.Close()

			cs, _ = serveStore(t, era, dumpAndLoad(t, path))
			if got := call("phrase_search", `{"collection": "notes", "phrase": "solar lamp", "select": ["none"]}`); got != `{"hits":[{"id":2,"doc":{},"field":"body","positions":[1,2],"matches":1}],"next_cursor":null,"limit":100}` {
				t.Fatalf("loaded from the dump: %s", got)
			}
		})
	}
}
