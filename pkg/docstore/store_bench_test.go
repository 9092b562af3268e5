package docstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// The engine side of test/BenchmarkStoreSQLite's workload, to profile
// without SQLite in the process: documents of ten fields (a nested map
// among them) under int ids, with indexes on "group" (an int of
// docBenchGroups values) and "name" (a text whose order is not id order).
const (
	docBenchGroups = 1_000
	docBenchBatch  = 1_000
)

// docBenchDoc returns document id of the workload.
func docBenchDoc(id int64) Value {
	r := rand.New(rand.NewPCG(uint64(id), 1))
	return Map(
		Field{"group", Int(id * 7919 % docBenchGroups)},
		Field{"name", Text(fmt.Sprintf("user-%06d", id*48271%benchDocs))},
		Field{"email", Text(fmt.Sprintf("user%d@example.com", id))},
		Field{"age", Int(18 + r.Int64N(80))},
		Field{"score", Float(r.Float64() * 100)},
		Field{"balance", Float(r.NormFloat64() * 1e4)},
		Field{"city", Text("Lisbon")},
		Field{"bio", Text("amber basil cedar delta ember fjord grove")},
		Field{"visits", Int(r.Int64N(1_000_000))},
		Field{"address", Map(
			Field{"street", Text(fmt.Sprintf("%d harbor street", 1+r.IntN(400)))},
			Field{"zip", Int(10_000 + r.Int64N(90_000))},
			Field{"geo", Map(Field{"lat", Float(r.Float64()*180 - 90)}, Field{"lon", Float(r.Float64()*360 - 180)})},
		)},
	)
}

// docBenchStore opens a file store with the workload's two indexes.
func docBenchStore(b *testing.B, opts Options) *Store {
	b.Helper()
	s, err := Open(filepath.Join(b.TempDir(), "docs.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, def := range []IndexDef{{Name: "group", Fields: []string{"group"}}, {Name: "name", Fields: []string{"name"}}} {
		if _, err := s.CreateIndex(context.Background(), "docs", def, nil); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// docBenchBatchOf returns the documents first to first+docBenchBatch-1.
func docBenchBatchOf(first int64) []Doc {
	docs := make([]Doc, docBenchBatch)
	for i := range docs {
		id := first + int64(i)
		docs[i] = Doc{ID: Int(id), Value: docBenchDoc(id)}
	}
	return docs
}

// BenchmarkPutMany ingests the workload in durable transactions of 1,000
// documents, one a b.Loop iteration, into a store that grows (-benchtime
// 100x ingests the 100,000 documents of the SQLite comparison).
func BenchmarkPutMany(b *testing.B) {
	s := docBenchStore(b, Options{})
	ctx := context.Background()
	next := int64(1)
	for b.Loop() {
		b.StopTimer()
		docs := docBenchBatchOf(next)
		next += docBenchBatch
		b.StartTimer()
		if _, err := s.PutMany(ctx, "docs", docs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(next-1)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkQueries runs the reads of the SQLite comparison over the
// workload's 100,000 documents: get by id, an equality page of a group
// (100 documents) and a range page of ten groups ordered by group (50).
func BenchmarkQueries(b *testing.B) {
	s := docBenchStore(b, Options{NoSync: true})
	ctx := context.Background()
	for first := int64(1); first <= benchDocs; first += docBenchBatch {
		if _, err := s.PutMany(ctx, "docs", docBenchBatchOf(first)); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(42, 7))
	page := func(b *testing.B, filter Value, q Query, want int) {
		f, err := ParseFilter(filter)
		if err != nil {
			b.Fatal(err)
		}
		q.Filter = f
		res, err := s.Page(ctx, "docs", q)
		if err != nil || len(res.Docs) != want || res.Plan.Index != "group" {
			b.Fatalf("page: %d docs, plan %+v, %v; want %d from the group index", len(res.Docs), res.Plan, err, want)
		}
	}
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Get(ctx, "docs", Int(1+rng.Int64N(benchDocs))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("eq-page", func(b *testing.B) {
		for b.Loop() {
			g := rng.Int64N(docBenchGroups)
			page(b, Map(Field{"group", Int(g)}), Query{Limit: 200}, benchDocs/docBenchGroups)
		}
	})
	b.Run("range-page", func(b *testing.B) {
		for b.Loop() {
			g := rng.Int64N(docBenchGroups - 10)
			page(b, Map(Field{"group", Map(Field{"$gte", Int(g)}, Field{"$lte", Int(g + 9)})}), Query{OrderBy: "group", Limit: 50}, 50)
		}
	})
}
