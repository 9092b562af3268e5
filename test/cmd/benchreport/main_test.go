package main

import (
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtureTargets are the make targets whose recorded output is in
// testdata: `make bench` (plain go test output, one package killed while
// running, others that did not build; the section of pkg/mcpcore, which
// did not build in that run, and BenchmarkRespAdmin's result lines, now
// with p95 metrics, come from -v runs of their own), and `make bench-resp`
// and `make bench-store` and `make bench-agent` (-v output, with targets
// missed and met).
var fixtureTargets = []string{"bench", "bench-resp", "bench-store", "bench-agent"}

// report runs benchreport -from over the fixture in a temporary
// repository and returns the repository's root.
func report(t *testing.T, extra ...string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "bench-report")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtureTargets {
		data, err := os.ReadFile(filepath.Join("testdata", f+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f+".txt"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	machine := `{"Date": "2026-11-30 16:10 UTC", "Go": "go1.26.0 linux/amd64", "CPU": "Test CPU",
		"Cores": 2, "Memory": "8 GB", "Load": "3.00 before, 15.00 at the highest, 9.00 after, on 2 cores",
		"Targets": ["make bench failed (exit status 2) in 16m45s"]}`
	if err := os.WriteFile(filepath.Join(dir, "machine.json"), []byte(machine), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-C", root, "-from"}, extra...)
	if err := run(append(args, fixtureTargets...), io.Discard); err != nil {
		t.Fatal(err)
	}
	return root
}

func readReport(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReport writes the report of the recorded output once (drawing is
// slow under the race detector), with -publish into a docs directory
// holding an earlier report's plot, and checks it.
func TestReport(t *testing.T) {
	t.Parallel()
	docs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(docs, "benchmarks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "benchmarks", "ratios-gone.png"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(report(t, "-publish", docs), "bench-report")
	t.Run("tables", func(t *testing.T) { checkTables(t, dir) })
	t.Run("plots", func(t *testing.T) { checkPlots(t, dir) })
	t.Run("publish", func(t *testing.T) { checkPublished(t, docs) })
}

// checkTables checks the report's rows against the recorded figures:
// mcpkit's and the peer's, their ratio, the targets and the marks, with
// figures read from metrics, from the tables failing benchmarks logged,
// and from a pattern in a cell.
func checkTables(t *testing.T, dir string) {
	md := readReport(t, filepath.Join(dir, "report.md"))
	for _, want := range []string{
		// The machine and the run.
		"| CPU | Test CPU |",
		"| load average (1 min) | 3.00 before, 15.00 at the highest, 9.00 after, on 2 cores |",
		"on 2026-11-30 16:10 UTC, which runs every benchmark",
		// benchpair metrics, a ratio target met.
		"| stdio round trip, bin/mcpkit | 732 µs | SDK StdioTransport: 945 µs | 0.77 | ratio ≤ 1.10 | met |",
		"| host call path in memory | 1.13 ms | SDK AddTool: 1.39 ms | 0.81 | reported | — |",
		// The telemetry overhead, failed: its figures from the table it logged.
		"| stdio round trip, metrics and tracing on (sampled, OTLP) | 502 µs | telemetry off: 446 µs | 1.13 | ratio ≤ 1.05 | **missed** |",
		// Two sub-benchmarks' ns/op.
		"| stdio transport alone, ping | 4.99 µs | SDK IOTransport: 283 µs | 0.018 | reported | — |",
		// A logged table (the benchmark failed): a ratio target missed and
		// one not set, and an added-time target missed.
		"| resp_execute over stdio, batch 128 (SET) | 84,606 cmd/s | direct RESP: 186,514 cmd/s | 0.45 | ratio ≥ 0.50 | **missed** |",
		"| resp_execute over stdio, batch 16 (SET) | 24,643 cmd/s | direct RESP: 82,506 cmd/s | 0.30 | reported | — |",
		"| resp_execute over stdio, batch 1: p50 round | 268 µs | direct RESP: 81.0 µs | 3.31 | adds ≤ 150 µs | **missed** (adds 187 µs) |",
		// The batch-128 target against the lower bound's ratio (plain
		// numbers), from the same table.
		"| resp_execute over stdio, batch 128: ratio to direct RESP, against the lower bound's | 0.45 | lower bound: 0.62 | 0.73 | ratio ≥ 0.85 | **missed** |",
		// The lower bound's columns of the same table.
		"| lower bound (test/internal/respbound) over stdio, batch 128 (SET) | 112,400 cmd/s | direct RESP: 181,300 cmd/s | 0.62 | reported | — |",
		// Added time from metrics, met and missed.
		"| tools/call on /mcp with an OAuth token, memory | 498 µs | static bearer token: 494 µs | 1.01 | adds ≤ 100 µs | met (adds 4.20 µs) |",
		"| tools/call on /mcp with an OAuth token, redis-uncached | 936 µs | static bearer token: 757 µs | 1.24 | adds ≤ 100 µs | **missed** (adds 179 µs) |",
		// The action framework's ratio targets.
		"| GET /api/status over HTTP | 62.3 µs | bare net/http handler: 52.9 µs | 1.18 | ratio ≤ 1.50 | met |",
		"| action as an MCP tool over HTTP | 2.61 ms | SDK tool: 3.66 ms | 0.71 | ratio ≤ 1.30 | met |",
		// Two targets on one row, one missed.
		"| ingest, transactions of 1,000 | 5,531 docs/s | SQLite: 9,570 docs/s | 0.58 | ratio ≥ 1.00, ≥ 20,000 docs/s | **missed** |",
		"| get by random id | 29,256 ops/s | SQLite: 12,670 ops/s | 2.31 | ratio ≥ 1.00 | met |",
		// The PostgreSQL ingest's physical bound, against the store and
		// against bare pgx.
		"| ingest, against its physical bound | 19,629 docs/s | bare pgx writing the store's rows of each batch in one round trip: 17,202 docs/s | 1.14 | reported | — |",
		"| physical bound of the ingest, against bare pgx's jsonb table | 17,202 docs/s | bare pgx: 11,718 docs/s | 1.47 | reported | — |",
		// The reopen's p50 target and the memory table (anonymous and
		// file-backed apart), in KiB, shown in bytes.
		"| reopen: close, open, first get (p50) | 218 ms | SQLite: 2.23 ms | 97.65 | ratio ≤ 2.00 | **missed** |",
		"| resident memory after first eq page, own process | 41,336,832 B | SQLite: 34,844,672 B | 1.19 | ratio ≤ 2.00 | met |",
		"| memory after (KiB) | ds anon | ds file | sq anon | sq file | ds total | sq total | ratio | ds µs | sq µs | target |",
		// The vector store's memory table, shown whole: SQLite has no
		// vector query (its figure is its get's, its time "-"); each
		// step's bound and the store's total over it.
		"| vector memory after (KiB) | ds anon | ds file | sq anon | sq file | ds total | sq total | ratio | ds µs | sq µs | bound | ÷ bound | target |",
		"| first hybrid | 17576 | 255604 | 4256 | 31828 | 273180 | 36084 | 7.57 | 311436 | - | 245868 | 1.11 | ≤ 2× sqlite + 153.6 MB: MISSED |",
		// A figure found by a pattern in a cell.
		"recall@10 1.000",
		// The HNSW build against its peer (two targets, missed) and
		// against hnswlib (reported, its recall beside its name), from a
		// second table of the same log.
		"| HNSW build, 100,000 × 384 (M=16, ef_construction=40) | 4,210 vectors/s | coder/hnsw v0.6.1 (in memory; not a target: its recall@10 is under 0.95): 5,012 vectors/s | 0.84 | ≥ 8,000 vectors/s | **missed** |",
		"| HNSW build, against hnswlib (C++, in memory, 2 threads) | 4,210 vectors/s | hnswlib (recall@10 0.998): 12,050 vectors/s | 0.35 | reported | — |",
		// The agent's jobs: a time ratio target for twice the peer's
		// rate, byte counts against the fastest peer, and the logged
		// table of every job on every server shown whole.
		"| ingest 2,000 notes, calls of 100: wall time | 191 ms | server-memory: 224 ms | 0.85 | ratio ≤ 0.50 | **missed** |",
		"| ingest 2,000 notes, calls of 100: result bytes | 150,886 B | server-memory: 666,440 B | 0.23 | ratio ≤ 1.00 | met |",
		"| GET 1,000 keys, one call each: result bytes | 319,000 B | the faster Redis peer: 49,000 B | 6.51 | ratio ≤ 1.00 | **missed** |",
		"| job / server | ops | calls | time ms | ops/s | bytes | content B | structured B |\n|---|---|---|---|---|---|---|---|\n| ingest / mcpkit | 2000 | 20 | 190.9 | 10476 | 150886 | 81733 | 69153 |",
		"| batch128 / gongrzhe-redis | 1280 | 1280 | 681.6 | 1878 | 75520 | 75520 | 0 |\n\n",
		// The problems: packages that did not build or stopped, failed
		// benchmarks.
		"- `github.com/mcpkit/mcpkit/cmd/mcpkit`: the tests did not build",
		"- `github.com/mcpkit/mcpkit/pkg/docstore` stopped before its benchmarks finished",
		"- `BenchmarkRespSidecar/batch=128` failed",
		"- `BenchmarkStoreSQLite` failed",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	// Every row of every area was found in the fixture: a renamed
	// benchmark, metric or column shows here.
	if strings.Contains(md, "not measured") {
		t.Errorf("rows not measured in the fixture:\n%s", grepLines(md, "not measured"))
	}
	// The other benchmarks are listed once, those of the areas not.
	other := md[strings.Index(md, "## Other benchmarks"):]
	if !strings.Contains(other, "| pkg/docstore/kv | BenchmarkPut/bolt-fsync | 3000 | 17,664 ns/op |") {
		t.Errorf("the other benchmarks lack BenchmarkPut/bolt-fsync:\n%s", other)
	}
	for _, used := range []string{"BenchmarkStdioRoundTrip", "BenchmarkRespSidecar", "BenchmarkOAuthVerify", "BenchmarkTransport/ping/sdk"} {
		if strings.Contains(other, used) {
			t.Errorf("%s is listed among the other benchmarks", used)
		}
	}
	// What the table benchmarks logged is kept.
	if !strings.Contains(md, "BenchmarkRespSidecar: MCP floor (resp_session list") {
		t.Errorf("the RESP area lacks its benchmark's log")
	}
}

// checkPlots checks that every plot the report links is a PNG of a
// readable size, for each area with ratios and each with quantiles.
func checkPlots(t *testing.T, dir string) {
	md := readReport(t, filepath.Join(dir, "report.md"))
	var linked []string
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "![") {
			linked = append(linked, line[strings.Index(line, "](")+2:len(line)-1])
		}
	}
	want := []string{"ratios-core.png", "ratios-resp.png", "latency-resp.png", "ratios-store.png", "latency-store.png",
		"ratios-store-postgres.png", "latency-store-postgres.png", "ratios-actions.png", "ratios-oauth.png", "latency-oauth.png", "ratios-agent.png"}
	if !slices.Equal(linked, want) {
		t.Errorf("plots linked %v, want %v", linked, want)
	}
	for _, name := range want {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dx() > 1200 || b.Dy() < 100 || b.Dy() > 1200 {
			t.Errorf("%s is %v", name, b)
		}
	}
}

// checkPublished checks that -publish wrote docs/benchmarks.md linking
// its plots under docs/benchmarks/, and dropped the plots of an earlier
// report.
func checkPublished(t *testing.T, stale string) {
	md := readReport(t, filepath.Join(stale, "benchmarks.md"))
	if !strings.Contains(md, "![Core: framing and transports: speed against the peer](benchmarks/ratios-core.png)") {
		t.Errorf("docs/benchmarks.md does not link its plots under benchmarks/:\n%s", grepLines(md, "!["))
	}
	pngs, err := filepath.Glob(filepath.Join(stale, "benchmarks", "*.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pngs) != 11 || slices.Contains(pngs, filepath.Join(stale, "benchmarks", "ratios-gone.png")) {
		t.Errorf("docs/benchmarks holds %v", pngs)
	}
}

// TestCell reads cells of logged tables: rows shorter than the header,
// a row found by the start of its name, a table ended by a line of one
// cell.
func TestCell(t *testing.T) {
	t.Parallel()
	lines := []string{
		"vector search, 100000 × 384 vectors",
		"query                       n     p50 µs     ratio  target",
		"exact top-10: docstore    200      6,512      0.11  p50 ≤ 20ms: met",
		"exact top-10: chromem-go  200      60900",
		"done",
		"other  n",
		"exact top-10: x  1",
	}
	for _, c := range []struct {
		row, col, want string
		ok             bool
	}{
		{"exact top-10: docstore", "p50 µs", "6,512", true},
		{"exact top-10: docstore", "target", "p50 ≤ 20ms: met", true},
		{"exact top-10: chromem", "p50 µs", "60900", true},
		{"exact top-10: chromem", "target", "", false},
		{"exact top-10: x", "n", "", false}, // in another table
		{"approximate", "n", "", false},
	} {
		got, ok := cell(lines, "query", c.row, c.col)
		if got != c.want || ok != c.ok {
			t.Errorf("cell(%q, %q) = %q, %v; want %q, %v", c.row, c.col, got, ok, c.want, c.ok)
		}
	}
}

// TestFormat prints figures as the tables show them.
func TestFormat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		k    Kind
		v    float64
		want string
	}{
		{Time, 36.8e-9, "37 ns"},
		{Time, 4.99e-6, "4.99 µs"},
		{Time, 81.02e-6, "81.0 µs"},
		{Time, -5e-6, "−5.00 µs"},
		{Time, 0.2176, "218 ms"},
		{Time, 12.5, "12.5 s"},
		{Rate, 1234567, "1,234,567 docs/s"},
		{Rate, 4.2, "4.2 docs/s"},
	} {
		if got := format(c.k, c.v, "docs/s"); got != c.want {
			t.Errorf("format(%v, %g) = %q, want %q", c.k, c.v, got, c.want)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
