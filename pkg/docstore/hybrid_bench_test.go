package docstore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hybrid benchmark's corpus: the test module's BenchmarkStoreVector
// workload (vectors near a rank-16 subspace, a group i%100 and three words
// of twelve), so that a profile here is the one that benchmark runs.
const hybridDim = 384

var hybridWords = strings.Fields("solar wind battery grid panel turbine storage hydro carbon meter inverter charge")

// hybridStore opens the benchmark's store of n documents, built when the
// file does not hold it yet. MCPKIT_HYBRID_BENCH_DIR keeps the file
// between runs (building the graph of 100,000 vectors takes about a
// minute); without it the store is built in a temporary directory.
func hybridStore(b *testing.B, n int) *Store {
	b.Helper()
	dir := os.Getenv("MCPKIT_HYBRID_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, "hybrid-"+strconv.Itoa(n)+".db")
	_, statErr := os.Stat(path)
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if statErr == nil {
		if c, _, err := s.Count(ctx, "v", nil); err == nil && c == n {
			return s
		}
		b.Fatalf("%s does not hold the benchmark's %d documents: remove it", path, n)
	}
	if _, err := s.SetVector(ctx, "v", VectorDef{Field: "v", Dimension: hybridDim}, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := s.CreateIndex(ctx, "v", IndexDef{Name: "g", Fields: []string{"g"}}, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := s.CreateTextIndex(ctx, "v", TextIndexDef{Name: "t", Fields: []string{"t"}}, nil); err != nil {
		b.Fatal(err)
	}
	vecs := embeddingVecs(1, n, hybridDim)
	start := time.Now()
	for lo := 0; lo < n; lo += 1000 {
		docs := make([]Doc, 0, 1000)
		for i := lo; i < min(lo+1000, n); i++ {
			w := hybridWords
			docs = append(docs, Doc{ID: Int(int64(i)), Value: Map(
				Field{"v", Vector(vecs[i])},
				Field{"g", Int(int64(i % 100))},
				Field{"t", Text(w[i%len(w)] + " " + w[(i/7)%len(w)] + " " + w[(i/49)%len(w)])},
			)})
		}
		if _, err := s.PutMany(ctx, "v", docs); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.WaitLinked(ctx, "v"); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d documents in %v", n, time.Since(start))
	return s
}

// hybridQueryOf is the benchmark's hybrid search of q: a filter passing
// half the documents (through the index on g), approximate (or exact)
// vectors, BM25 over two terms, RRF and MMR 0.7, ten hits.
func hybridQueryOf(tb testing.TB, q []float32, approx bool) SearchQuery {
	half := make([]Value, 50)
	for i := range half {
		half[i] = Int(int64(2 * i))
	}
	f, err := ParseFilter(Map(Field{"g", Map(Field{"$in", Array(half...)})}))
	if err != nil {
		tb.Fatal(err)
	}
	lambda := 0.7
	return SearchQuery{Filter: f, Vector: &VectorQuery{Vector: q, Approximate: approx},
		Text: &TextQuery{Query: "solar battery"}, MMR: &lambda, Limit: 10}
}

// BenchmarkHybridSearch runs the hybrid search of BenchmarkStoreVector
// (test module) on MCPKIT_HYBRID_DOCS documents (default 20,000), one
// query an iteration; the vector source is approximate, and exact in the
// /exact sub-benchmark.
func BenchmarkHybridSearch(b *testing.B) {
	s := hybridStore(b, hybridDocs(b))
	queries := embeddingVecs(2, 200, hybridDim)
	for _, mode := range []struct {
		name   string
		approx bool
	}{{"approximate", true}, {"exact", false}} {
		b.Run(mode.name, func(b *testing.B) {
			for i := range 3 { // the graph's copy in memory is built by the second search
				if _, err := s.Search(ctx, "v", hybridQueryOf(b, queries[i], mode.approx)); err != nil {
					b.Fatal(err)
				}
			}
			var sum SearchProfile
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q := hybridQueryOf(b, queries[i%len(queries)], mode.approx)
				q.Profile = true
				res, err := s.Search(ctx, "v", q)
				if err != nil || len(res.Hits) != 10 {
					b.Fatalf("%d hits, %v", len(res.Hits), err)
				}
				p := res.Profile
				sum.Filter += p.Filter
				sum.Vector += p.Vector
				sum.Text += p.Text
				sum.Sources += p.Sources
				sum.Fusion += p.Fusion
				sum.MMR += p.MMR
				sum.Hits += p.Hits
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			for _, st := range []struct {
				name string
				d    time.Duration
			}{{"filter", sum.Filter}, {"vector", sum.Vector}, {"text", sum.Text}, {"sources", sum.Sources}, {"fusion", sum.Fusion}, {"mmr", sum.MMR}, {"hits", sum.Hits}} {
				b.ReportMetric(float64(st.d.Microseconds())/float64(b.N), st.name+"-µs/op")
			}
		})
	}
}

// hybridDocs is the hybrid benchmarks' corpus size: MCPKIT_HYBRID_DOCS,
// default 20,000.
func hybridDocs(b *testing.B) int {
	n := 20_000
	if v := os.Getenv("MCPKIT_HYBRID_DOCS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	return n
}

// cpuTime returns the CPU time the process has used (user and system):
// on a machine shared with other work, a query's CPU time varies less
// than its wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
