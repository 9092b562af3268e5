package docstore

import (
	"os"
	"slices"
	"testing"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// The engine's tests that run on every backend (backends, sharedBackends)
// run on PostgreSQL too, each on a store of its own in the test binary's
// shared server (internal/pgtest: skipped when PostgreSQL is not
// installed, unless MCPKIT_REQUIRE_POSTGRES is set, as make test does).

func TestMain(m *testing.M) { os.Exit(pgtest.M(m).Run()) }

func init() {
	pgShared = func(t *testing.T) (a, b *Store) {
		url := pgtest.Shared(t).StoreURL()
		return openShared(t, openPostgres(t, url)), openShared(t, openPostgres(t, url))
	}
}

// openPostgres opens the kv store at url, closed when the test ends.
func openPostgres(t *testing.T, url string) kv.DB {
	t.Helper()
	db, err := kv.OpenPostgres(t.Context(), url, kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPostgresSearchRoundTrips: a hybrid search on PostgreSQL (a filter of
// several index ranges, approximate vectors, text, MMR) asks the server for
// what it reads in a few round trips, not one per candidate, range or
// posting page: the filter's ranges (kv.PrefetchRanges) come in one with
// the vector field's meta and the text index's statistics, the terms'
// postings, MMR's vectors and the hits' documents in one each. Its hits are those of the same store in memory.
func TestPostgresSearchRoundTrips(t *testing.T) {
	const n, dim = 3000, 8
	ctx := t.Context()
	words := []string{"solar", "battery", "wind", "grid", "storage", "panel", "cell", "power"}
	docs := make([]Doc, n)
	for i := range docs {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32((i*7+j*13)%97) + 1
		}
		text := ""
		for w := range 4 {
			text += words[(i*(w+3)+w)%len(words)] + " "
		}
		docs[i] = Doc{ID: Int(int64(i + 1)), Value: Map(Field{Key: "g", Value: Int(int64(i % 20))},
			Field{Key: "t", Value: Text(text)}, Field{Key: "v", Value: Vector(v)})}
	}
	even := make([]Value, 10)
	for i := range even {
		even[i] = Int(int64(2 * i))
	}
	filter, err := ParseFilter(Map(Field{Key: "g", Value: Map(Field{Key: "$in", Value: Array(even...)})}))
	if err != nil {
		t.Fatal(err)
	}
	lambda := 0.7
	q := SearchQuery{Filter: filter, Vector: &VectorQuery{Vector: []float32{3, 1, 4, 1, 5, 9, 2, 6}, Approximate: true},
		Text: &TextQuery{Query: "solar battery"}, MMR: &lambda, Limit: 10}
	hits := map[string][]string{}
	for _, backend := range []string{"memory", "postgres"} {
		s := openStore(t, backend)
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: dim}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "g", Fields: []string{"g"}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateTextIndex(ctx, "c", TextIndexDef{Name: "t", Fields: []string{"t"}}, nil); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i += 1000 {
			if _, err := s.PutMany(ctx, "c", docs[i:i+1000]); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 { // the second search of a state builds the graph's copy in memory
			if _, err := s.Search(ctx, "c", q); err != nil {
				t.Fatal(err)
			}
		}
		search := func(what string, most int64) {
			t.Helper()
			before, _ := kv.RoundTrips(s.db)
			res, err := s.Search(ctx, "c", q)
			if err != nil {
				t.Fatal(err)
			}
			if after, ok := kv.RoundTrips(s.db); ok && after-before > most {
				t.Errorf("%s: a hybrid search took %d round trips, want at most %d", what, after-before, most)
			}
			if ids := textHitIDs(res); hits[backend] == nil {
				hits[backend] = ids
			} else if !slices.Equal(ids, hits[backend]) {
				t.Errorf("%s: hits %v, before %v", what, ids, hits[backend])
			}
		}
		// Searched again at the same revision of the store, everything
		// comes from the read cache: one round trip, the meta row's.
		search("cached", 1)
		// A write (to another collection) starts another cache: the
		// filter's ranges (the View's first read) with what was
		// announced before them (kv.PrefetchWithNext, kv.KeyNWithNext):
		// the vector field's meta keys and the count of its free slots,
		// the text index's statistics and the terms' tails; then the
		// terms' postings, MMR's slots, the hits' documents.
		if _, err := s.Put(ctx, "other", Int(1), Map()); err != nil {
			t.Fatal(err)
		}
		search("after a write", 4)
	}
	if len(hits["memory"]) != 10 || !slices.Equal(hits["memory"], hits["postgres"]) {
		t.Errorf("hits: memory %v, postgres %v", hits["memory"], hits["postgres"])
	}
}

// TestPostgresIngestRoundTrips: a transaction of 1,000 documents with two
// indexes whose entries land all over them (the workload of
// BenchmarkPutMany) reads the index blocks it changes in a few round
// trips per index, walking them in order, however many of the blocks it
// touches: not a lookup per entry (which cost about a round trip per 8
// blocks, 289 per transaction at 100,000 documents). That is without the
// read cache (as when another instance wrote last); with it, a writer
// alone reads what its last transaction left from the cache, which its
// commit advanced, and knows every key it puts: the lock and the commit.
func TestPostgresIngestRoundTrips(t *testing.T) {
	for _, c := range []struct {
		name     string
		param    string
		maxTrips int64
	}{{"without the read cache", "&mcpkit_read_cache=0", 40}, {"with the read cache", "", 2}} {
		t.Run(c.name, func(t *testing.T) {
			const batches = 30
			ctx := t.Context()
			s := openStoreAt(t, pgtest.Shared(t).StoreURL()+c.param)
			for _, def := range []IndexDef{{Name: "group", Fields: []string{"group"}}, {Name: "name", Fields: []string{"name"}}} {
				if _, err := s.CreateIndex(ctx, "docs", def, nil); err != nil {
					t.Fatal(err)
				}
			}
			for i := range batches {
				before, _ := kv.RoundTrips(s.db)
				if _, err := s.PutMany(ctx, "docs", docBenchBatchOf(1+int64(i)*docBenchBatch)); err != nil {
					t.Fatal(err)
				}
				after, _ := kv.RoundTrips(s.db)
				if i == batches-1 {
					t.Logf("batch %d: %d round trips", i+1, after-before)
				}
				if after-before > c.maxTrips {
					t.Errorf("batch %d of 1,000 documents took %d round trips, want at most %d", i+1, after-before, c.maxTrips)
				}
			}
		})
	}
}
