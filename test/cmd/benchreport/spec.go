package main

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Kind says what a row's figures are, and so which way is better.
type Kind int

const (
	// Time figures are durations in seconds: lower is better.
	Time Kind = iota
	// Rate figures are operations per second: higher is better.
	Rate
	// Fraction figures are plain numbers, such as a ratio: higher is
	// better.
	Fraction
	// Size figures are bytes: lower is better. They are not speeds, so
	// the ratio plot leaves them out.
	Size
)

// Measure locates one figure in the output: a metric the benchmark
// reported (Unit), or a cell of a table it logged (Table, Row, Col), which
// is the only place a failing benchmark's figures appear (go test prints no
// result line for a benchmark that failed). Scale converts the printed
// number to seconds for a Time figure (1e-9 for ns, 1e-6 for µs).
type Measure struct {
	Pkg   string // the end of the benchmark's import path, where names repeat
	Bench string // the full benchmark name, without the GOMAXPROCS suffix
	Unit  string // a reported metric
	// Table is the first cell of the logged table's header row, Row the
	// start of the row's first cell, Col the column's header; Pattern,
	// if set, extracts the number from the cell (its first group).
	Table, Row, Col string
	Pattern         *regexp.Regexp
	Scale           float64
}

// Value returns the measure's figure in out, and whether it was found.
func (m Measure) Value(out *Output) (float64, bool) {
	if m.Bench == "" {
		return 0, false
	}
	var v float64
	if m.Table == "" {
		r := out.result(m.Pkg, m.Bench)
		if r == nil {
			return 0, false
		}
		var ok bool
		if v, ok = r.Values[m.Unit]; !ok {
			return 0, false
		}
		r.used = true
	} else {
		top, _, _ := strings.Cut(m.Bench, "/")
		out.markUsed(m.Pkg, top)
		c, ok := cell(out.logs(m.Pkg, top), m.Table, m.Row, m.Col)
		if !ok {
			return 0, false
		}
		if m.Pattern != nil {
			sub := m.Pattern.FindStringSubmatch(c)
			if sub == nil {
				return 0, false
			}
			c = sub[1]
		}
		var err error
		if v, err = strconv.ParseFloat(strings.ReplaceAll(c, ",", ""), 64); err != nil {
			return 0, false
		}
	}
	if m.Scale != 0 {
		v *= m.Scale
	}
	return v, !math.IsNaN(v) && !math.IsInf(v, 0)
}

// Of is what a target constrains.
type Of int

const (
	// OfRatio is mcpkit's figure over the peer's.
	OfRatio Of = iota
	// OfMine is mcpkit's figure itself.
	OfMine
	// OfAdded is mcpkit's figure less the peer's (what mcpkit adds).
	OfAdded
	// OfOther is another figure of the benchmark (Check.Other).
	OfOther
)

// Check is one target of a row: the figure Of compared with Limit by Op
// ("≤" or "≥"), in the row's units (seconds for Time).
type Check struct {
	Of    Of
	Op    string
	Limit float64
	// Other and OtherName are the figure and its name for OfOther.
	Other     Measure
	OtherName string
}

// Quantile is a latency percentile of both sides of a row (seconds).
type Quantile struct {
	Q          string // "p50", "p95", "p99"
	Mine, Peer Measure
}

// Row is one line of an area's table: an mcpkit figure, its peer's, their
// ratio (mcpkit over peer), the targets and the latency quantiles known.
type Row struct {
	Name       string
	Kind       Kind
	Per        string // what a Rate counts per second ("docs/s")
	Mine, Peer Measure
	PeerName   string
	// PeerOther, if set, is another figure of the peer's, shown after
	// its name with PeerOtherName (three decimals), not judged.
	PeerOther     Measure
	PeerOtherName string
	Checks        []Check
	Quantiles     []Quantile
}

// Area is one table of the report and its plots.
type Area struct {
	ID      string // names its plot files
	Title   string
	Command string // the make target that measures it
	About   string
	Rows    []Row
	// Benches are the top-level benchmarks whose logs the area shows.
	Benches []string
	// Tables are tables the benchmarks logged that the area shows whole,
	// as Markdown tables, after its own.
	Tables []LoggedTable
}

// LoggedTable is a table a benchmark logged: Bench's log lines from the
// header row whose first cell is Header to the first line of fewer than
// two cells.
type LoggedTable struct{ Bench, Header string }

// ns, µs and ms scale printed numbers to seconds.
const (
	ns = 1e-9
	us = 1e-6
	ms = 1e-3
)

// metric is a reported metric of a benchmark, scaled by scale.
func metric(bench, unit string, scale float64) Measure {
	return Measure{Bench: bench, Unit: unit, Scale: scale}
}

// inPkg is m in a package whose import path ends in pkg.
func (m Measure) inPkg(pkg string) Measure { m.Pkg = pkg; return m }

// logged is a cell of a table a benchmark logged.
func logged(bench, table, row, col string, scale float64) Measure {
	return Measure{Bench: bench, Table: table, Row: row, Col: col, Scale: scale}
}

// pair is a row comparing the "<a>-ns/call" and "<b>-ns/call" metrics
// that internal/benchpair reports.
func pair(name, bench, a, b, peer string, checks ...Check) Row {
	return Row{Name: name, Kind: Time, Mine: metric(bench, a+"-ns/call", ns), Peer: metric(bench, b+"-ns/call", ns),
		PeerName: peer, Checks: checks}
}

// overhead is a row of BenchmarkTelemetryOverhead's table for transport
// (read from its log, so that a missed target still shows its figures).
func overhead(name, transport string) Row {
	row := overheadRow(name, transport, "telemetry")
	row.Checks = []Check{{Of: OfRatio, Op: "≤", Limit: 1.05}}
	return row
}

// overheadBound is the row of the least telemetry could add over
// transport in the same run: the call with telemetry off plus the bound
// (one span and one histogram point, timed alone), against off.
func overheadBound(name, transport string) Row {
	return overheadRow(name, transport, "off plus bound")
}

// overheadRow is a row of BenchmarkTelemetryOverhead's table for
// transport: the figure of the table's row mine against its row off.
func overheadRow(name, transport, mine string) Row {
	const bench = "BenchmarkTelemetryOverhead/"
	table := transport + " overhead"
	return Row{Name: name, Kind: Time, Mine: logged(bench+transport, table, mine, "ns/call", ns),
		Peer: logged(bench+transport, table, "off", "ns/call", ns), PeerName: "telemetry off"}
}

// subs is a row comparing the ns/op of two sub-benchmarks.
func subs(name, pkg, mine, peer, peerName string) Row {
	return Row{Name: name, Kind: Time, Mine: metric(mine, "ns/op", ns).inPkg(pkg), Peer: metric(peer, "ns/op", ns).inPkg(pkg), PeerName: peerName}
}

// memTable is the header of BenchmarkStoreSQLite's table of resident
// memory and first queries, each side in a process of its own.
const memTable = "memory after (KiB)"

// recallIn finds a recall@10 in a cell of BenchmarkStoreVector's tables.
var recallIn = regexp.MustCompile(`recall@10 ([0-9.]+)`)

// vecMemTable is the header of BenchmarkStoreVector's table of resident
// memory after the vector store's first queries, against SQLite holding
// the vectors as BLOBs (target: twice SQLite's plus the vectors' size,
// checked by the benchmark and shown in the table's last column; beside
// it each step's bound, the least it must hold, and the ratio to it).
const vecMemTable = "vector memory after (KiB)"

// storeMemoryRows are the rows of BenchmarkStoreSQLite's memory table:
// after each step, the resident memory (anonymous plus file-backed) at
// most twice SQLite's; the time of the open and of each first query.
func storeMemoryRows(bench string) []Row {
	var rows []Row
	for _, step := range []string{"open", "first get", "first eq page", "first eq count", "first range page"} {
		rows = append(rows, Row{Name: "resident memory after " + step + ", own process", Kind: Size,
			Mine: logged(bench, memTable, step, "ds total", 1024), Peer: logged(bench, memTable, step, "sq total", 1024),
			PeerName: "SQLite", Checks: []Check{{Of: OfRatio, Op: "≤", Limit: 2}}})
	}
	for _, step := range []string{"open", "first get", "first eq page", "first eq count", "first range page"} {
		rows = append(rows, Row{Name: step + " in a new process: time", Kind: Time,
			Mine: logged(bench, memTable, step, "ds µs", us), Peer: logged(bench, memTable, step, "sq µs", us), PeerName: "SQLite"})
	}
	return rows
}

// Areas are the report's tables, one per area of the project, with every
// target the benchmarks check.
func Areas() []Area {
	const (
		sidecar  = "BenchmarkRespSidecar"
		sqlite   = "BenchmarkStoreSQLite"
		text     = "BenchmarkStoreText"
		vector   = "BenchmarkStoreVector"
		pgBench  = "BenchmarkStorePostgres"
		pgHybrid = "BenchmarkStorePostgresHybrid"
		agent    = "BenchmarkAgent"
	)
	// sidecarRow is a batch size of BenchmarkRespSidecar's logged table.
	sidecarRow := func(batch string, checks ...Check) Row {
		return Row{Name: "resp_execute over stdio, batch " + batch + " (SET)", Kind: Rate, Per: "cmd/s",
			Mine: logged(sidecar, "batch", batch, "mcp/s", 0), Peer: logged(sidecar, "batch", batch, "direct/s", 0),
			PeerName: "direct RESP", Checks: checks, Quantiles: []Quantile{
				{"p50", logged(sidecar, "batch", batch, "mcp p50", us), logged(sidecar, "batch", batch, "dir p50", us)},
				{"p95", logged(sidecar, "batch", batch, "mcp p95", us), logged(sidecar, "batch", batch, "dir p95", us)},
			}}
	}
	// boundRow is a batch size of BenchmarkRespSidecar's lower bound
	// (test/internal/respbound) against its own direct rounds.
	boundRow := func(batch string) Row {
		return Row{Name: "lower bound (test/internal/respbound) over stdio, batch " + batch + " (SET)", Kind: Rate, Per: "cmd/s",
			Mine: logged(sidecar, "batch", batch, "bound/s", 0), Peer: logged(sidecar, "batch", batch, "bdir/s", 0),
			PeerName: "direct RESP"}
	}
	// storeRow is a row of a store benchmark's logged table, where
	// docstore and the peer have a rate, a p50 and a p95 each.
	storeRow := func(name, bench, row, per, peer, peerCol, peerQ string, checks ...Check) Row {
		return Row{Name: name, Kind: Rate, Per: per,
			Mine: logged(bench, "operation", row, "docstore/s", 0), Peer: logged(bench, "operation", row, peerCol, 0),
			PeerName: peer, Checks: checks, Quantiles: []Quantile{
				{"p50", logged(bench, "operation", row, "ds p50", us), logged(bench, "operation", row, peerQ+" p50", us)},
				{"p95", logged(bench, "operation", row, "ds p95", us), logged(bench, "operation", row, peerQ+" p95", us)},
			}}
	}
	// perBatch is a row per batch size of the in-memory RESP benchmarks.
	perBatch := func(row func(batch string) Row) []Row {
		var rows []Row
		for _, batch := range []string{"1", "16", "128"} {
			rows = append(rows, row(batch))
		}
		return rows
	}
	noSlower := Check{Of: OfRatio, Op: "≥", Limit: 1}
	oauthRow := func(state string) Row {
		bench := "BenchmarkOAuthVerify/" + state
		mine, peer := metric(bench, "oauth-p50-µs", us), metric(bench, "static-p50-µs", us)
		return Row{Name: "tools/call on /mcp with an OAuth token, " + state, Kind: Time, Mine: mine, Peer: peer,
			PeerName: "static bearer token", Checks: []Check{{Of: OfAdded, Op: "≤", Limit: 100 * us}},
			Quantiles: []Quantile{{"p50", mine, peer}}}
	}
	adminRow := func(name, sub, direct string) Row {
		bench := "BenchmarkRespAdmin/" + sub
		mine, peer := metric(bench, "gateway-p50-µs", us), metric(bench, "direct-p50-µs", us)
		return Row{Name: name, Kind: Time, Mine: mine, Peer: peer, PeerName: direct, Quantiles: []Quantile{{"p50", mine, peer},
			{"p95", metric(bench, "gateway-p95-µs", us), metric(bench, "direct-p95-µs", us)}}}
	}
	// agentRows are a job's rows of BenchmarkAgent's verdict table: its
	// time and its result bytes against the best peer that does it (the
	// fastest; the table names it), neither more than the peer's, and
	// the time at most maxTime of the peer's.
	agentRows := func(job, name, peer string, maxTime float64) []Row {
		return []Row{{Name: name + ": wall time", Kind: Time,
			Mine: logged(agent, "job", job, "mcpkit ms", ms), Peer: logged(agent, "job", job, "peer ms", ms),
			PeerName: peer, Checks: []Check{{Of: OfRatio, Op: "≤", Limit: maxTime}}}, {
			Name: name + ": result bytes", Kind: Size,
			Mine: logged(agent, "job", job, "mcpkit B", 0), Peer: logged(agent, "job", job, "peer B", 0),
			PeerName: peer, Checks: []Check{{Of: OfRatio, Op: "≤", Limit: 1}}}}
	}
	const redisPeer = "the faster Redis peer"
	return []Area{{
		ID: "core", Title: "Core: framing and transports", Command: "make bench",
		About: "A no-op `tools/call` through `bin/mcpkit` against the same tool served by the MCP Go SDK alone " +
			"(`test/internal/sdkpeer`), the host's call path against the SDK's `AddTool` in memory, and the stdio " +
			"transport against the SDK's `IOTransport`. Figures are the mean time of one call.",
		Rows: []Row{
			pair("stdio round trip, bin/mcpkit", "BenchmarkStdioRoundTrip", "mcpkit", "sdk", "SDK StdioTransport",
				Check{Of: OfRatio, Op: "≤", Limit: 1.10}),
			pair("HTTP round trip, 2025-11-25 (sessions)", "BenchmarkHTTPRoundTrip/2025-11-25", "mcpkit", "sdk", "SDK HTTP handler"),
			pair("HTTP round trip, 2026-07-28 (stateless)", "BenchmarkHTTPRoundTrip/2026-07-28", "mcpkit", "sdk", "SDK HTTP handler"),
			pair("host call path in memory", "BenchmarkToolCall", "host", "sdk", "SDK AddTool"),
			overhead("stdio round trip, metrics and tracing on (sampled, OTLP)", "stdio"),
			overhead("HTTP round trip, metrics and tracing on (sampled, OTLP, Prometheus)", "http"),
			overheadBound("stdio round trip, telemetry off plus its bound (one span and one histogram point, timed alone)", "stdio"),
			overheadBound("HTTP round trip, telemetry off plus its bound (one span and one histogram point, timed alone)", "http"),
			pair("host call path in memory, metrics and tracing on", "BenchmarkObservedToolCall", "telemetry", "off", "telemetry off"),
			subs("stdio transport, ping round trip", "mcpcore/stdio", "BenchmarkRoundTrip/ping/mcpkit", "BenchmarkRoundTrip/ping/sdk", "SDK IOTransport"),
			subs("stdio transport, 64 KiB echo round trip", "mcpcore/stdio", "BenchmarkRoundTrip/echo-64KiB/mcpkit", "BenchmarkRoundTrip/echo-64KiB/sdk", "SDK IOTransport"),
			subs("stdio transport alone, ping", "mcpcore/stdio", "BenchmarkTransport/ping/mcpkit", "BenchmarkTransport/ping/sdk", "SDK IOTransport"),
			subs("stdio transport alone, 64 KiB call", "mcpcore/stdio", "BenchmarkTransport/call-64KiB/mcpkit", "BenchmarkTransport/call-64KiB/sdk", "SDK IOTransport"),
		},
	}, {
		ID: "resp", Title: "RESP sidecar against direct RESP", Command: "make bench-resp, make bench",
		About: "A persistent MCP stdio session through `bin/mcpkit resp` against a direct persistent RESP connection " +
			"(`pkg/resp`) on the same disposable redis-server, 100 rounds of each batch size, with the lower bound of any " +
			"sidecar (`test/internal/respbound`: the same answers, nothing else done) against direct rounds of its own; the management gateway " +
			"(`mcpkit resp admin`) against the RESP commands it wraps; the plugin in memory; `pkg/resp` against go-redis.",
		Benches: []string{sidecar, "BenchmarkRespAdmin"},
		Rows: append([]Row{
			sidecarRow("1"),
			{Name: "resp_execute over stdio, batch 1: p50 round", Kind: Time,
				Mine: logged(sidecar, "batch", "1", "mcp p50", us), Peer: logged(sidecar, "batch", "1", "dir p50", us),
				PeerName: "direct RESP", Checks: []Check{{Of: OfAdded, Op: "≤", Limit: 150 * us}}},
			sidecarRow("16"),
			sidecarRow("128", Check{Of: OfRatio, Op: "≥", Limit: 0.5}), // reported, not enforced
			// The batch-128 target: the ratio above against the lower
			// bound's in the same run (judged on the median of five runs,
			// make bench-resp RUNS=5).
			{Name: "resp_execute over stdio, batch 128: ratio to direct RESP, against the lower bound's", Kind: Fraction,
				Mine: logged(sidecar, "batch", "128", "ratio", 0), Peer: logged(sidecar, "batch", "128", "b-ratio", 0),
				PeerName: "lower bound", Checks: []Check{{Of: OfRatio, Op: "≥", Limit: 0.85}}},
			boundRow("1"),
			boundRow("16"),
			boundRow("128"),
			adminRow("gateway GET /metrics (p50)", "metrics", "INFO ALL"),
			adminRow("gateway GET /api/keys?count=100 (p50)", "keys100", "SCAN + TYPE/PTTL/MEMORY"),
		}, append(perBatch(func(batch string) Row {
			return pair("resp_execute in memory, batch "+batch, "BenchmarkExecute/batch="+batch, "mcp", "direct", "direct RESP")
		}), perBatch(func(batch string) Row {
			return subs("pkg/resp pipeline, batch "+batch, "pkg/resp", "BenchmarkPipeline/resp/batch="+batch, "BenchmarkPipeline/goredis/batch="+batch, "go-redis")
		})...)...),
	}, {
		ID: "store", Title: "Document store against SQLite, chromem-go and bleve", Command: "make bench-store",
		About: "The store on a bbolt file (durable commits) against SQLite (modernc.org/sqlite, WAL, synchronous=FULL) " +
			"holding the same 100,000 documents with the same two indexes; vector search against chromem-go; the HNSW " +
			"build against coder/hnsw and against hnswlib (C++, on 2 threads) building the same vectors in memory, the three " +
			"in turn batch by batch; text indexing and BM25 against bleve. Rates are per second.",
		Benches: []string{sqlite, text, vector},
		Tables:  []LoggedTable{{sqlite, memTable}, {vector, vecMemTable}},
		Rows: append([]Row{
			storeRow("ingest, transactions of 1,000", sqlite, "ingest", "docs/s", "SQLite", "sqlite/s", "sq",
				noSlower, Check{Of: OfMine, Op: "≥", Limit: 20_000}),
			storeRow("get by random id", sqlite, "get by random id", "ops/s", "SQLite", "sqlite/s", "sq", noSlower),
			storeRow("page: group = v (100 documents)", sqlite, "eq page", "ops/s", "SQLite", "sqlite/s", "sq", noSlower),
			storeRow("count: group = v", sqlite, "eq count", "ops/s", "SQLite", "sqlite/s", "sq"),
			storeRow("page: group in a range, limit 50", sqlite, "range page", "ops/s", "SQLite", "sqlite/s", "sq", noSlower),
			storeRow("reopen: close, open, first get", sqlite, "reopen", "ops/s", "SQLite", "sqlite/s", "sq"),
			{Name: "reopen: close, open, first get (p50)", Kind: Time,
				Mine: logged(sqlite, "operation", "reopen", "ds p50", us), Peer: logged(sqlite, "operation", "reopen", "sq p50", us),
				PeerName: "SQLite", Checks: []Check{{Of: OfRatio, Op: "≤", Limit: 2}}},
			storeRow("text indexing, durable batches of 1,000", text, "index", "docs/s", "bleve", "bleve/s", "bl", noSlower),
			{Name: "BM25 top-10, two-word query (p50)", Kind: Time,
				Mine: logged(text, "operation", "BM25", "ds p50", us), Peer: logged(text, "operation", "BM25", "bl p50", us),
				PeerName: "bleve", Checks: []Check{{Of: OfRatio, Op: "≤", Limit: 1}}, Quantiles: []Quantile{
					{"p50", logged(text, "operation", "BM25", "ds p50", us), logged(text, "operation", "BM25", "bl p50", us)},
					{"p95", logged(text, "operation", "BM25", "ds p95", us), logged(text, "operation", "BM25", "bl p95", us)},
				}},
			{Name: "exact vector top-10, 100,000 × 384 (p50)", Kind: Time,
				Mine: logged(vector, "query", "exact top-10: docstore", "p50 µs", us), Peer: logged(vector, "query", "exact top-10: chromem-go", "p50 µs", us),
				PeerName: "chromem-go", Checks: []Check{{Of: OfMine, Op: "≤", Limit: 20 * ms}}, Quantiles: []Quantile{
					{"p50", logged(vector, "query", "exact top-10: docstore", "p50 µs", us), logged(vector, "query", "exact top-10: chromem-go", "p50 µs", us)},
					{"p95", logged(vector, "query", "exact top-10: docstore", "p95 µs", us), logged(vector, "query", "exact top-10: chromem-go", "p95 µs", us)},
				}},
			{Name: "approximate vector top-10, HNSW (p50)", Kind: Time,
				Mine: logged(vector, "query", "approximate top-10", "p50 µs", us),
				Checks: []Check{{Of: OfMine, Op: "≤", Limit: 1 * ms}, {Of: OfOther, Op: "≥", Limit: 0.95, OtherName: "recall@10",
					Other: Measure{Bench: vector, Table: "query", Row: "approximate top-10", Col: "target", Pattern: recallIn}}},
				Quantiles: []Quantile{
					{Q: "p50", Mine: logged(vector, "query", "approximate top-10", "p50 µs", us)},
					{Q: "p95", Mine: logged(vector, "query", "approximate top-10", "p95 µs", us)},
				}},
			{Name: "HNSW build, 100,000 × 384 (M=16, ef_construction=40)", Kind: Rate, Per: "vectors/s",
				Mine: logged(vector, "build", "HNSW build: docstore", "vectors/s", 0), Peer: logged(vector, "build", "HNSW build: coder/hnsw", "vectors/s", 0),
				PeerName: "coder/hnsw v0.6.1 (in memory; not a target: its recall@10 is under 0.95)", Checks: []Check{{Of: OfMine, Op: "≥", Limit: 8_000}}},
			// hnswlib, the C++ reference library, reported: what a build
			// of the same graph does on this machine.
			{Name: "HNSW build, against hnswlib (C++, in memory, 2 threads)", Kind: Rate, Per: "vectors/s",
				Mine: logged(vector, "build", "HNSW build: docstore", "vectors/s", 0), Peer: logged(vector, "build", "HNSW build: hnswlib", "vectors/s", 0),
				PeerName: "hnswlib", PeerOtherName: "recall@10",
				PeerOther: Measure{Bench: vector, Table: "build", Row: "HNSW build: hnswlib", Col: "target", Pattern: recallIn}},
			{Name: "hybrid: filter + vector + text, RRF, MMR, approximate vectors (p50, median of 5 rounds)", Kind: Time,
				Mine: logged(vector, "query", "hybrid", "p50 µs", us), Checks: []Check{{Of: OfMine, Op: "≤", Limit: 5 * ms}}, Quantiles: []Quantile{
					{Q: "p50", Mine: logged(vector, "query", "hybrid", "p50 µs", us)},
					{Q: "p95", Mine: logged(vector, "query", "hybrid", "p95 µs", us)},
				}},
		}, storeMemoryRows(sqlite)...),
	}, {
		ID: "store-postgres", Title: "Document store on PostgreSQL against bare pgx", Command: "make bench-store",
		About: "The store on PostgreSQL against bare pgx on the same durable server (fsync on), the workload of the SQLite " +
			"comparison: pgx holds the documents as jsonb with the same two indexes as btree expression indexes and " +
			"ingests each batch as one pgx.Batch of upserts; ingest by two instances at once against one; hybrid search " +
			"on PostgreSQL against the same store on a bbolt file (copied with `kv.Copy`). Rates are per second.",
		Benches: []string{pgBench, pgHybrid},
		Rows: []Row{
			storeRow("ingest, transactions of 1,000", pgBench, "ingest", "docs/s", "bare pgx", "pgx/s", "pgx",
				Check{Of: OfRatio, Op: "≥", Limit: 0.5}),
			{Name: "ingest, against its physical bound", Kind: Rate, Per: "docs/s",
				Mine: logged(pgBench, "operation", "ingest", "docstore/s", 0), Peer: logged(pgBench, "operation", "physical bound of the ingest", "docstore/s", 0),
				PeerName: "bare pgx writing the store's rows of each batch in one round trip"},
			{Name: "physical bound of the ingest, against bare pgx's jsonb table", Kind: Rate, Per: "docs/s",
				Mine: logged(pgBench, "operation", "physical bound of the ingest", "docstore/s", 0), Peer: logged(pgBench, "operation", "physical bound of the ingest", "pgx/s", 0),
				PeerName: "bare pgx"},
			{Name: "get by random id (p50)", Kind: Time,
				Mine: logged(pgBench, "operation", "get by random id", "ds p50", us), Peer: logged(pgBench, "operation", "get by random id", "pgx p50", us),
				PeerName: "bare pgx", Checks: []Check{{Of: OfRatio, Op: "≤", Limit: 2}}, Quantiles: []Quantile{
					{"p50", logged(pgBench, "operation", "get by random id", "ds p50", us), logged(pgBench, "operation", "get by random id", "pgx p50", us)},
					{"p95", logged(pgBench, "operation", "get by random id", "ds p95", us), logged(pgBench, "operation", "get by random id", "pgx p95", us)},
				}},
			{Name: "get by random id (p50), against its physical bound", Kind: Time,
				Mine: logged(pgBench, "operation", "get by random id", "ds p50", us), Peer: logged(pgBench, "operation", "bound", "ds p50", us),
				PeerName: "bare pgx reading the row and a version row in one statement"},
			storeRow("page: group = v (100 documents)", pgBench, "eq page", "ops/s", "bare pgx", "pgx/s", "pgx"),
			storeRow("count: group = v", pgBench, "eq count", "ops/s", "bare pgx", "pgx/s", "pgx"),
			storeRow("page: group in a range, limit 50", pgBench, "range page", "ops/s", "bare pgx", "pgx/s", "pgx"),
			{Name: "ingest by two instances at once", Kind: Rate, Per: "docs/s",
				Mine: logged(pgBench, "instances", "two at once", "docs/s", 0), Peer: logged(pgBench, "instances", "one", "docs/s", 0),
				PeerName: "one instance"},
			{Name: "hybrid: filter + vector + text, RRF, MMR (p50)", Kind: Time,
				Mine: logged(pgHybrid, "store", "PostgreSQL", "p50 µs", us), Peer: logged(pgHybrid, "store", "bbolt file", "p50 µs", us),
				PeerName: "the same store on a bbolt file", Checks: []Check{{Of: OfRatio, Op: "≤", Limit: 1.5}}, Quantiles: []Quantile{
					{"p50", logged(pgHybrid, "store", "PostgreSQL", "p50 µs", us), logged(pgHybrid, "store", "bbolt file", "p50 µs", us)},
					{"p95", logged(pgHybrid, "store", "PostgreSQL", "p95 µs", us), logged(pgHybrid, "store", "bbolt file", "p95 µs", us)},
				}},
		},
	}, {
		ID: "actions", Title: "Action framework against bare handlers", Command: "make bench",
		About: "An action served over HTTP and MCP against a plain `net/http` handler and the SDK's own tool, " +
			"on real servers and clients (the in-process row: `ServeHTTP` with a recorder).",
		Rows: []Row{
			pair("GET /api/status over HTTP", "BenchmarkStatusHTTP", "action", "bare", "bare net/http handler",
				Check{Of: OfRatio, Op: "≤", Limit: 1.5}),
			pair("GET /api/status in process", "BenchmarkStatusHandler", "action", "bare", "bare net/http handler"),
			pair("action as an MCP tool over HTTP", "BenchmarkToolCallHTTP", "actions", "sdk", "SDK tool",
				Check{Of: OfRatio, Op: "≤", Limit: 1.3}),
		},
	}, {
		ID: "oauth", Title: "OAuth token verification", Command: "make bench",
		About: "A `tools/call` on `/mcp` with an OAuth access token against the same call with a static bearer token, " +
			"on one server accepting both: the OAuth records in process, in Redis, and in Redis read on every call.",
		Rows: []Row{oauthRow("memory"), oauthRow("redis"), oauthRow("redis-uncached")},
	}, {
		ID: "agent", Title: "An agent's jobs against the MCP servers agents install today", Command: "make bench-agent",
		About: "The same jobs through mcpkit and through @modelcontextprotocol/server-memory 2026.8.31, " +
			"@modelcontextprotocol/server-redis 2025.4.25 and @gongrzhe/server-redis-mcp 1.0.0 (installed from npm by the " +
			"benchmark), all over stdio from one go-sdk client, rounds alternating the servers, each figure a median of five: " +
			"2,000 short notes stored in calls of 100 (mcpkit's `write`, server-memory's `create_entities`) and searched 100 " +
			"times (`search` over a text index, `search_nodes`); 1,000 keys SET, then GET, one call each (`resp_execute`, the " +
			"Redis servers' `set` and `get`); 10 batches of 128 SETs (one `resp_execute` each; the Redis servers take one key " +
			"a call, so 128 calls a batch). Result bytes are the JSON of each result's content and structuredContent as the " +
			"client received them. Each job is compared with the fastest peer that does it (named in the table below); " +
			"the ingest's target is twice server-memory's rate.",
		Benches: []string{agent},
		Tables:  []LoggedTable{{agent, "job / server"}},
		Rows: slices.Concat(
			agentRows("ingest", "ingest 2,000 notes, calls of 100", "server-memory", 0.5),
			agentRows("search", "search them, 100 queries", "server-memory", 1),
			agentRows("set", "SET 1,000 keys, one call each", redisPeer, 1),
			agentRows("get", "GET 1,000 keys, one call each", redisPeer, 1),
			agentRows("batch128", "10 batches of 128 SETs", redisPeer, 1),
		),
	}}
}
