package docstore

import (
	"math/rand/v2"
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
// the vector field's meta and the text index's statistics, then the terms'
// postings, then the hits' documents; MMR reads its candidates' vectors
// from the graph's copy in memory. At a revision already read, the read
// cache answers all but the hits' documents, which bring the meta row
// with them: one round trip. A write on another instance is seen by the
// next search. Its hits are those of the same store in memory, given the
// same writes.
func TestPostgresSearchRoundTrips(t *testing.T) {
	const n, dim = 3000, 8
	ctx := t.Context()
	words := []string{"solar", "battery", "wind", "grid", "storage", "panel", "cell", "power"}
	docOf := func(i int, g int64) Value {
		// Every document's vector its own: among equal vectors, which the
		// approximate search returns would depend on the graph's shape,
		// and that on how the linker's batches fell.
		v := make([]float32, dim)
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		for j := range v {
			v[j] = rng.Float32()*96 + 1
		}
		text := ""
		for w := range 4 {
			text += words[(i*(w+3)+w)%len(words)] + " "
		}
		return Map(Field{Key: "g", Value: Int(g)}, Field{Key: "t", Value: Text(text)}, Field{Key: "v", Value: Vector(v)})
	}
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{ID: Int(int64(i + 1)), Value: docOf(i, int64(i%20))}
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
	query := func(vec []float32, text string) SearchQuery {
		return SearchQuery{Filter: filter, Vector: &VectorQuery{Vector: vec, Approximate: true},
			Text: &TextQuery{Query: text}, MMR: &lambda, Limit: 10}
	}
	q := query([]float32{3, 1, 4, 1, 5, 9, 2, 6}, "solar battery")
	q2 := query([]float32{9, 2, 6, 5, 3, 5, 8, 9}, "solar battery")
	q3 := query([]float32{9, 2, 6, 5, 3, 5, 8, 9}, "wind grid")
	hits := map[string][]string{}
	for _, backend := range []string{"memory", "postgres"} {
		// other is another instance on the same store (PostgreSQL).
		var s, other *Store
		if backend == "postgres" {
			url := pgtest.Shared(t).StoreURL()
			s, other = openStoreAt(t, url), openStoreAt(t, url)
		} else {
			s = openStore(t, backend)
			other = s
		}
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
		if err := s.WaitLinked(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second search of a state builds the graph's copy in memory
			if _, err := s.Search(ctx, "c", q); err != nil {
				t.Fatal(err)
			}
		}
		search := func(what string, q SearchQuery, most int64) SearchResult {
			t.Helper()
			before, _ := kv.RoundTrips(s.db)
			res, err := s.Search(ctx, "c", q)
			if err != nil {
				t.Fatal(err)
			}
			if after, ok := kv.RoundTrips(s.db); ok && after-before > most {
				t.Errorf("%s: a hybrid search took %d round trips, want at most %d", what, after-before, most)
			}
			ids := textHitIDs(res)
			if len(ids) != 10 {
				t.Errorf("%s: %d hits", what, len(ids))
			}
			if want, ok := hits[what]; backend == "memory" {
				hits[what] = ids
			} else if !ok || !slices.Equal(ids, want) {
				t.Errorf("%s: hits %v, in memory %v", what, ids, want)
			}
			return res
		}
		// Searched again at the same revision of the store, everything
		// comes from the read cache, checked at the end by the meta row's
		// read: one round trip.
		first := search("cached", q, 1)
		// Another vector at that revision: its hits' documents, with the
		// meta row (the filter, the text index's statistics and the terms'
		// postings come from the cache, MMR's vectors from the graph's
		// copy): one round trip.
		search("another vector", q2, 1)
		// Other terms: their postings (with the meta row), then the hits.
		search("other terms", q3, 2)
		// A write (to another collection) starts another cache: the
		// filter's ranges (the View's first read) with what was
		// announced before them (kv.PrefetchWithNext, kv.KeyNWithNext):
		// the vector field's meta keys and the count of its free slots,
		// the text index's statistics and the terms' tails; then the
		// terms' postings, then the hits' documents.
		if _, err := s.Put(ctx, "other", Int(1), Map()); err != nil {
			t.Fatal(err)
		}
		search("after a write", q, 3)
		// Another instance moves the first hit out of the filter (its
		// vector unchanged: the graph's copy stands). The next search
		// here, answered from the cache of the revision before, finds at
		// its end that the revision moved (the meta row's round trip) and
		// runs again in an ordinary View: its begin and the three round
		// trips above.
		top, _ := first.Hits[0].Doc.ID.Int()
		if _, err := other.Put(ctx, "c", Int(top), docOf(int(top-1), 1)); err != nil {
			t.Fatal(err)
		}
		res := search("after another instance's write", q, 5)
		if slices.Contains(textHitIDs(res), textHitIDs(first)[0]) {
			t.Errorf("after another instance's write: %v still holds %v, now filtered out", textHitIDs(res), top)
		}
		// Then, the revision assumed having failed, Views read the meta
		// row before the cache of the new revision answers them (see
		// kv's TestPostgresOptimisticSpeculation): a search answered from
		// the cache takes that round trip alone, another vector its hits'
		// documents besides.
		search("then", q, 1)
		search("then another vector", q2, 2)
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
