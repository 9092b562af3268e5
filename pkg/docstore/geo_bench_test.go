package docstore

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// benchDocs is the size of the benchmarks' data sets.
const benchDocs = 100_000

// benchStore opens a file store for a benchmark, closed at its end.
func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// putBench stores n documents doc(i) under ids 0..n-1, 10,000 a
// transaction.
func putBench(b *testing.B, s *Store, coll string, n int, doc func(i int) Value) {
	b.Helper()
	ctx := context.Background()
	for lo := 0; lo < n; lo += 10_000 {
		var docs []Doc
		for i := lo; i < min(lo+10_000, n); i++ {
			docs = append(docs, Doc{ID: Int(int64(i)), Value: doc(i)})
		}
		if _, err := s.PutMany(ctx, coll, docs); err != nil {
			b.Fatal(err)
		}
	}
}

// latencies times fn over b.Loop, reports the p50 and p99 in µs, and
// returns them with the number of calls.
func latencies(b *testing.B, fn func(i int)) (p50, p99 time.Duration, n int) {
	b.Helper()
	var ds []time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		fn(i)
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	p50, p99 = ds[len(ds)/2], ds[len(ds)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	return p50, p99, len(ds)
}

// BenchmarkGeoRadius: radius and box queries over 100,000 points spread
// over Europe (a file store), from random centres: the 10 nearest within
// 10 km and 100 km, and a 1°×1° box.
func BenchmarkGeoRadius(b *testing.B) {
	s := benchStore(b)
	rng := rand.New(rand.NewPCG(7, 7))
	point := func() LatLon { return LatLon{Lat: 35 + rng.Float64()*25, Lon: -10 + rng.Float64()*40} }
	putBench(b, s, "places", benchDocs, func(i int) Value {
		p := point()
		return Map(Field{"loc", Map(Field{"lat", Float(p.Lat)}, Field{"lon", Float(p.Lon)})}, Field{"n", Int(int64(i))})
	})
	ctx := context.Background()
	if _, err := s.CreateGeoIndex(ctx, "places", GeoIndexDef{Name: "loc", Field: "loc"}, nil); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		q    func() GeoQuery
	}{
		{"near-10km", func() GeoQuery { return GeoQuery{Near: &GeoNear{Center: point(), Radius: 10_000}, Limit: 10} }},
		{"near-100km", func() GeoQuery { return GeoQuery{Near: &GeoNear{Center: point(), Radius: 100_000}, Limit: 10} }},
		{"box-1deg", func() GeoQuery {
			p := point()
			return GeoQuery{Box: &GeoBox{South: p.Lat, West: p.Lon, North: p.Lat + 1, East: p.Lon + 1}, Limit: 10}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			hits := 0
			p50, p99, n := latencies(b, func(int) {
				res, err := s.Geo(ctx, "places", c.q())
				if err != nil {
					b.Fatal(err)
				}
				hits += len(res.Hits)
			})
			b.Logf("%s over %d points: p50 %v, p99 %v, %.1f hits a query", c.name, benchDocs, p50, p99, float64(hits)/float64(n))
		})
	}
}
