package test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore"
)

// The workload of BenchmarkStoreSQLite (issue 7).
const (
	storeDocs       = 100_000
	storeBatch      = 1_000 // documents per transaction while ingesting
	storeGroups     = 1_000 // distinct values of the int index: storeDocs/storeGroups documents each
	storeGets       = 10_000
	storeQueries    = 2_000 // of each query kind
	storeRangeSpan  = 10    // groups a range page's bounds span (1,000 documents)
	storeRangeLimit = 50
	storeReopens    = 50
	storeChecks     = 50 // calls of each kind whose results are compared between the sides

	// storeMinIngest is the docstore's ingest target in documents per
	// second; the other targets are "no slower than SQLite", but for
	// reopening (storeMaxReopenRatio) and resident memory
	// (storeMemoryMaxRatio).
	storeMinIngest = 20_000
	// storeMaxReopenRatio is the reopen target (issue 30): the docstore's
	// p50 of close, open and first get at most twice SQLite's.
	storeMaxReopenRatio = 2.0
)

// storeSide is one of the two stores BenchmarkStoreSQLite compares, holding
// the same documents with the same two secondary indexes ("group", an int
// of storeGroups values, and "name", a text).
type storeSide interface {
	// ingest upserts a batch of documents in one durable transaction.
	ingest(ctx context.Context, b *storeBatchDocs) error
	// get reads the document id (decoded as far as the store's API
	// decodes it) and returns its JSON text when asJSON is set.
	get(ctx context.Context, id int64, asJSON bool) (string, error)
	// eqPage returns the ids of the documents with group g, in id order.
	eqPage(ctx context.Context, g int64) ([]int64, error)
	// count counts the documents with group g.
	count(ctx context.Context, g int64) (int, error)
	// rangePage returns the ids of the first storeRangeLimit documents with
	// group in [lo, hi], ordered by group then id.
	rangePage(ctx context.Context, lo, hi int64) ([]int64, error)
	// reopen closes the store and opens its file again.
	reopen(ctx context.Context) error
	// files are the store's files on disk.
	files() []string
	close() error
}

// storeBatchDocs is one ingest batch in each side's input form: typed values
// for the docstore, JSON text for SQLite (the same documents: the JSON is
// docstore.ToJSON of the values).
type storeBatchDocs struct {
	docs []docstore.Doc
	json []string
}

var (
	storeCities = []string{"Lisbon", "Oslo", "Nairobi", "Quito", "Osaka", "Tunis", "Perth", "Lima", "Riga", "Accra",
		"Hanoi", "Porto", "Dakar", "Cusco", "Bergen", "Kyoto", "Split", "Sucre", "Tartu", "Malmö"}
	storeWords = strings.Fields("amber basil cedar delta ember fjord grove harbor indigo juniper kestrel lagoon " +
		"meadow nectar orchid pebble quartz raven saffron thistle umber violet willow yarrow zephyr")
)

// storeField is a map field of a document.
func storeField(k string, v docstore.Value) docstore.Field { return docstore.Field{Key: k, Value: v} }

// storeDoc returns document id (1 to storeDocs) of the workload: ten
// fields mixing ints, floats, texts and a nested map, the same on every
// call. "group" cycles through storeGroups values (storeDocs/storeGroups
// documents each); "name" is a distinct text whose order is not id order.
func storeDoc(id int64) docstore.Value {
	r := rand.New(rand.NewPCG(uint64(id), 0x5eed))
	bio := make([]string, 6+r.IntN(5))
	for i := range bio {
		bio[i] = storeWords[r.IntN(len(storeWords))]
	}
	return docstore.Map(
		storeField("group", docstore.Int(id*7919%storeGroups)),
		storeField("name", docstore.Text(fmt.Sprintf("user-%06d", id*48271%storeDocs))),
		storeField("email", docstore.Text(fmt.Sprintf("user%d@example.com", id))),
		storeField("age", docstore.Int(18+r.Int64N(80))),
		storeField("score", docstore.Float(r.Float64()*100)),
		storeField("balance", docstore.Float(r.NormFloat64()*1e4)),
		storeField("city", docstore.Text(storeCities[r.IntN(len(storeCities))])),
		storeField("bio", docstore.Text(strings.Join(bio, " "))),
		storeField("visits", docstore.Int(r.Int64N(1_000_000))),
		storeField("address", docstore.Map(
			storeField("street", docstore.Text(fmt.Sprintf("%d %s street", 1+r.IntN(400), storeWords[r.IntN(len(storeWords))]))),
			storeField("zip", docstore.Int(10_000+r.Int64N(90_000))),
			storeField("geo", docstore.Map(
				storeField("lat", docstore.Float(r.Float64()*180-90)),
				storeField("lon", docstore.Float(r.Float64()*360-180)),
			)),
		)),
	)
}

// storeBatchOf returns the documents first to first+n-1 in both input forms.
func storeBatchOf(tb testing.TB, first int64, n int) *storeBatchDocs {
	b := &storeBatchDocs{docs: make([]docstore.Doc, n), json: make([]string, n)}
	for i := range n {
		id := first + int64(i)
		v := storeDoc(id)
		js, err := docstore.ToJSON(v)
		if err != nil {
			tb.Fatal(err)
		}
		b.docs[i] = docstore.Doc{ID: docstore.Int(id), Value: v}
		b.json[i] = string(js)
	}
	return b
}

// BenchmarkStoreSQLite measures, in one run (`make bench-store`, b.N is
// not used), the document store on a file (durable commits: Options.NoSync
// false) against SQLite (modernc.org/sqlite, WAL, synchronous=FULL) holding
// the same 100,000 documents in the same temporary directory, with the
// same two secondary indexes: ingest in transactions of 1,000, get by id,
// an indexed equality page and count, an indexed range page ordered by the
// indexed field, and reopening the file. The two sides alternate in every
// phase, so noise hits both alike, and their results are compared before
// anything is timed. It prints one table and fails when a target is
// missed: the docstore ingests at least 20,000 documents/s and no slower
// than SQLite, gets, equality pages and range pages are no slower, and a
// reopen's p50 is at most twice SQLite's. A second table gives, for each
// side in a process of its own, the time of the open and of the first
// query of each kind after it and the resident memory after each (see
// storeMemoryEnv): at most twice SQLite's.
//
// Why it is fair: both sides make each transaction durable before its
// commit returns (bbolt fsyncs its file; SQLite in WAL mode with
// synchronous=FULL fsyncs the WAL on every commit, where NORMAL would not);
// both upsert; SQLite keeps every document in its page cache (64 MiB), as
// bbolt's memory map does; SQLite's statements are prepared once, while
// the docstore parses each query's filter; SQLite hands back the JSON text
// as stored, while the docstore decodes every document it returns.
func BenchmarkStoreSQLite(b *testing.B) {
	ctx := b.Context()
	dir := b.TempDir()
	ds, err := openDocstoreSide(ctx, filepath.Join(dir, "docstore.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ds.close() })
	sq, err := openSQLiteSide(ctx, filepath.Join(dir, "sqlite.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sq.close() })
	if err := sq.checkPlans(ctx); err != nil {
		b.Fatal(err)
	}
	sides := [2]storeSide{ds, sq}
	rng := rand.New(rand.NewPCG(42, 7))
	b.ResetTimer()

	// Ingest: batch k goes to both sides, the first side alternating.
	var ingest [2]respRounds
	var written [2]int64 // bytes the process wrote during each side's ingest
	for first := int64(1); first <= storeDocs; first += storeBatch {
		batch := storeBatchOf(b, first, storeBatch)
		for j := range 2 {
			i := (j + int(first/storeBatch)) % 2
			w0 := bytesWritten(b)
			start := time.Now()
			if err := sides[i].ingest(ctx, batch); err != nil {
				b.Fatalf("ingest %d..: %v", first, err)
			}
			ingest[i] = append(ingest[i], time.Since(start))
			written[i] += bytesWritten(b) - w0
		}
	}

	randomIDs := func(n int) []int64 {
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = 1 + rng.Int64N(storeDocs)
		}
		return ids
	}
	getIDs := randomIDs(storeGets)
	groups := make([]int64, storeQueries)
	for i := range groups {
		groups[i] = rng.Int64N(storeGroups - storeRangeSpan + 1)
	}
	checkStoreSides(b, ctx, sides, getIDs, groups)

	g := measureStoreGets(b, ctx, sides[:], getIDs)
	gets := [2]respRounds{g[0], g[1]}
	q := measureStoreQueries(b, ctx, sides, groups)
	eqPages, counts, rangePages := q.eqPages, q.counts, q.rangePages
	reopenIDs := randomIDs(storeReopens)
	reopens := measureStoreSides(b, sides, storeReopens, func(s storeSide, i int) error {
		if err := s.reopen(ctx); err != nil {
			return err
		}
		_, err := s.get(ctx, reopenIDs[i], false)
		return err
	})
	b.StopTimer()
	for _, s := range sides {
		if err := s.close(); err != nil { // the child processes open the files
			b.Fatal(err)
		}
	}
	memory := measureStoreMemory(b, [2][2]string{{"docstore", ds.path}, {"sqlite", sq.path}})

	type row struct {
		name   string
		rounds [2]respRounds
		per    int // units per round
		unit   string
		target bool // the docstore must be no slower
		// maxP50 (if not 0) is the target on the docstore's p50 instead:
		// at most maxP50 times SQLite's.
		maxP50 float64
	}
	rows := []row{
		{"ingest, tx of 1,000 (docs/s)", ingest, storeBatch, "docs", true, 0},
		{"get by random id", gets, 1, "ops", true, 0},
		{"eq page: group = v (100 docs)", eqPages, 1, "ops", true, 0},
		{"eq count: group = v (100)", counts, 1, "ops", false, 0},
		{"range page: group in [a,a+9], by group, limit 50", rangePages, 1, "ops", true, 0},
		{"reopen: close, open, first get", reopens, 1, "ops", false, storeMaxReopenRatio},
	}
	var table []string
	for _, r := range rows {
		dsRate, dsP50, dsP95 := r.rounds[0].stats(r.per)
		sqRate, sqP50, sqP95 := r.rounds[1].stats(r.per)
		target := "-"
		if r.maxP50 > 0 {
			target = fmt.Sprintf("p50 ≤ %.0f× sqlite", r.maxP50)
			if float64(dsP50) > r.maxP50*float64(sqP50) {
				target = "MISSED"
				b.Errorf("%s: docstore p50 %v is more than %.0f× SQLite's %v", r.name, dsP50, r.maxP50, sqP50)
			}
		}
		if r.target {
			target = "≥ sqlite"
			if dsRate < sqRate {
				target = "MISSED"
				b.Errorf("%s: docstore %.0f %s/s is slower than SQLite's %.0f", r.name, dsRate, r.unit, sqRate)
			}
		}
		table = append(table, fmt.Sprintf("%-48s  %6d  %10.0f  %10.0f  %5.2f  %9s  %9s  %9s  %9s  %s",
			r.name, len(r.rounds[0])*r.per, dsRate, sqRate, dsRate/sqRate,
			micros(dsP50), micros(sqP50), micros(dsP95), micros(sqP95), target))
	}
	dsIngest, _, _ := ingest[0].stats(storeBatch)
	sqIngest, _, _ := ingest[1].stats(storeBatch)
	if dsIngest < storeMinIngest {
		b.Errorf("ingest: docstore %.0f docs/s is under the target of %d", dsIngest, storeMinIngest)
	}
	dsGet, _, _ := gets[0].stats(1)
	sqGet, _, _ := gets[1].stats(1)
	b.ReportMetric(dsIngest, "ds-ingest-docs/s")
	b.ReportMetric(dsIngest/sqIngest, "ingest-ratio")
	b.ReportMetric(dsGet, "ds-get/s")
	b.ReportMetric(dsGet/sqGet, "get-ratio")
	b.Logf("docstore (bbolt file, fsync per commit) vs SQLite %s (modernc.org/sqlite, WAL, synchronous=FULL), %d documents of 10 fields,\n"+
		"indexes on group (int, %d values) and name (text); %s; load average %s; per second, p50 and p95 of one call (of one transaction for ingest) in µs:\n"+
		"%-48s  %6s  %10s  %10s  %5s  %9s  %9s  %9s  %9s  %s\n%s\nwritten while ingesting: docstore %.0f MB, sqlite %.0f MB; files: docstore %s; sqlite %s",
		sq.version, storeDocs, storeGroups, fsType(dir), loadAverage(),
		"operation", "n", "docstore/s", "sqlite/s", "ratio", "ds p50", "sq p50", "ds p95", "sq p95", "target",
		strings.Join(table, "\n"), float64(written[0])/1e6, float64(written[1])/1e6, fileSizes(ds.files()), fileSizes(sq.files()))
	memTable, memMet := storeMemoryTable("memory after (KiB)", storeMemorySteps, memory, 0, nil)
	b.Logf("each side's file opened in a process of its own (the test binary again), one query of each kind, the median of %d processes a side:\n"+
		"resident memory after each step (KiB; anon: RssAnon, file: RssFile+RssShmem, which holds bbolt's mapped pages; the target counts both) "+
		"and the step's time (µs); load average %s\n%s", storeMemoryRuns, loadAverage(), memTable)
	if !memMet {
		b.Errorf("resident memory: the docstore's is more than %.0f× SQLite's after a step (see the table)", storeMemoryMaxRatio)
	}
}

// loadAverage returns the machine's 1-minute load average (/proc/loadavg),
// which the figures of a shared machine are read against.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(data))[0]
}

// measureStoreSides runs op n times on each side (i from 0 to n-1, the same
// arguments on both), after a warm-up of n/10 calls each, alternating the
// sides every 100 calls so that noise hits both alike, and returns the
// duration of each call.
func measureStoreSides(b *testing.B, sides [2]storeSide, n int, op func(s storeSide, i int) error) [2]respRounds {
	b.Helper()
	r := measureStoreEach(b, sides[:], n, op)
	return [2]respRounds{r[0], r[1]}
}

// measureStoreEach is measureStoreSides for any number of sides, which
// take turns by chunks in a rotating order, so that each is measured in
// the same conditions as the others.
func measureStoreEach(b *testing.B, sides []storeSide, n int, op func(s storeSide, i int) error) []respRounds {
	b.Helper()
	for _, s := range sides {
		for i := range n / 10 {
			if err := op(s, i); err != nil {
				b.Fatalf("warm-up: %v", err)
			}
		}
	}
	rounds := make([]respRounds, len(sides))
	const chunk = 100
	for lo := 0; lo < n; lo += chunk {
		for j := range sides {
			i := (j + lo/chunk) % len(sides)
			for k := lo; k < min(n, lo+chunk); k++ {
				start := time.Now()
				if err := op(sides[i], k); err != nil {
					b.Fatal(err)
				}
				rounds[i] = append(rounds[i], time.Since(start))
			}
		}
	}
	return rounds
}

// storeQueryRounds are the measured rounds of each kind of read, per side.
type storeQueryRounds struct{ eqPages, counts, rangePages [2]respRounds }

// measureStoreGets measures gets of ids on each side, the sides taking
// turns (see measureStoreEach).
func measureStoreGets(b *testing.B, ctx context.Context, sides []storeSide, ids []int64) []respRounds {
	b.Helper()
	return measureStoreEach(b, sides, len(ids), func(s storeSide, i int) error {
		_, err := s.get(ctx, ids[i], false)
		return err
	})
}

// measureStoreQueries measures, on both sides (see measureStoreSides),
// equality pages, counts and range pages of groups.
func measureStoreQueries(b *testing.B, ctx context.Context, sides [2]storeSide, groups []int64) storeQueryRounds {
	b.Helper()
	var q storeQueryRounds
	q.eqPages = measureStoreSides(b, sides, len(groups), func(s storeSide, i int) error {
		_, err := s.eqPage(ctx, groups[i])
		return err
	})
	q.counts = measureStoreSides(b, sides, len(groups), func(s storeSide, i int) error {
		_, err := s.count(ctx, groups[i])
		return err
	})
	q.rangePages = measureStoreSides(b, sides, len(groups), func(s storeSide, i int) error {
		_, err := s.rangePage(ctx, groups[i], groups[i]+storeRangeSpan-1)
		return err
	})
	return q
}

// checkStoreSides compares the two sides' answers on the first storeChecks
// arguments of each measured call, and against the workload: the
// comparison is only worth something if both do the same work.
func checkStoreSides(b *testing.B, ctx context.Context, sides [2]storeSide, ids, groups []int64) {
	b.Helper()
	for _, id := range ids[:storeChecks] {
		want, err := docstore.ToJSON(storeDoc(id))
		if err != nil {
			b.Fatal(err)
		}
		for i, s := range sides {
			if got, err := s.get(ctx, id, true); err != nil || canonicalJSON(got) != canonicalJSON(string(want)) {
				b.Fatalf("side %d: get %d = %s, %v; want %s", i, id, got, err, want)
			}
		}
	}
	perGroup := storeDocs / storeGroups
	for _, g := range groups[:storeChecks] {
		var eq, rng [2][]int64
		for i, s := range sides {
			var err error
			if eq[i], err = s.eqPage(ctx, g); err != nil || len(eq[i]) != perGroup {
				b.Fatalf("side %d: eq page of group %d: %d ids, %v; want %d", i, g, len(eq[i]), err, perGroup)
			}
			if n, err := s.count(ctx, g); err != nil || n != perGroup {
				b.Fatalf("side %d: count of group %d = %d, %v; want %d", i, g, n, err, perGroup)
			}
			if rng[i], err = s.rangePage(ctx, g, g+storeRangeSpan-1); err != nil || len(rng[i]) != storeRangeLimit {
				b.Fatalf("side %d: range page from group %d: %d ids, %v; want %d", i, g, len(rng[i]), err, storeRangeLimit)
			}
		}
		if !slices.Equal(eq[0], eq[1]) || !slices.Equal(rng[0], rng[1]) {
			b.Fatalf("group %d: the sides disagree:\neq page %v\n     vs %v\nrange page %v\n        vs %v", g, eq[0], eq[1], rng[0], rng[1])
		}
		if !slices.IsSorted(eq[0]) {
			b.Fatalf("group %d: eq page not in id order: %v", g, eq[0])
		}
	}
}

// canonicalJSON re-encodes a JSON text with its object keys sorted, so
// that stores that keep key order (the docstore, SQLite's text) and those
// that do not (PostgreSQL's jsonb) compare by content; "" when it does
// not parse.
func canonicalJSON(text string) string {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return ""
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// docstoreSide is the document store on a file, with default (durable)
// options.
type docstoreSide struct {
	path string
	s    *docstore.Store
}

const storeColl = "bench"

func openDocstoreSide(ctx context.Context, path string) (*docstoreSide, error) {
	s, err := docstore.Open(path, docstore.Options{})
	if err != nil {
		return nil, err
	}
	for _, def := range []docstore.IndexDef{{Name: "group", Fields: []string{"group"}}, {Name: "name", Fields: []string{"name"}}} {
		if _, err := s.CreateIndex(ctx, storeColl, def, nil); err != nil {
			s.Close()
			return nil, fmt.Errorf("create index %s: %w", def.Name, err)
		}
	}
	return &docstoreSide{path: path, s: s}, nil
}

func (d *docstoreSide) ingest(ctx context.Context, b *storeBatchDocs) error {
	_, err := d.s.PutMany(ctx, storeColl, b.docs)
	return err
}

func (d *docstoreSide) get(ctx context.Context, id int64, asJSON bool) (string, error) {
	doc, err := d.s.Get(ctx, storeColl, docstore.Int(id))
	if err != nil || !asJSON {
		return "", err
	}
	js, err := docstore.ToJSON(doc.Value)
	return string(js), err
}

// query runs one page query and checks that it read the group index.
func (d *docstoreSide) query(ctx context.Context, filter docstore.Value, q docstore.Query) ([]int64, error) {
	f, err := docstore.ParseFilter(filter)
	if err != nil {
		return nil, err
	}
	q.Filter = f
	res, err := d.s.Page(ctx, storeColl, q)
	if err != nil {
		return nil, err
	}
	if res.Plan.Index != "group" {
		return nil, fmt.Errorf("query %+v did not use the group index: plan %+v", q, res.Plan)
	}
	ids := make([]int64, len(res.Docs))
	for i, doc := range res.Docs {
		ids[i], _ = doc.ID.Int()
	}
	return ids, nil
}

func (d *docstoreSide) eqPage(ctx context.Context, g int64) ([]int64, error) {
	return d.query(ctx, docstore.Map(storeField("group", docstore.Int(g))), docstore.Query{Limit: 2 * storeDocs / storeGroups})
}

func (d *docstoreSide) count(ctx context.Context, g int64) (int, error) {
	f, err := docstore.ParseFilter(docstore.Map(storeField("group", docstore.Int(g))))
	if err != nil {
		return 0, err
	}
	n, plan, err := d.s.Count(ctx, storeColl, f)
	if err == nil && plan.Index != "group" {
		err = fmt.Errorf("count of group %d did not use the group index: plan %+v", g, plan)
	}
	return n, err
}

func (d *docstoreSide) rangePage(ctx context.Context, lo, hi int64) ([]int64, error) {
	bounds := docstore.Map(storeField("$gte", docstore.Int(lo)), storeField("$lte", docstore.Int(hi)))
	return d.query(ctx, docstore.Map(storeField("group", bounds)), docstore.Query{OrderBy: "group", Limit: storeRangeLimit})
}

func (d *docstoreSide) reopen(ctx context.Context) error {
	if err := d.s.Close(); err != nil {
		return err
	}
	s, err := docstore.Open(d.path, docstore.Options{})
	if err != nil {
		return err
	}
	d.s = s
	return nil
}

func (d *docstoreSide) files() []string { return []string{d.path} }

func (d *docstoreSide) close() error { return d.s.Close() }

// bytesWritten returns how many bytes the process has written to files
// and pipes (wchar of /proc/self/io).
func bytesWritten(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("/proc/self/io has no wchar")
	return 0
}

// fsType names the file system holding dir (fsync costs differ widely).
func fsType(dir string) string {
	out, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "file system unknown"
	}
	best, fs := "", "unknown"
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.HasPrefix(dir, f[1]) && len(f[1]) > len(best) {
			best, fs = f[1], f[2]
		}
	}
	return fmt.Sprintf("files on %s (%s)", best, fs)
}

// fileSizes lists files with their sizes in MB (absent files are left out).
func fileSizes(paths []string) string {
	var out []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			out = append(out, filepath.Base(p)+" "+strconv.FormatFloat(float64(fi.Size())/1e6, 'f', 1, 64)+" MB")
		}
	}
	return strings.Join(out, ", ")
}
