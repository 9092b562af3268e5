package docstore

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// BenchmarkHybridSearchPostgres runs BenchmarkHybridSearch's query on the
// same store on the file and copied to PostgreSQL (kv.Copy), in alternating
// rounds of 10 queries, and reports each side's p50, the ratio, the stage
// medians and the round trips a search on PostgreSQL: the loop to measure
// the hybrid target of BenchmarkStorePostgresHybrid (test module) without
// rebuilding its graph.
func BenchmarkHybridSearchPostgres(b *testing.B) {
	n := hybridDocs(b)
	file := hybridStore(b, n)
	path := file.db.Path()
	file.Close() // kv.Copy reads the file whole, as the test module's benchmark does
	srv := pgtest.Start(b, pgtest.Options{Config: []string{"shared_buffers=512MB"}})
	url := srv.StoreURL()
	if err := copyToPostgres(url, path); err != nil {
		b.Fatal(err)
	}
	file, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	pg, err := Open(url, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	sides := []*Store{file, pg}
	queries := embeddingVecs(2, 200, hybridDim)
	for _, s := range sides {
		for _, q := range queries[:10] {
			if _, err := s.Search(ctx, "v", hybridQueryOf(b, q, true)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	var times [2][]time.Duration
	var stages [2][7][]time.Duration
	var trips int64
	for b.Loop() {
		for lo := 0; lo < len(queries); lo += 10 {
			for j := range 2 {
				side := (j + lo/10) % 2
				for _, qv := range queries[lo : lo+10] {
					q := hybridQueryOf(b, qv, true)
					q.Profile = true
					t0, _ := kv.RoundTrips(sides[side].db)
					start := time.Now()
					res, err := sides[side].Search(ctx, "v", q)
					times[side] = append(times[side], time.Since(start))
					if err != nil || len(res.Hits) != 10 {
						b.Fatalf("%d hits, %v", len(res.Hits), err)
					}
					if t1, ok := kv.RoundTrips(sides[side].db); ok {
						trips = t1 - t0
					}
					p := res.Profile
					for i, d := range []time.Duration{p.Filter, p.Vector, p.Text, p.Sources, p.Fusion, p.MMR, p.Hits} {
						stages[side][i] = append(stages[side][i], d)
					}
				}
			}
		}
	}
	b.StopTimer()
	for _, qv := range queries[:20] {
		a, _ := file.Search(ctx, "v", hybridQueryOf(b, qv, true))
		c, _ := pg.Search(ctx, "v", hybridQueryOf(b, qv, true))
		if !slices.Equal(textHitIDs(a), textHitIDs(c)) {
			b.Fatalf("file %v, PostgreSQL %v", textHitIDs(a), textHitIDs(c))
		}
	}
	med := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	f, p := med(times[0]), med(times[1])
	b.ReportMetric(float64(f.Microseconds()), "file-p50-µs")
	b.ReportMetric(float64(p.Microseconds()), "pg-p50-µs")
	b.ReportMetric(float64(p)/float64(f), "ratio")
	b.ReportMetric(float64(trips), "pg-trips")
	for side, name := range []string{"file", "pg"} {
		var line []any
		for i := range stages[side] {
			line = append(line, med(stages[side][i]).Microseconds())
		}
		b.Logf("%s stages µs (filter vector text sources fusion mmr hits): %v", name, line)
	}
}

// copyToPostgres copies the store file at path to the PostgreSQL store at
// url.
func copyToPostgres(url, path string) error {
	src, err := kv.Open(path, kv.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := kv.OpenPostgres(ctx, url, kv.Options{})
	if err != nil {
		return err
	}
	defer dst.Close()
	_, err = kv.Copy(dst, src)
	return err
}
