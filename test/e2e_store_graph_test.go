package test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreGeoGraphE2E: `mcpkit store FILE` over stdio, in both eras,
// serves geo queries, links, traversals and joins; a second process over
// the same file finds the geo index and the edges; deleting a document
// deletes its edges; a dump loaded into a new file (the CLI verbs) keeps
// the geo index.
func TestStoreGeoGraphE2E(t *testing.T) {
	bin := binary(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "app.db")
			cs, _ := serveStore(t, era, path)
			for _, c := range []string{
				`"paris", "doc": {"name": "Paris", "loc": {"lat": 48.8566, "lon": 2.3522}}`,
				`"london", "doc": {"name": "London", "loc": [-0.1278, 51.5074]}`,
				`"suva", "doc": {"name": "Suva", "loc": {"lat": -18.1416, "lon": 178.4419}}`,
				`"nukualofa", "doc": {"name": "Nuku'alofa", "loc": {"lat": -21.1394, "lon": -175.2049}}`,
			} {
				storeCall(t, cs, "store", `{"collection": "cities", "id": `+c+`}`)
			}
			storeCall(t, cs, "create_geo_index", `{"collection": "cities", "field": "loc"}`)
			near := `{"collection": "cities", "near": {"lat": 48.8566, "lon": 2.3522, "radius_m": 400000}, "select": ["name"]}`
			wantNear := `{"hits":[{"id":"paris","doc":{"name":"Paris"},"point":{"lat":48.8566,"lon":2.3522},"distance_m":0},` +
				`{"id":"london","doc":{"name":"London"},"point":{"lat":51.5074,"lon":-0.1278},"distance_m":343556.53488`
			if got := storeCall(t, cs, "geo", near); !strings.HasPrefix(got, wantNear) || !strings.HasSuffix(got, `}],"next_cursor":null,"limit":100}`) {
				t.Fatalf("geo near Paris = %s", got)
			}
			box := `{"collection": "cities", "box": {"south": -25, "west": 170, "north": -10, "east": -170}, "select": ["name"]}`
			if got := storeCall(t, cs, "geo", box); strings.Count(got, `"id":`) != 2 || !strings.Contains(got, `"id":"nukualofa"`) || !strings.Contains(got, `"id":"suva"`) {
				t.Fatalf("geo across the antimeridian = %s", got)
			}

			for _, p := range []string{"ann", "bob"} {
				storeCall(t, cs, "store", `{"collection": "people", "id": "`+p+`", "doc": {"name": "`+p+`"}}`)
			}
			storeCall(t, cs, "link", `{"from": {"collection": "people", "id": "ann"}, "type": "knows", "to": {"collection": "people", "id": "bob"}, "props": {"since": 2020}}`)
			storeCall(t, cs, "link", `{"from": {"collection": "people", "id": "ann"}, "type": "lives_in", "to": {"collection": "cities", "id": "paris"}}`)
			storeCall(t, cs, "link", `{"from": {"collection": "people", "id": "bob"}, "type": "lives_in", "to": {"collection": "cities", "id": "london"}}`)
			traverse := `{"collection": "people", "id": "ann", "max_depth": 2}`
			wantTraverse := `{"nodes":[{"collection":"people","id":"ann","depth":0},` +
				`{"collection":"people","id":"bob","depth":1,"via":{"type":"knows","from":{"collection":"people","id":"ann"},"to":{"collection":"people","id":"bob"},"props":{"since":2020}}},` +
				`{"collection":"cities","id":"paris","depth":1,"via":{"type":"lives_in","from":{"collection":"people","id":"ann"},"to":{"collection":"cities","id":"paris"}}},` +
				`{"collection":"cities","id":"london","depth":2,"via":{"type":"lives_in","from":{"collection":"people","id":"bob"},"to":{"collection":"cities","id":"london"}}}],` +
				`"truncated":false,"edges_read":3}`
			if got := storeCall(t, cs, "traverse", traverse); got != wantTraverse {
				t.Fatalf("traverse = %s", got)
			}
			join := `{"collection": "people", "select": ["name"], "foreign": "cities", "edge_type": "lives_in", "foreign_select": ["name"]}`
			wantJoin := `{"rows":[{"id":"ann","revision":5,"doc":{"name":"ann"},"joined":[{"id":"paris","revision":1,"doc":{"name":"Paris"}}],"more":false},` +
				`{"id":"bob","revision":6,"doc":{"name":"bob"},"joined":[{"id":"london","revision":2,"doc":{"name":"London"}}],"more":false}],"next_cursor":null,"limit":100}`
			if got := storeCall(t, cs, "join", join); got != wantJoin {
				t.Fatalf("join = %s", got)
			}
			cs.Close()

			// A second process over the file: the same answers.
			cs, _ = serveStore(t, era, path)
			if got := storeCall(t, cs, "geo", near); !strings.HasPrefix(got, wantNear) {
				t.Fatalf("geo in a second process = %s", got)
			}
			if got := storeCall(t, cs, "traverse", traverse); got != wantTraverse {
				t.Fatalf("traverse in a second process = %s", got)
			}
			// Deleting bob deletes his edges both ways.
			storeCall(t, cs, "delete", `{"collection": "people", "id": "bob"}`)
			if got := storeCall(t, cs, "in_neighbors", `{"collection": "cities", "id": "london"}`); got != `{"edges":[],"next_cursor":null,"limit":100}` {
				t.Fatalf("into London after bob's delete = %s", got)
			}
			if got := storeCall(t, cs, "neighbors", `{"collection": "people", "id": "ann", "type": "knows"}`); got != `{"edges":[],"next_cursor":null,"limit":100}` {
				t.Fatalf("ann knows after bob's delete = %s", got)
			}
			cs.Close()

			// A dump carries the geo index's definition; load builds it.
			out := filepath.Join(dir, "dump.jsonl")
			if code, _, stderr := runBinary(t, bin, "store", "dump", path, "--out", out, "--collection", "cities"); code != 0 {
				t.Fatalf("store dump: exit %d: %s", code, stderr)
			}
			loaded := filepath.Join(dir, "loaded.db")
			if code, _, stderr := runBinary(t, bin, "store", "load", loaded, "--in", out); code != 0 {
				t.Fatalf("store load: exit %d: %s", code, stderr)
			}
			cs, _ = serveStore(t, era, loaded)
			if got := storeCall(t, cs, "geo", box); !strings.Contains(got, `"id":"suva"`) || !strings.Contains(got, `"id":"nukualofa"`) {
				t.Fatalf("geo over the loaded dump = %s", got)
			}
		})
	}
}
