package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/internal/pgtest"
)

// pgPassword is the password of the PostgreSQL servers these tests start:
// given to mcpkit only through PGPASSWORD, and never to be seen in its
// output or its results.
const pgPassword = "pw-e2e-7f3a9c"

// servePostgresStore launches `mcpkit store URL` over stdio in era with
// the password in PGPASSWORD (set for the test), as an MCP client does,
// and fails the test at its end if mcpkit's stderr shows the password.
func servePostgresStore(t *testing.T, era, url string) *mcp.ClientSession {
	t.Helper()
	t.Setenv("PGPASSWORD", pgPassword)
	cs, stderr := serveStore(t, era, url)
	t.Cleanup(func() {
		cs.Close()
		noPassword(t, "mcpkit's stderr", stderr.String())
	})
	return cs
}

// noPassword fails when text shows the PostgreSQL password.
func noPassword(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, pgPassword) {
		t.Fatalf("%s shows the password: %s", what, text)
	}
}

// TestStorePostgresTwoProcessesE2E: two `mcpkit store URL` processes on
// one PostgreSQL store, each in its own era: what A writes — documents,
// an index, a text index, vectors (exact and HNSW), geo points, edges — B
// finds at once; insert_auto from both never collides; compare_and_set
// has one winner; mcpkit://info and errors never show the password.
func TestStorePostgresTwoProcessesE2E(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{Password: pgPassword})
	url := strings.Replace(srv.StoreURL(), ":"+pgPassword+"@", "@", 1)
	noPassword(t, "the URL given", url)
	a := servePostgresStore(t, eras[0], url)
	b := servePostgresStore(t, eras[len(eras)-1], url)

	storeCall(t, a, "store", `{"collection": "notes", "id": "n1", "doc": {"tag": "solar", "body": "solar panels on the roof", "v": {"$vector": [1, 0, 0]}, "at": {"lat": 48.8566, "lon": 2.3522}}}`)
	storeCall(t, a, "create_index", `{"collection": "notes", "name": "tag", "fields": ["tag"]}`)
	storeCall(t, a, "create_text_index", `{"collection": "notes", "name": "body", "fields": ["body"]}`)
	storeCall(t, a, "create_index", `{"collection": "notes", "type": "vector", "fields": ["v"], "dimension": 3}`)
	storeCall(t, a, "create_geo_index", `{"collection": "notes", "field": "at"}`)
	storeCall(t, a, "store", `{"collection": "notes", "id": "n2", "doc": {"tag": "wind", "body": "wind turbines offshore", "v": {"$vector": [0, 1, 0]}, "at": {"lat": 51.5074, "lon": -0.1278}}}`)
	storeCall(t, a, "link", `{"from": {"collection": "notes", "id": "n1"}, "type": "see_also", "to": {"collection": "notes", "id": "n2"}}`)

	for _, c := range []struct{ tool, args, want string }{
		{"get", `{"collection": "notes", "id": "n2"}`, `"tag":"wind"`},
		{"page", `{"collection": "notes", "filter": {"tag": "wind"}, "select": [], "explain": true}`, `"index":"tag"`},
		{"search", `{"collection": "notes", "text": {"query": "turbines"}, "select": []}`, `"id":"n2"`},
		{"search", `{"collection": "notes", "vector": {"vector": [0, 0.9, 0.1]}, "limit": 1, "select": []}`, `"id":"n2"`},
		{"search", `{"collection": "notes", "vector": {"vector": [0, 0.9, 0.1], "approximate": true}, "limit": 1, "select": []}`, `"id":"n2"`},
		{"geo", `{"collection": "notes", "near": {"lat": 51.5, "lon": -0.12, "radius_m": 5000}, "select": []}`, `"id":"n2"`},
		{"neighbors", `{"collection": "notes", "id": "n1"}`, `"id":"n2"`},
	} {
		if got := storeCall(t, b, c.tool, c.args); !strings.Contains(got, c.want) {
			t.Fatalf("B %s %s = %s; want it to hold %s", c.tool, c.args, got, c.want)
		}
	}
	// B's writes keep A's index: a query on A by tag finds B's document.
	storeCall(t, b, "store", `{"collection": "notes", "id": "n3", "doc": {"tag": "wind", "body": "more wind", "v": {"$vector": [0, 1, 1]}}}`)
	if got := storeCall(t, a, "count", `{"collection": "notes", "filter": {"tag": "wind"}, "explain": true}`); !strings.Contains(got, `"count":2`) || !strings.Contains(got, `"index":"tag"`) {
		t.Fatalf("A counts by tag = %s", got)
	}

	// insert_auto from both processes at once: every id distinct.
	ids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, cs := range []*mcp.ClientSession{a, b} {
		wg.Go(func() {
			for range 25 {
				res := callTool(t, cs, "insert_auto", json.RawMessage(`{"collection": "auto", "doc": {}}`))
				var out struct{ ID json.Number }
				if err := json.Unmarshal([]byte(resultText(res)), &out); res.IsError || err != nil {
					t.Errorf("insert_auto: %s %v", resultText(res), err)
					return
				}
				mu.Lock()
				if ids[out.ID.String()] {
					t.Errorf("id %s given twice", out.ID)
				}
				ids[out.ID.String()] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(ids) != 50 {
		t.Fatalf("%d distinct ids from 50 inserts", len(ids))
	}

	// compare_and_set on the same revision from both: one winner.
	storeCall(t, a, "store", `{"collection": "cas", "id": "c", "doc": {"v": 0}}`)
	var rev struct{ Revision int64 }
	json.Unmarshal([]byte(storeCall(t, b, "get", `{"collection": "cas", "id": "c"}`)), &rev)
	wins := 0
	for i, cs := range []*mcp.ClientSession{a, b, a, b} {
		wg.Go(func() {
			res := callTool(t, cs, "compare_and_set", json.RawMessage(fmt.Sprintf(`{"collection": "cas", "id": "c", "doc": {"v": %d}, "expect_revision": %d}`, i+1, rev.Revision)))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !res.IsError:
				wins++
			case !strings.Contains(resultText(res), "revision_mismatch"):
				t.Errorf("compare_and_set: %s", resultText(res))
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("compare_and_set: %d winners", wins)
	}
	for _, cs := range []*mcp.ClientSession{a, b} {
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mcpkit://info"})
		if err != nil {
			t.Fatal(err)
		}
		noPassword(t, "mcpkit://info", res.Contents[0].Text)
	}
}

// TestStorePostgresRestartE2E: the PostgreSQL server stopped under a
// serving `mcpkit store URL`: calls fail with kind unavailable (nothing
// else closes, the password unseen), then work again once the server is
// back, without restarting mcpkit; nothing acknowledged is lost.
func TestStorePostgresRestartE2E(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{Password: pgPassword})
	url := strings.Replace(srv.StoreURL(), ":"+pgPassword+"@", "@", 1)
	cs := servePostgresStore(t, eras[0], url)
	storeCall(t, cs, "store", `{"collection": "k", "id": "before", "doc": {"n": 1}}`)
	srv.Stop()
	for !srv.Exited() {
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct{ tool, args string }{
		{"get", `{"collection": "k", "id": "before"}`},
		{"store", `{"collection": "k", "id": "during", "doc": {"n": 2}}`},
	} {
		res := callTool(t, cs, c.tool, json.RawMessage(c.args))
		text := resultText(res)
		if kind := toolErrorKind(t, res); kind != "unavailable" {
			t.Fatalf("%s while the server is down: kind %q: %s", c.tool, kind, text)
		}
		noPassword(t, c.tool+"'s error", text)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := callTool(t, cs, "get", json.RawMessage(`{"collection": "k", "id": "before"}`))
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the restart: %s", resultText(res))
		}
		time.Sleep(200 * time.Millisecond)
	}
	storeCall(t, cs, "store", `{"collection": "k", "id": "after", "doc": {"n": 3}}`)
	if got := storeCall(t, cs, "count", `{"collection": "k"}`); got != `{"count":2}` {
		t.Fatalf("count after recovery = %s", got)
	}
}

// TestStorePostgresVerbsE2E: `mcpkit store copy FILE URL` moves a file
// store to PostgreSQL with its indexes and search structures as they are;
// verify, dump and backup run on the URL; nothing shows the password; a
// second copy onto the same store is refused.
func TestStorePostgresVerbsE2E(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{Password: pgPassword})
	url := strings.Replace(srv.StoreURL(), ":"+pgPassword+"@", "@", 1)
	t.Setenv("PGPASSWORD", pgPassword) // for the verbs
	dir := t.TempDir()
	file := dir + "/notes.db"
	cs, _ := serveStore(t, eras[0], file)
	storeCall(t, cs, "create_text_index", `{"collection": "notes", "name": "body", "fields": ["body"]}`)
	storeCall(t, cs, "write", `{"ops": [{"op": "store", "collection": "notes", "id": "a", "doc": {"body": "solar roof"}}, {"op": "store", "collection": "notes", "id": "b", "doc": {"body": "wind farm"}}]}`)
	cs.Close()

	bin := binary(t)
	code, stdout, stderr := runBinary(t, bin, "store", "copy", file, url)
	if code != 0 || !strings.Contains(stderr, "copied "+file+" to postgres://mcpkit@") {
		t.Fatalf("copy: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runBinary(t, bin, "store", "copy", file, url); code == 0 || !strings.Contains(stderr, "already has bucket") {
		t.Fatalf("a second copy onto the store: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr = runBinary(t, bin, "store", "verify", url)
	if code != 0 || !strings.Contains(stdout, "no damage found (tables, documents and indexes)") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runBinary(t, bin, "store", "dump", url)
	if code != 0 || strings.Count(stdout, `"type":"document"`) != 2 {
		t.Fatalf("dump: exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = runBinary(t, bin, "store", "backup", url, "--out", dir+"/back.db")
	if code != 0 {
		t.Fatalf("backup: exit %d\n%s", code, stderr)
	}
	for _, out := range []string{stdout, stderr} {
		noPassword(t, "a verb's output", out)
	}
	for _, where := range []string{url, dir + "/back.db"} {
		cs, _ := serveStore(t, eras[0], where)
		if got := storeCall(t, cs, "search", `{"collection": "notes", "text": {"query": "wind"}, "select": []}`); !strings.Contains(got, `"id":"b"`) || strings.Contains(got, `"id":"a"`) {
			t.Fatalf("search on %s after the copy = %s", where, got)
		}
	}
}
