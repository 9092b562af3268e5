package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dumpOut is dump's result.
type dumpOut struct {
	Path      string  `json:"path"`
	Documents int64   `json:"documents"`
	Bytes     int64   `json:"bytes"`
	Data      *string `json:"data"`
}

// populate writes a little of everything: typed documents, an index, a
// schema with a unique field, two collections.
func populate(e *env) {
	e.t.Helper()
	e.ok("store", `{"collection": "people", "id": "ann", "doc": `+typedDoc+`}`)
	e.ok("store", `{"collection": "people", "id": 2, "doc": {"name": "bob", "age": 41, "w": 0.5}}`)
	e.ok("create_scalar_index", `{"collection": "people", "field": "age"}`)
	e.ok("set_schema", `{"collection": "tags", "fields": [{"name": "t", "type": "text", "unique": true}]}`)
	e.ok("insert_auto", `{"collection": "tags", "doc": {"t": "x"}}`)
}

// sameContents checks that e holds what populate wrote.
func sameContents(t *testing.T, e *env) {
	t.Helper()
	if got := e.ok("get", `{"collection": "people", "id": "ann", "vectors": true}`); !strings.HasSuffix(got, `"doc":`+typedDoc+`}`) {
		t.Fatalf("ann = %s", got)
	}
	if got := e.ok("get", `{"collection": "people", "id": 2}`); !strings.HasSuffix(got, `"doc":{"name":"bob","age":41,"w":0.5}}`) {
		t.Fatalf("2 = %s", got)
	}
	list := e.ok("list_collections", `{}`)
	for _, want := range []string{`{"name":"age","fields":["age"]}`, `{"name":"$unique:t","fields":["t"],"unique":true}`, `"schema":{"fields":[{"name":"t","type":"text","unique":true}]}`} {
		if !strings.Contains(list, want) {
			t.Fatalf("list_collections lacks %s: %s", want, list)
		}
	}
	e.fail("insert_auto", `{"collection": "tags", "doc": {"t": "x"}}`, "unique_violation")
}

// TestDumpLoadRoundTrip: a dump, inline or to a file, loads into another
// store with every document, typed value, index and schema.
func TestDumpLoadRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		populate(e)
		d := okAs[dumpOut](e, "dump", `{}`)
		if d.Data == nil || d.Documents != 3 || d.Bytes != int64(len(*d.Data)) || !strings.HasPrefix(*d.Data, `{"type":"dump","format":1}`+"\n") {
			t.Fatalf("dump = %+v", d)
		}
		data, _ := json.Marshal(*d.Data)
		other := connect(t, Config{})
		if got := other.ok("load", `{"data": `+string(data)+`}`); got != `{"collections":2,"documents":3}` {
			t.Fatalf("load = %s", got)
		}
		sameContents(t, other)

		f := okAs[dumpOut](e, "dump", `{"path": "all.jsonl"}`)
		if f.Path != "all.jsonl" || f.Documents != 3 || f.Data != nil {
			t.Fatalf("dump to a file = %+v", f)
		}
		onDisk, err := os.ReadFile(filepath.Join(e.files, "all.jsonl"))
		if err != nil || string(onDisk) != *d.Data || f.Bytes != int64(len(onDisk)) {
			t.Fatalf("the file holds %d bytes (%v), the reply says %d; want the inline dump", len(onDisk), err, f.Bytes)
		}
		third := connect(t, Config{FilesDir: e.files})
		third.ok("load", `{"path": "all.jsonl"}`)
		sameContents(t, third)

		// Some collections only; an unknown one is collection_not_found.
		p := okAs[dumpOut](e, "dump", `{"collections": ["tags"]}`)
		if p.Documents != 1 || strings.Contains(*p.Data, "people") {
			t.Fatalf("dump of tags = %+v", p)
		}
		e.fail("dump", `{"collections": ["tags", "nope"]}`, "collection_not_found")
		e.badParams("dump", `{"collections": [""]}`, "/collections/0")
	})
}

// TestLoadModes: refuse (the default) fails on a collection with
// documents; replace drops it first; merge keeps it, replacing by id.
func TestLoadModes(t *testing.T) {
	e := connect(t, Config{})
	e.ok("store", `{"collection": "c", "id": 1, "doc": {"v": "old"}}`)
	e.ok("store", `{"collection": "c", "id": 9, "doc": {"v": "kept?"}}`)
	dump, _ := json.Marshal(dumpOf("c", 2, func(i int) string { return fmt.Sprintf(`{"v":%d}`, i) }))
	load := func(mode string) string { return `{"data": ` + string(dump) + mode + `}` }
	r := e.badParams("load", load(``), "/data")
	if !strings.Contains(r.Error.Message, "line 2") || !strings.Contains(r.Error.Message, "replace or merge") {
		t.Errorf("refused load: %s", r.Error.Message)
	}
	e.badParams("load", load(`, "mode": "refuse"`), "/data")
	e.ok("load", load(`, "mode": "merge"`))
	if got := e.ok("count", `{"collection": "c"}`); got != `{"count":3}` {
		t.Fatalf("merge: %s", got)
	}
	if got := e.ok("get", `{"collection": "c", "id": 1}`); !strings.HasSuffix(got, `"doc":{"v":1}}`) {
		t.Fatalf("merge: %s", got)
	}
	e.ok("load", load(`, "mode": "replace"`))
	if got := e.ok("count", `{"collection": "c"}`); got != `{"count":2}` {
		t.Fatalf("replace: %s", got)
	}
	e.badParams("load", load(`, "mode": "upsert"`), "/mode")
}

// TestLoadErrors: exactly one of path and data; a line that is not a dump
// line is bad_params naming the line; a document a schema refuses keeps
// the engine's kind.
func TestLoadErrors(t *testing.T) {
	e := connect(t, Config{FilesDir: t.TempDir()})
	e.badParams("load", `{}`, "")
	e.badParams("load", `{"path": "x", "data": ""}`, "/data")
	e.badParams("load", `{"data": 3}`, "/data")
	r := e.badParams("load", `{"data": "{\"type\":\"dump\",\"format\":1}\nnot json\n"}`, "/data")
	if !strings.Contains(r.Error.Message, "line 2") {
		t.Errorf("message %q does not name the line", r.Error.Message)
	}
	e.badParams("load", `{"data": "{\"type\":\"dump\",\"format\":2}\n"}`, "/data")
	e.badParams("load", `{"data": "{\"type\":\"document\",\"collection\":\"c\",\"id\":1,\"doc\":{}}\n"}`, "/data")
	e.badParams("load", `{"path": "missing.jsonl"}`, "/path")
	os.WriteFile(filepath.Join(e.files, "bad.jsonl"), []byte("{\"type\":\"what\"}\n"), 0o600)
	e.badParams("load", `{"path": "bad.jsonl"}`, "/path")
	e.ok("set_schema", `{"collection": "s", "fields": [{"name": "n", "type": "int"}]}`)
	bad, _ := json.Marshal(dumpOf("s", 1, func(int) string { return `{"n":1.5}` }))
	e.fail("load", `{"data": `+string(bad)+`, "mode": "merge"}`, "schema_violation")
	if got := e.ok("load", `{"data": ""}`); got != `{"collections":0,"documents":0}` {
		t.Fatalf("empty load = %s", got)
	}
}

// TestDumpPaged: an inline dump larger than inline_result_bytes comes back
// as a retained result, read through the result tool; one larger than
// retained_result_bytes fails with kind limit and returns nothing.
func TestDumpPaged(t *testing.T) {
	e := connect(t, Config{FilesDir: t.TempDir()}, func(l *mcpcore.Limits) { l.RetainedResultBytes = mcpcore.MiB })
	e.fill("c", 150, func(i int) string { return fmt.Sprintf(`{"i":%d,"pad":"%0600d"}`, i, i) })
	var ref struct {
		ResultID   string `json:"result_id"`
		TotalBytes int64  `json:"total_bytes"`
		ReadTool   string `json:"read_tool"`
	}
	if err := json.Unmarshal([]byte(e.ok("dump", `{}`)), &ref); err != nil || ref.ResultID == "" || ref.ReadTool != "result" {
		t.Fatalf("paged reference %+v (%v)", ref, err)
	}
	var whole []byte
	for off := int64(0); off < ref.TotalBytes; {
		var chunk struct {
			Data       string `json:"data_base64"`
			NextOffset *int64 `json:"next_offset"`
		}
		out := e.ok("result", fmt.Sprintf(`{"result_id": %q, "offset": %d, "length": 262144}`, ref.ResultID, off))
		json.Unmarshal([]byte(out), &chunk)
		b, _ := base64.StdEncoding.DecodeString(chunk.Data)
		whole = append(whole, b...)
		if chunk.NextOffset == nil {
			break
		}
		off = *chunk.NextOffset
	}
	var d dumpOut
	if err := json.Unmarshal(whole, &d); err != nil || d.Documents != 150 || d.Data == nil || strings.Count(*d.Data, "\n") != 152 {
		t.Fatalf("the paged dump: %v, %d documents", err, d.Documents)
	}
	big := dumpOf("d", 300, func(i int) string { return fmt.Sprintf(`{"pad":"%04000d"}`, i) })
	os.WriteFile(filepath.Join(e.files, "big.jsonl"), []byte(big), 0o600)
	e.ok("load", `{"path": "big.jsonl"}`)
	r := e.fail("dump", `{}`, mcpcore.KindLimit)
	if r.Error.Limit != "retained_result_bytes" || !strings.Contains(r.Error.Message, "path") {
		t.Fatalf("too large a dump: %+v", r.Error)
	}
}

// TestBackup: a backup, from memory or a file, opens as a store with the
// same contents; an existing file is replaced.
func TestBackup(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		populate(e)
		os.WriteFile(filepath.Join(e.files, "b.db"), []byte("old"), 0o600)
		var r struct {
			Path  string `json:"path"`
			Bytes int64  `json:"bytes"`
		}
		if err := json.Unmarshal([]byte(e.ok("backup", `{"path": "b.db"}`)), &r); err != nil || r.Path != "b.db" {
			t.Fatalf("backup = %+v (%v)", r, err)
		}
		fi, err := os.Stat(filepath.Join(e.files, "b.db"))
		if err != nil || fi.Size() != r.Bytes || r.Bytes < 4096 {
			t.Fatalf("backup file %v (%v), reply %d bytes", fi, err, r.Bytes)
		}
		sameContents(t, connect(t, Config{Path: filepath.Join(e.files, "b.db")}))
		entries, _ := os.ReadDir(e.files)
		if len(entries) != 1 {
			t.Fatalf("files_dir holds %d entries, want the backup alone (no temporary file)", len(entries))
		}
	})
}

// TestPathConfinement: backup, dump and load take paths inside files_dir
// only: no absolute path, no "..", no symbolic link out of it, and none at
// all without files_dir. A link at a written path is replaced, never
// written through.
func TestPathConfinement(t *testing.T) {
	none := connect(t, Config{})
	none.ok("store", `{"collection": "c", "id": 1, "doc": {}}`)
	for _, tool := range []string{"backup", "dump", "load"} {
		r := none.badParams(tool, `{"path": "x"}`, "/path")
		if !strings.Contains(r.Error.Message, "files_dir") {
			t.Errorf("%s: %s", tool, r.Error.Message)
		}
	}

	files, outside := t.TempDir(), t.TempDir()
	e := connect(t, Config{FilesDir: files})
	e.ok("store", `{"collection": "c", "id": 1, "doc": {}}`)
	os.Mkdir(filepath.Join(files, "sub"), 0o700)
	secret := filepath.Join(outside, "secret.jsonl")
	os.WriteFile(secret, []byte(dumpOf("c", 1, func(int) string { return `{"stolen":true}` })), 0o600)
	os.Symlink(outside, filepath.Join(files, "out"))                    // a directory link out
	os.Symlink(secret, filepath.Join(files, "secret.jsonl"))            // a file link out
	os.Symlink(filepath.Join(files, "sub"), filepath.Join(files, "in")) // a link that stays inside
	for _, p := range []string{"../x", "sub/../../x", "/etc/passwd", filepath.Join(files, "x"), ".", "out/x", "out/secret.jsonl", "nodir/x", "sub"} {
		for _, tool := range []string{"backup", "dump"} {
			e.badParams(tool, fmt.Sprintf(`{"path": %q}`, p), "/path")
		}
	}
	e.badParams("backup", `{"path": ""}`, "/path")
	e.badParams("backup", `{}`, "/path")
	for _, p := range []string{"../x", "/etc/passwd", "out/secret.jsonl", "secret.jsonl", "nope.jsonl", "sub"} {
		e.badParams("load", fmt.Sprintf(`{"path": %q, "mode": "merge"}`, p), "/path")
	}
	if got := e.ok("count", `{"collection": "c", "filter": {"stolen": true}}`); got != `{"count":0}` {
		t.Fatalf("a file outside files_dir was loaded: %s", got)
	}
	// Inside: subdirectories, links that stay inside, and a link at the
	// target, which is replaced rather than followed.
	e.ok("dump", `{"path": "sub/a.jsonl"}`)
	e.ok("dump", `{"path": "in/b.jsonl"}`)
	e.ok("load", `{"path": "in/a.jsonl", "mode": "merge"}`)
	e.ok("dump", `{"path": "secret.jsonl"}`)
	if got, _ := os.ReadFile(secret); !strings.Contains(string(got), "stolen") {
		t.Fatalf("a dump wrote through a link out of files_dir: %s", got)
	}
	if fi, err := os.Lstat(filepath.Join(files, "secret.jsonl")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("the link at the dump's path was not replaced by the dump: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Fatalf("something was written outside files_dir: %v", entries)
	}
}

// progressLog collects a client's progress notifications.
type progressLog struct {
	mu    sync.Mutex
	got   map[any][]*mcp.ProgressNotificationParams
	added chan struct{}
}

func newProgressLog() *progressLog {
	return &progressLog{got: map[any][]*mcp.ProgressNotificationParams{}, added: make(chan struct{}, 1024)}
}

func (l *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	l.mu.Lock()
	l.got[req.Params.ProgressToken] = append(l.got[req.Params.ProgressToken], req.Params)
	l.mu.Unlock()
	l.added <- struct{}{}
}

// until waits for token's notifications to reach done, and returns them.
func (l *progressLog) until(t *testing.T, token string, done float64) []*mcp.ProgressNotificationParams {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		got := l.got[token]
		l.mu.Unlock()
		if n := len(got); n > 0 && got[n-1].Progress >= done {
			return got
		}
		select {
		case <-l.added:
		case <-deadline:
			t.Fatalf("%s: progress %v, never %v", token, got, done)
		}
	}
}

// TestProgress: with a progress token, dump, load, index builds and
// backup send increasing progress notifications, at most about ten a
// second, ending with the total; without one, none.
func TestProgress(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		log := newProgressLog()
		cs := mcptest.Session(t, e.srv, &mcp.ClientOptions{ProgressNotificationHandler: log.handler}, nil)
		var out string
		call := func(token, tool, args string) time.Duration {
			t.Helper()
			params := &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}
			if token != "" {
				params.SetProgressToken(token)
			}
			start := time.Now()
			res, err := cs.CallTool(t.Context(), params)
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %s", tool, err, text(res))
			}
			out = text(res)
			return time.Since(start)
		}
		const n = 5000
		data, _ := json.Marshal(dumpOf("c", n, func(i int) string { return fmt.Sprintf(`{"i":%d}`, i) }))
		for _, tc := range []struct {
			token, tool, args string
			total             float64
		}{
			{"load", "load", `{"data": ` + string(data) + `}`, n + 2},
			{"index", "create_scalar_index", `{"collection": "c", "field": "i"}`, n},
			{"dump", "dump", `{"path": "c.jsonl"}`, n},
			{"backup", "backup", `{"path": "c.db"}`, -1},
		} {
			took := call(tc.token, tc.tool, tc.args)
			if tc.total < 0 { // a backup's total is its size
				var r struct{ Bytes float64 }
				json.Unmarshal([]byte(out), &r)
				tc.total = r.Bytes
			}
			got := log.until(t, tc.token, tc.total)
			last := got[len(got)-1]
			if last.Progress != tc.total || last.Total != tc.total {
				t.Errorf("%s: last progress %v of %v, want %v", tc.tool, last.Progress, last.Total, tc.total)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Progress <= got[i-1].Progress {
					t.Errorf("%s: progress goes from %v to %v", tc.tool, got[i-1].Progress, got[i].Progress)
				}
			}
			if most := int(took/progressEvery) + 2; len(got) > most {
				t.Errorf("%s: %d notifications in %v (at most %d)", tc.tool, len(got), took, most)
			}
			if last.Message == "" {
				t.Errorf("%s: no message", tc.tool)
			}
		}
		call("", "dump", `{}`)
		call("", "create_scalar_index", `{"collection": "c", "field": "j"}`)
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.got) != 4 {
			t.Fatalf("notifications for %d tokens, want 4", len(log.got))
		}
	})
}

// TestProgressThrottle: however often the work reports, at most one
// notification per progressEvery reaches the client, never the same count
// twice, and the end always.
func TestProgressThrottle(t *testing.T) {
	e := connect(t, Config{})
	log := newProgressLog()
	cs := mcptest.Session(t, e.srv, &mcp.ClientOptions{ProgressNotificationHandler: log.handler}, nil)
	if err := cs.Ping(t.Context(), nil); err != nil { // the host tracks a session from its first message
		t.Fatal(err)
	}
	var reports []docstore.Progress
	for _, s := range e.plugin.host.Sessions() {
		params := &mcp.CallToolParamsRaw{Name: "dump"}
		params.SetProgressToken("t")
		reports = append(reports, progressOf(t.Context(), e.plugin.host, &mcp.CallToolRequest{Session: s.ServerSession(), Params: params}, "units"))
	}
	if progressOf(t.Context(), e.plugin.host, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}}, "x") != nil {
		t.Fatal("a request without a progress token got a notifier")
	}
	start := time.Now()
	var done int64
	for time.Since(start) < 350*time.Millisecond {
		done++
		for _, report := range reports {
			report(done, 1<<40) // a total the loop never reaches
			report(done, 1<<40) // the same count again: never sent twice
		}
	}
	done++
	for _, report := range reports {
		report(done, done)
	}
	got := log.until(t, "t", float64(done))
	if len(got) < 2 || len(got) > 6 {
		t.Fatalf("%d notifications for %d reports in 350ms, want 2 to 6 (one per %v and the last)", len(got), done, progressEvery)
	}
	if last := got[len(got)-1]; last.Progress != float64(done) || last.Total != float64(done) || last.Message != "units" {
		t.Fatalf("last notification %+v", last)
	}
}
