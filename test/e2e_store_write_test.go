package test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStoreWriteE2E: through the built binary (`mcpkit store FILE` over
// stdio, the go-sdk client), write applies operations across collections
// in order and returns one result each; a failing operation is named by
// index, kind and path and leaves nothing; what a write committed is in
// the file for the next process; write_ops is listed in mcpkit://info.
func TestStoreWriteE2E(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	cs, _ := serveStore(t, modernEra, path)
	got := storeCall(t, cs, "write", `{"ops": [
		{"op": "store", "collection": "notes", "id": "n1", "doc": {"t": "first", "n": 1}},
		{"op": "patch", "collection": "notes", "id": "n1", "patch": {"n": 2}},
		{"op": "insert_auto", "collection": "log", "doc": {"e": "created n1"}},
		{"op": "link", "from": {"collection": "log", "id": 1}, "type": "about", "to": {"collection": "notes", "id": "n1"}},
		{"op": "compare_and_set", "collection": "notes", "id": "n2", "expect_revision": 0, "doc": {"t": "second"}},
		{"op": "delete", "collection": "notes", "id": "n0"}]}`)
	want := `{"results":[{"id":"n1","revision":1},{"id":"n1","revision":2,"doc":{"t":"first","n":2}},{"id":1,"revision":3},{"created":true},{"id":"n2","revision":4},{"deleted":false}]}`
	if got != want {
		t.Fatalf("write = %s\nwant %s", got, want)
	}
	res := callTool(t, cs, "write", json.RawMessage(`{"ops": [
		{"op": "store", "collection": "other", "id": 1, "doc": {}},
		{"op": "delete", "collection": "notes", "id": "n1"},
		{"op": "patch", "collection": "notes", "id": 7, "patch": []}]}`))
	var failure struct {
		Error struct {
			Kind, Path string
			Op         int
		}
	}
	if err := json.Unmarshal([]byte(resultText(res)), &failure); err != nil || !res.IsError ||
		failure.Error.Kind != "bad_params" || failure.Error.Op != 2 || failure.Error.Path != "/ops/2/patch" {
		t.Fatalf("a bad third operation: %s", resultText(res))
	}
	res = callTool(t, cs, "write", json.RawMessage(`{"ops": [
		{"op": "delete", "collection": "notes", "id": "n1"},
		{"op": "store", "collection": "other", "id": 1, "doc": {}},
		{"op": "compare_and_set", "collection": "notes", "id": "n2", "expect_revision": 1, "doc": {}}]}`))
	if err := json.Unmarshal([]byte(resultText(res)), &failure); err != nil || !res.IsError || failure.Error.Kind != "revision_mismatch" || failure.Error.Op != 2 {
		t.Fatalf("a failing third operation: %s", resultText(res))
	}
	var limit bool
	for _, p := range info(t, cs).Plugins {
		for _, l := range p.Limits {
			limit = limit || (p.Name == "store" && l.Name == "write_ops" && l.Value == "10000")
		}
	}
	if !limit {
		t.Errorf("mcpkit://info does not list the store's write_ops limit: %+v", info(t, cs).Plugins)
	}
	cs.Close()

	cs, _ = serveStore(t, modernEra, path)
	if got := storeCall(t, cs, "get", `{"collection": "notes", "id": "n1"}`); got != `{"id":"n1","revision":2,"doc":{"t":"first","n":2}}` {
		t.Fatalf("n1 in a second process = %s (the failed writes deleted it?)", got)
	}
	if got := storeCall(t, cs, "list_collections", `{}`); strings.Contains(got, `"other"`) {
		t.Fatalf("a failed write created its collection: %s", got)
	}
	if got := storeCall(t, cs, "neighbors", `{"collection": "log", "id": 1}`); !strings.Contains(got, `"type":"about"`) {
		t.Fatalf("log 1's edges in a second process: %s", got)
	}
}

// TestStoreWriteFaster: 2,000 notes stored in 20 write calls of 100 (a
// durable commit per call) take far less time than 2,000 store calls (a
// durable commit each), through the binary over a store file.
func TestStoreWriteFaster(t *testing.T) {
	note := func(i int) string {
		return fmt.Sprintf(`"collection": "notes", "id": "n%d", "doc": {"title": "note %d", "body": "a short note about item %d", "tags": ["a", "b"]}`, i, i, i)
	}
	const n, batch = 2000, 100
	single := func() time.Duration {
		cs, _ := serveStore(t, modernEra, filepath.Join(t.TempDir(), "single.db"))
		start := time.Now()
		for i := range n {
			storeCall(t, cs, "store", "{"+note(i)+"}")
		}
		return time.Since(start)
	}()
	batched := func() time.Duration {
		cs, _ := serveStore(t, modernEra, filepath.Join(t.TempDir(), "batched.db"))
		start := time.Now()
		for lo := 0; lo < n; lo += batch {
			ops := make([]string, batch)
			for i := range ops {
				ops[i] = `{"op": "store", ` + note(lo+i) + `}`
			}
			storeCall(t, cs, "write", `{"ops": [`+strings.Join(ops, ",")+`]}`)
		}
		d := time.Since(start)
		if got := storeCall(t, cs, "count", `{"collection": "notes"}`); got != fmt.Sprintf(`{"count":%d}`, n) {
			t.Fatalf("after the writes: %s", got)
		}
		return d
	}()
	t.Logf("%d notes: %d store calls %v (%.0f/s); %d write calls of %d %v (%.0f/s): %.1fx",
		n, n, single, float64(n)/single.Seconds(), n/batch, batch, batched, float64(n)/batched.Seconds(), single.Seconds()/batched.Seconds())
	if batched*3 > single {
		t.Fatalf("write in batches of %d took %v, not a third of the %v of single stores", batch, batched, single)
	}
}
