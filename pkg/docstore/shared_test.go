package docstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// sharedBackends runs fn on two Stores that share one store, as two
// processes share a store on PostgreSQL: on one memory kv.DB here, and on
// one PostgreSQL database where the server is available (pgShared).
func sharedBackends(t *testing.T, fn func(t *testing.T, a, b *Store)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		db := kv.OpenMemory()
		t.Cleanup(func() { db.Close() })
		fn(t, openShared(t, db), openShared(t, db))
	})
	if pgShared != nil {
		t.Run("postgres", func(t *testing.T) {
			t.Parallel()
			a, b := pgShared(t)
			fn(t, a, b)
		})
	}
}

// pgShared, when set (postgres_test.go), opens two Stores on two
// connections to one fresh PostgreSQL store.
var pgShared func(t *testing.T) (a, b *Store)

// openShared opens a Store on db, checked by Verify when the test ends.
func openShared(t *testing.T, db kv.DB) *Store {
	t.Helper()
	s, err := openOn(db, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Verify(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

// TestSharedCatalog: what one Store changes in the catalog (a collection,
// an index, a schema, search structures, a drop) is used by the other from
// the moment the change returns, and the other's writes keep what it
// added.
func TestSharedCatalog(t *testing.T) {
	sharedBackends(t, func(t *testing.T, a, b *Store) {
		ctx := context.Background()
		// A collection and a document created on a are read on b.
		if _, err := a.Put(ctx, "notes", Text("n1"), j(t, `{"tag": "x", "body": "the quick brown fox"}`)); err != nil {
			t.Fatal(err)
		}
		if d, err := b.Get(ctx, "notes", Text("n1")); err != nil || js(t, d.Value) != js(t, j(t, `{"tag": "x", "body": "the quick brown fox"}`)) {
			t.Fatalf("b reads a's new document: %s %v", js(t, d.Value), err)
		}
		if !b.exists("notes") {
			t.Fatal("b does not see a's collection")
		}
		// An index created on a is used by b's queries, and kept by b's writes.
		if _, err := a.CreateIndex(ctx, "notes", IndexDef{Name: "by_tag", Fields: []string{"tag"}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(ctx, "notes", Text("n2"), j(t, `{"tag": "y", "body": "a lazy dog"}`)); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Store{a, b} {
			res, err := s.Page(ctx, "notes", Query{Filter: flt(t, `{"tag": "y"}`)})
			if err != nil || res.Plan.Index != "by_tag" || len(res.Docs) != 1 {
				t.Fatalf("query by tag: plan %+v, %d docs, %v", res.Plan, len(res.Docs), err)
			}
		}
		// A unique schema field declared on a binds b's writes.
		schema := Schema{Fields: []FieldDef{{Name: "tag", Type: "text", Unique: true}}}
		if err := a.SetSchema(ctx, "notes", schema); err != nil {
			t.Fatal(err)
		}
		_, err := b.Put(ctx, "notes", Text("n3"), j(t, `{"tag": "x"}`))
		wantCode(t, err, CodeUniqueViolation)
		if got, err := b.Schema(ctx, "notes"); err != nil || got == nil || len(got.Fields) != 1 {
			t.Fatalf("b's schema: %v %v", got, err)
		}
		if ok, err := b.DropSchema(ctx, "notes"); err != nil || !ok {
			t.Fatalf("b drops a's schema: %v %v", ok, err)
		}
		if got, err := a.Schema(ctx, "notes"); err != nil || got != nil {
			t.Fatalf("a still has a schema: %v %v", got, err)
		}
		// A text index created on a searches b's writes, and b searches it.
		if _, err := a.CreateTextIndex(ctx, "notes", TextIndexDef{Name: "body", Fields: []string{"body"}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(ctx, "notes", Text("n4"), j(t, `{"tag": "z", "body": "brown bears"}`)); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Store{a, b} {
			res, err := s.Search(ctx, "notes", SearchQuery{Text: &TextQuery{Index: "body", Query: "brown"}})
			if err != nil {
				t.Fatal(err)
			}
			if ids := textHitIDs(res); !slices.Equal(ids, []string{"n1", "n4"}) && !slices.Equal(ids, []string{"n4", "n1"}) {
				t.Fatalf("text search for brown: %v", ids)
			}
		}
		// A collection dropped on a (a load that replaces it) is gone on b.
		if _, err := a.Load(ctx, strings.NewReader(`{"type":"dump","format":1}`+"\n"+`{"type":"collection","collection":"notes"}`+"\n"), LoadReplace, 0, nil); err != nil {
			t.Fatal(err)
		}
		if n, _, err := b.Count(ctx, "notes", nil); err != nil || n != 0 {
			t.Fatalf("b counts %d documents after a's replace: %v", n, err)
		}
		// A batch on b creating collections is seen on a.
		if _, err := b.Apply(ctx, []Op{{Kind: OpStore, Collection: "fresh", ID: Text("f1"), Doc: j(t, `{"k": 1}`)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Get(ctx, "fresh", Text("f1")); err != nil {
			t.Fatalf("a reads b's batch: %v", err)
		}
		cols, err := a.Collections(ctx)
		if err != nil || len(cols) != 2 {
			t.Fatalf("a's collections: %+v %v", cols, err)
		}
	})
}

// TestSharedSearchStructures: vectors (exact and HNSW), geo cells and
// edges written on one Store are found by the other's searches at once.
func TestSharedSearchStructures(t *testing.T) {
	sharedBackends(t, func(t *testing.T, a, b *Store) {
		ctx := context.Background()
		for _, flat := range []bool{true, false} {
			coll := fmt.Sprintf("v%v", flat)
			if _, err := a.SetVector(ctx, coll, VectorDef{Field: "v", Dimension: 3, Metric: MetricCosine, Flat: flat}, nil); err != nil {
				t.Fatal(err)
			}
			for i, v := range [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}} {
				w := []*Store{a, b}[i%2]
				if _, err := w.Put(ctx, coll, Int(int64(i)), vecDoc(v, i)); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range []*Store{b, a} {
				for _, approx := range []bool{false, !flat} {
					res, err := s.Search(ctx, coll, SearchQuery{Vector: &VectorQuery{Vector: []float32{0, 0.1, 1}, Approximate: approx}, Limit: 1})
					if err != nil || len(res.Hits) != 1 || js(t, res.Hits[0].Doc.ID) != "2" {
						t.Fatalf("%s approximate=%v: %+v %v", coll, approx, res.Hits, err)
					}
				}
			}
			if _, err := a.Delete(ctx, coll, Int(2)); err != nil {
				t.Fatal(err)
			}
			res, err := b.Search(ctx, coll, SearchQuery{Vector: &VectorQuery{Vector: []float32{0, 0.1, 1}, Approximate: !flat}, Limit: 1})
			if err != nil || len(res.Hits) != 1 || js(t, res.Hits[0].Doc.ID) != "1" {
				t.Fatalf("%s after a's delete, b finds %+v %v", coll, res.Hits, err)
			}
		}
		if _, err := a.CreateGeoIndex(ctx, "places", GeoIndexDef{Name: "at", Field: "at"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(ctx, "places", Text("paris"), j(t, `{"at": {"lat": 48.8566, "lon": 2.3522}}`)); err != nil {
			t.Fatal(err)
		}
		if ids, _ := geoIDs(t, a, "places", GeoQuery{Near: &GeoNear{Center: LatLon{48.85, 2.35}, Radius: 10_000}}); !slices.Equal(ids, []string{"paris"}) {
			t.Fatalf("a's geo search: %v", ids)
		}
		if _, err := b.Link(ctx, Ref{"places", Text("paris")}, "near", Ref{"vtrue", Int(0)}, Null()); err != nil {
			t.Fatal(err)
		}
		res, err := a.Neighbors(ctx, Ref{"places", Text("paris")}, NeighborQuery{})
		if err != nil || len(res.Edges) != 1 {
			t.Fatalf("a's neighbors of b's link: %+v %v", res, err)
		}
	})
}

// TestSharedWriters: concurrent insert_auto on both Stores never gives an
// id twice, and compare_and_set has exactly one winner.
func TestSharedWriters(t *testing.T) {
	sharedBackends(t, func(t *testing.T, a, b *Store) {
		ctx := context.Background()
		const each = 50
		var mu sync.Mutex
		ids := map[string]bool{}
		var wg sync.WaitGroup
		for _, s := range []*Store{a, b, a, b} {
			wg.Go(func() {
				for range each {
					d, err := s.Insert(ctx, "auto", j(t, `{}`))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if ids[js(t, d.ID)] {
						t.Errorf("id %s given twice", js(t, d.ID))
					}
					ids[js(t, d.ID)] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(ids) != 4*each {
			t.Fatalf("%d ids for %d inserts", len(ids), 4*each)
		}
		if _, err := a.Put(ctx, "cas", Text("c"), j(t, `{"v": 0}`)); err != nil {
			t.Fatal(err)
		}
		d, err := b.Get(ctx, "cas", Text("c"))
		if err != nil {
			t.Fatal(err)
		}
		var wins, losses int
		for i, s := range []*Store{a, b, a, b, a, b} {
			wg.Go(func() {
				rev := d.Revision
				_, err := s.CompareAndSet(ctx, "cas", Text("c"), Expect{Revision: &rev}, j(t, fmt.Sprintf(`{"v": %d}`, i+1)))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					wins++
				} else if e, ok := err.(*Error); ok && e.Code == CodeRevisionMismatch {
					losses++
				} else {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if wins != 1 || losses != 5 {
			t.Fatalf("compare_and_set: %d wins, %d losses", wins, losses)
		}
	})
}

// textHitIDs lists the text ids of a search's hits.
func textHitIDs(res SearchResult) []string {
	var out []string
	for _, h := range res.Hits {
		if s, ok := h.Doc.ID.Text(); ok {
			out = append(out, s)
		} else {
			out = append(out, fmt.Sprint(h.Doc.ID))
		}
	}
	return out
}
