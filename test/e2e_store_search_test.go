package test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchNotes stores four notes with 2-dimensional vectors in collection
// "notes" (the worked MMR example of the engine's tests: the query (1, 0)
// is closest to 1, then 2, 3, 4) behind a vector index.
func searchNotes(t *testing.T, call func(tool, args string) string) {
	t.Helper()
	if got := call("create_index", `{"collection": "notes", "type": "vector", "fields": ["emb"], "dimension": 2}`); got != `{"created":true,"vector":{"field":"emb","dimension":2,"metric":"cosine"}}` {
		t.Fatalf("create_index = %s", got)
	}
	for _, doc := range []string{
		`{"collection": "notes", "id": 1, "doc": {"emb": {"$vector": [0.8, 0.6]}, "lang": "en"}}`,
		`{"collection": "notes", "id": 2, "doc": {"emb": {"$vector": [0.6, 0.8]}, "lang": "en"}}`,
		`{"collection": "notes", "id": 3, "doc": {"emb": {"$vector": [0.28, -0.96]}, "lang": "fr"}}`,
		`{"collection": "notes", "id": 4, "doc": {"emb": {"$vector": [0, 1]}, "lang": "fr"}}`,
	} {
		call("store", doc)
	}
}

// The searches TestStoreSearchE2E makes, and their answers (ids only, by
// select: [] of a missing field).
var searchE2E = []struct{ args, want string }{
	{`{"collection": "notes", "vector": {"vector": [1, 0]}, "select": ["none"]}`,
		`{"hits":[{"id":1,"doc":{},"score":0.016393442},{"id":2,"doc":{},"score":0.016129032},{"id":3,"doc":{},"score":0.015873017},{"id":4,"doc":{},"score":0.015625}],"vector_mode":"exact","limit":10}`},
	{`{"collection": "notes", "vector": {"vector": [1, 0], "approximate": true}, "filter": {"lang": "fr"}, "select": ["lang"], "rrf_k": 1}`,
		`{"hits":[{"id":3,"doc":{"lang":"fr"},"score":0.5},{"id":4,"doc":{"lang":"fr"},"score":0.33333334}],"vector_mode":"approximate","limit":10}`},
	{`{"collection": "notes", "vector": {"vector": [1, 0], "approximate": true}, "mmr": 0.5, "limit": 3, "select": ["none"]}`,
		`{"hits":[{"id":1,"doc":{},"score":0.016393442,"mmr":0.4},{"id":3,"doc":{},"score":0.015873017,"mmr":0.316},{"id":2,"doc":{},"score":0.016129032,"mmr":-0.18}],"vector_mode":"approximate","limit":3}`},
}

// vectorsLeftOut checks, on searchNotes' notes, that a search returns no
// vector by default (each in place as its marker), returns it with
// vectors: true, and that storing back a document read with the marker is
// refused, naming the marker's path and how to get the vector, with the
// stored vector intact.
func vectorsLeftOut(t *testing.T, cs *mcp.ClientSession, call func(tool, args string) string) {
	t.Helper()
	query := `{"collection": "notes", "vector": {"vector": [1, 0]}, "limit": 1%s}`
	if got, want := call("search", fmt.Sprintf(query, "")), `{"hits":[{"id":1,"doc":{"emb":{"$omitted":"vector","dims":2},"lang":"en"},"score":0.016393442}],"vector_mode":"exact","limit":1}`; got != want {
		t.Fatalf("search by default = %s\nwant %s", got, want)
	}
	full := `{"emb":{"$vector":[0.8,0.6]},"lang":"en"}`
	if got, want := call("search", fmt.Sprintf(query, `, "vectors": true`)), `{"hits":[{"id":1,"doc":`+full+`,"score":0.016393442}],"vector_mode":"exact","limit":1}`; got != want {
		t.Fatalf("search with vectors = %s\nwant %s", got, want)
	}
	var fetched struct {
		Doc json.RawMessage `json:"doc"`
	}
	if err := json.Unmarshal([]byte(call("get", `{"collection": "notes", "id": 1}`)), &fetched); err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "store", json.RawMessage(`{"collection": "notes", "id": 1, "doc": `+string(fetched.Doc)+`}`))
	want := `invalid argument /doc/emb: holds {"$omitted": ...}, the marker of a vector left out of a returned document, not the vector: writing it would erase the stored vector. Read the document again with "vectors": true`
	if got := resultText(res); !res.IsError || !strings.HasPrefix(got, want) {
		t.Fatalf("store of a document read with its vector left out: isError %v, %s\nwant %s...", res.IsError, got, want)
	}
	if got := call("get", `{"collection": "notes", "id": 1, "vectors": true}`); got != `{"id":1,"revision":1,"doc":`+full+`}` {
		t.Fatalf("note 1 after the refused store = %s, want its vector intact", got)
	}
}

// TestStoreSearchE2E: `mcpkit store FILE` serves create_index type
// "vector" and search over stdio in both eras; a second process over the
// same file, and a store loaded from the first one's dump
// (`mcpkit store dump` then `load`), answer the same searches the same.
func TestStoreSearchE2E(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "app.db")
			cs, _ := serveStore(t, era, path)
			call := func(tool, args string) string { return storeCall(t, cs, tool, args) }
			searchNotes(t, call)
			check := func(where string) {
				t.Helper()
				for _, s := range searchE2E {
					if got := call("search", s.args); got != s.want {
						t.Fatalf("%s: search %s\n= %s\nwant %s", where, s.args, got, s.want)
					}
				}
			}
			check("first process")
			vectorsLeftOut(t, cs, call)
			res := callTool(t, cs, "search", json.RawMessage(`{"collection": "notes", "vector": {"vector": [1, 0, 0]}}`))
			if !res.IsError || !strings.Contains(resultText(res), "/vector/vector: the query vector has 3 dimensions, not 2") {
				t.Fatalf("a vector of the wrong dimension: %s", resultText(res))
			}
			cs.Close()

			cs, _ = serveStore(t, era, path)
			check("second process")
			cs.Close()

			bin := binary(t)
			dump := filepath.Join(dir, "dump.jsonl")
			if code, _, stderr := runBinary(t, bin, "store", "dump", path, "--out", dump); code != 0 {
				t.Fatalf("store dump: exit %d, %s", code, stderr)
			}
			loaded := filepath.Join(dir, "loaded.db")
			if code, _, stderr := runBinary(t, bin, "store", "load", loaded, "--in", dump); code != 0 {
				t.Fatalf("store load: exit %d, %s", code, stderr)
			}
			cs, _ = serveStore(t, era, loaded)
			check("loaded from the dump")
		})
	}
}
