package docstore

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"weak"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// vecDoc is a document {"v": vec, "g": group}.
func vecDoc(vec []float32, group int) Value {
	return Map(Field{"v", Vector(vec)}, Field{"g", Int(int64(group))})
}

// randVecs returns n random vectors of dim components in [-1, 1).
func randVecs(rng *rand.Rand, n, dim int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, dim)
		for j := range out[i] {
			out[i][j] = rng.Float32()*2 - 1
		}
	}
	return out
}

// putVecs stores vecs as documents 0..n-1 of coll (group i%10), in
// batches, and waits until the linker has linked them: tests of the graph
// see it whole (TestLinkerQueue searches vectors still queued).
func putVecs(t testing.TB, s *Store, coll string, vecs [][]float32) {
	t.Helper()
	for lo := 0; lo < len(vecs); lo += 500 {
		var docs []Doc
		for i := lo; i < min(lo+500, len(vecs)); i++ {
			docs = append(docs, Doc{ID: Int(int64(i)), Value: vecDoc(vecs[i], i%10)})
		}
		if _, err := s.PutMany(ctx, coll, docs); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WaitLinked(ctx, coll); err != nil {
		t.Fatal(err)
	}
}

// bruteForce returns the ids of the k vectors of vecs closest to q by
// metric (ties by id), computed in float64, among those keep allows.
func bruteForce(q []float32, vecs [][]float32, k int, metric string, keep func(i int) bool) []int64 {
	type sc struct {
		id int64
		s  float64
	}
	var all []sc
	for i, v := range vecs {
		if keep != nil && !keep(i) {
			continue
		}
		var d, qq, vv, l2 float64
		for j := range q {
			d += float64(q[j]) * float64(v[j])
			qq += float64(q[j]) * float64(q[j])
			vv += float64(v[j]) * float64(v[j])
			l2 += (float64(q[j]) - float64(v[j])) * (float64(q[j]) - float64(v[j]))
		}
		switch metric {
		case MetricCosine:
			d /= math.Sqrt(qq * vv)
		case MetricL2:
			d = -l2
		}
		all = append(all, sc{int64(i), d})
	}
	slices.SortStableFunc(all, func(a, b sc) int {
		if a.s > b.s {
			return -1
		}
		if a.s < b.s {
			return 1
		}
		return 0
	})
	var ids []int64
	for _, x := range all[:min(k, len(all))] {
		ids = append(ids, x.id)
	}
	return ids
}

// hitIDs returns the int ids of a search's hits.
func hitIDs(res SearchResult) []int64 {
	var ids []int64
	for _, h := range res.Hits {
		i, _ := h.Doc.ID.Int()
		ids = append(ids, i)
	}
	return ids
}

func vsearch(t testing.TB, s *Store, coll string, q SearchQuery) SearchResult {
	t.Helper()
	res, err := s.Search(ctx, coll, q)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestVectorField: SetVector validates its definition, indexes existing
// documents, refuses documents whose field is not a vector of the
// dimension (schema_violation naming the field), reports an identical
// definition as not created and refuses another; writes, updates and
// deletes keep the vectors (Verify at cleanup checks them).
func TestVectorField(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.Put(ctx, "c", Int(1), vecDoc([]float32{1, 0, 0}, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "c", Int(2), j(t, `{"g": 2}`)); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			def   VectorDef
			field string
		}{
			{VectorDef{Field: "", Dimension: 3}, "field"},
			{VectorDef{Field: "a..b", Dimension: 3}, "field"},
			{VectorDef{Field: "v", Dimension: 0}, "dimension"},
			{VectorDef{Field: "v", Dimension: MaxVectorDimension + 1}, "dimension"},
			{VectorDef{Field: "v", Dimension: 3, Metric: "manhattan"}, "metric"},
		} {
			_, err := s.SetVector(ctx, "c", tc.def, nil)
			if e := wantCode(t, err, CodeInvalid); e.Field != tc.field {
				t.Errorf("%+v: field %q, want %q", tc.def, e.Field, tc.field)
			}
		}
		e := wantCode(t, vecErrOf(s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 4}, nil)), CodeSchemaViolation)
		if e.Field != "v" {
			t.Errorf("dimension mismatch names %q", e.Field)
		}
		created, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 3}, nil)
		if err != nil || !created {
			t.Fatalf("SetVector = %v, %v", created, err)
		}
		if created, err = s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 3, Metric: MetricCosine}, nil); err != nil || created {
			t.Fatalf("same SetVector = %v, %v", created, err)
		}
		wantCode(t, vecErrOf(s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 3, Metric: MetricL2}, nil)), CodeIndexExists)
		for doc, msg := range map[string]string{
			`{"v": {"$vector": [1, 2]}}`:    "2 dimensions",
			`{"v": [1, 2, 3]}`:              "not a vector",
			`{"v": "x"}`:                    "not a vector",
			`{"v": {"$vector": [0, 0, 0]}}`: "zero",
		} {
			_, err := s.Put(ctx, "c", Int(3), j(t, doc))
			if e := wantCode(t, err, CodeSchemaViolation); e.Field != "v" || !bytes.Contains([]byte(e.Message), []byte(msg)) {
				t.Errorf("%s: %v (field %q), want %q", doc, err, e.Field, msg)
			}
		}
		if _, err := s.Get(ctx, "c", Int(3)); ErrorCode(err) != CodeNotFound {
			t.Fatalf("a refused document was written: %v", err)
		}
		// Insert, update, patch away, delete.
		for i, v := range [][]float32{{0, 1, 0}, {0, 0, 1}, {1, 1, 0}} {
			if _, err := s.Put(ctx, "c", Int(int64(10+i)), vecDoc(v, i)); err != nil {
				t.Fatal(err)
			}
		}
		q := SearchQuery{Vector: &VectorQuery{Vector: []float32{0, 0, 5}}, Limit: 2}
		if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got, []int64{11, 1}) && !slices.Equal(got, []int64{11, 10}) {
			t.Fatalf("search = %v", got)
		}
		if _, err := s.Put(ctx, "c", Int(11), vecDoc([]float32{-1, 0, 0}, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Patch(ctx, "c", Int(12), j(t, `{"v": null}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, "c", Int(1)); err != nil {
			t.Fatal(err)
		}
		q = SearchQuery{Vector: &VectorQuery{Vector: []float32{1, 0, 0}}, Limit: 10}
		if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got, []int64{10, 11}) {
			t.Fatalf("after update, patch and delete: %v", got)
		}
		q.Vector.Approximate = true
		res := vsearch(t, s, "c", q)
		if got := hitIDs(res); !slices.Equal(got, []int64{10, 11}) || res.VectorMode != VectorApproximate {
			t.Fatalf("approximate after update, patch and delete: %v %s", got, res.VectorMode)
		}
		// A new document reuses a freed slot.
		if _, err := s.Put(ctx, "c", Int(13), vecDoc([]float32{1, 0.1, 0}, 1)); err != nil {
			t.Fatal(err)
		}
		if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got[:1], []int64{13}) {
			t.Fatalf("after reuse: %v", got)
		}
	})
}

func vecErrOf[T any](_ T, err error) error { return err }

// TestVectorExact: the exact scan returns what a float64 brute force
// does, for each metric, with and without a filter (through an index and
// through a scan), over several blocks.
func TestVectorExact(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		rng := rand.New(rand.NewPCG(1, 2))
		vecs := randVecs(rng, 600, 20) // vectorsPerBlock(20) = 256: three blocks
		for _, m := range []string{MetricCosine, MetricDot, MetricL2} {
			putVecs(t, s, m, vecs)
			if _, err := s.SetVector(ctx, m, VectorDef{Field: "v", Dimension: 20, Metric: m}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateIndex(ctx, MetricL2, IndexDef{Name: "g", Fields: []string{"g"}}, nil); err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{MetricCosine, MetricDot, MetricL2} {
			for i := range 5 {
				q := randVecs(rng, 1, 20)[0]
				res := vsearch(t, s, m, SearchQuery{Vector: &VectorQuery{Vector: q}, Limit: 10})
				if want := bruteForce(q, vecs, 10, m, nil); !slices.Equal(hitIDs(res), want) || res.VectorMode != VectorExact {
					t.Fatalf("%s query %d: %v, want %v", m, i, hitIDs(res), want)
				}
				// The hit's vector score is the metric's.
				want := bruteForce(q, vecs, 1, m, nil)[0]
				if h := res.Hits[0]; h.Vector == nil || h.Vector.Rank != 1 || h.Score != 1.0/61 {
					t.Fatalf("hit %+v of %d", h, want)
				}
				// Filters: a third of the documents (scan), and a tenth
				// (an index on l2, a scan elsewhere).
				for _, f := range []string{`{"g": {"$in": [1, 4, 7]}}`, `{"g": 3}`} {
					res := vsearch(t, s, m, SearchQuery{Filter: flt(t, f), Vector: &VectorQuery{Vector: q}, Limit: 5})
					keep := func(i int) bool { return slices.Contains([]int{1, 4, 7}, i%10) }
					if f == `{"g": 3}` {
						keep = func(i int) bool { return i%10 == 3 }
					}
					if want := bruteForce(q, vecs, 5, m, keep); !slices.Equal(hitIDs(res), want) {
						t.Fatalf("%s %s: %v, want %v", m, f, hitIDs(res), want)
					}
					if m == MetricL2 && f == `{"g": 3}` && res.Plan.Index != "g" {
						t.Fatalf("plan %+v", res.Plan)
					}
				}
			}
		}
	})
}

// TestHNSWRecall: the approximate index at default settings finds at
// least 95% of the exact top 10 on random vectors, before and after
// deleting a fifth of the documents and moving a tenth, and with a
// filter; Verify (at cleanup) checks the graph.
func TestHNSWRecall(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		const n, dim = 1200, 16
		rng := rand.New(rand.NewPCG(3, 4))
		vecs, qs := l2Collection(t, s, rng, n, dim, 30)
		recall := func(filter *Filter, keep func(int) bool) float64 {
			return approxRecall(t, s, qs, vecs, 10, filter, keep)
		}
		alive := func(i int) bool { return vecs[i] != nil }
		if r := recall(nil, alive); r < 0.95 {
			t.Fatalf("recall@10 %.3f < 0.95", r)
		}
		for i := 0; i < n; i += 5 {
			if _, err := s.Delete(ctx, "c", Int(int64(i))); err != nil {
				t.Fatal(err)
			}
			vecs[i] = nil
		}
		for i := 1; i < n; i += 10 {
			vecs[i] = randVecs(rng, 1, dim)[0]
			if _, err := s.Put(ctx, "c", Int(int64(i)), vecDoc(vecs[i], i%10)); err != nil {
				t.Fatal(err)
			}
		}
		if r := recall(nil, alive); r < 0.95 {
			t.Fatalf("recall@10 after deletes and updates %.3f < 0.95", r)
		}
		if r := recall(flt(t, `{"g": {"$in": [1, 2, 3, 6]}}`), func(i int) bool { return alive(i) && slices.Contains([]int{1, 2, 3, 6}, i%10) }); r < 0.95 {
			t.Fatalf("filtered recall@10 %.3f < 0.95", r)
		}
		// New documents take the freed slots back.
		for i := 0; i < n; i += 5 {
			vecs[i] = randVecs(rng, 1, dim)[0]
		}
		putVecs(t, s, "c", vecs)
		if r := recall(nil, nil); r < 0.95 {
			t.Fatalf("recall@10 after reuse %.3f < 0.95", r)
		}
	})
}

// TestHNSWRecallOutlierDimension: vectors with a dimension far larger
// than the others in every vector and varying as much as they do (as
// some dimensions of real embedding models are), linked in batches that
// measure through the walk copy's bytes, make a graph as good as linking
// on the float32s does (one core, no walk copy): recall@10 at a narrow ef
// of 10, where the graph's quality shows, at most 0.05 below it (the
// linker's batches fall differently from run to run: 0.01 below at
// worst in 8 runs; without the copy's offset term, 0.19 below), and at
// least 0.95 at the default ef.
func TestHNSWRecallOutlierDimension(t *testing.T) {
	const n, dim = 3000, 32
	rng := rand.New(rand.NewPCG(5, 6))
	vecs, qs := randVecs(rng, n, dim), randVecs(rng, 200, dim)
	for _, v := range append(slices.Clone(vecs), qs...) {
		v[5] += 40
	}
	recall := func(s *Store, ef int) float64 {
		found := 0
		for _, q := range qs {
			want := bruteForce(q, vecs, 10, MetricL2, nil)
			res := vsearch(t, s, "c", SearchQuery{Vector: &VectorQuery{Vector: q, Approximate: true, K: 10, Ef: ef}, Limit: 10})
			for _, id := range hitIDs(res) {
				if slices.Contains(want, id) {
					found++
				}
			}
		}
		return float64(found) / float64(10*len(qs))
	}
	build := func(procs int) *Store {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		s := openStore(t, "memory")
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: dim, Metric: MetricL2}, nil); err != nil {
			t.Fatal(err)
		}
		putVecs(t, s, "c", vecs)
		return s
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the linker links on one core, without a walk copy, when GOMAXPROCS is 1")
	}
	exact, walked := build(1), build(runtime.GOMAXPROCS(0))
	want, got := recall(exact, 10), recall(walked, 10)
	t.Logf("recall@10 at ef 10: %.3f linked through the walk copy, %.3f on the float32s", got, want)
	if got < want-0.05 {
		t.Errorf("recall@10 at ef 10 %.3f linked through the walk copy, %.3f on the float32s", got, want)
	}
	if r := recall(walked, 0); r < 0.95 {
		t.Errorf("recall@10 %.3f < 0.95", r)
	}
}

// TestHNSWFilteredRecall: a filtered approximate search at the default
// ef finds at least 95% of the exact top 10 (and of the top 40, a hybrid
// search's window) among the documents that pass, for filters passing
// half, a fifth and a tenth of 5,000 random vectors of 32 dimensions (a
// harder set than TestHNSWRecall's): the walk keeps ef documents that
// pass and expands as far as it must to meet them, without widening ef.
func TestHNSWFilteredRecall(t *testing.T) {
	t.Parallel()
	s := openStore(t, "memory")
	vecs, qs := l2Collection(t, s, rand.New(rand.NewPCG(5, 6)), 5000, 32, 40)
	for _, groups := range [][]int{{0, 1, 2, 3, 4}, {3, 7}, {6}} {
		in := make([]Value, len(groups))
		for i, g := range groups {
			in[i] = Int(int64(g))
		}
		f, err := ParseFilter(Map(Field{"g", Map(Field{"$in", Array(in...)})}))
		if err != nil {
			t.Fatal(err)
		}
		keep := func(i int) bool { return slices.Contains(groups, i%10) }
		for _, k := range []int{10, 40} {
			r := approxRecall(t, s, qs, vecs, k, f, keep)
			t.Logf("groups %v: recall@%d %.3f", groups, k, r)
			if r < 0.95 {
				t.Errorf("groups %v: filtered recall@%d %.3f < 0.95", groups, k, r)
			}
		}
	}
}

// l2Collection makes collection "c" of s an HNSW field (l2) holding n
// random vectors of dim (vecDoc's documents, group i%10), and returns
// them with queries random query vectors.
func l2Collection(t *testing.T, s *Store, rng *rand.Rand, n, dim, queries int) (vecs, qs [][]float32) {
	t.Helper()
	vecs = randVecs(rng, n, dim)
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: dim, Metric: MetricL2}, nil); err != nil {
		t.Fatal(err)
	}
	putVecs(t, s, "c", vecs)
	return vecs, randVecs(rng, queries, dim)
}

// approxRecall returns the share of the exact top k (by brute force over
// vecs, among those keep allows; nil: all) that approximate searches of
// collection "c" for qs find, with filter; every search must run
// approximately, and every hit be one keep allows.
func approxRecall(t *testing.T, s *Store, qs, vecs [][]float32, k int, filter *Filter, keep func(int) bool) float64 {
	t.Helper()
	found := 0
	for _, q := range qs {
		want := bruteForce(q, vecs, k, MetricL2, keep)
		res := vsearch(t, s, "c", SearchQuery{Filter: filter, Vector: &VectorQuery{Vector: q, Approximate: true, K: k}, Limit: k})
		if res.VectorMode != VectorApproximate {
			t.Fatalf("mode %s", res.VectorMode)
		}
		for _, id := range hitIDs(res) {
			if keep != nil && !keep(int(id)) {
				t.Fatalf("hit %d is not one the search may return", id)
			}
			if slices.Contains(want, id) {
				found++
			}
		}
	}
	return float64(found) / float64(k*len(qs))
}

// TestSearchRRF: fused scores are Σ 1/(k + rank), ranks from 1, against a
// worked example; ties go to id order.
func TestSearchRRF(t *testing.T) {
	key := func(id int64) []byte { return AppendKey(nil, Int(id)) }
	r := func(ids ...int64) []Ranked {
		var out []Ranked
		for _, id := range ids {
			out = append(out, Ranked{IDKey: key(id), Score: float64(-id)})
		}
		return out
	}
	// vector ranks A=1, B=2, C=3; text ranks C=1, A=2, D=3. With k = 1:
	// A = 1/2 + 1/3 = 5/6, C = 1/4 + 1/2 = 3/4, B = 1/3, D = 1/4.
	const A, B, C, D = 1, 2, 3, 4
	got := fuseRRF(1, r(A, B, C), r(C, A, D))
	want := []struct {
		id           int64
		score        float64
		vrank, trank int
	}{{A, 5.0 / 6, 1, 2}, {C, 3.0 / 4, 3, 1}, {B, 1.0 / 3, 2, 0}, {D, 1.0 / 4, 0, 3}}
	if len(got) != len(want) {
		t.Fatalf("%d fused", len(got))
	}
	rank := func(sr *SourceRank) int {
		if sr == nil {
			return 0
		}
		return sr.Rank
	}
	for i, w := range want {
		g := got[i]
		if !bytes.Equal(g.key, key(w.id)) || math.Abs(g.score-w.score) > 1e-12 || rank(g.vector) != w.vrank || rank(g.text) != w.trank {
			t.Errorf("fused %d = %x %v %d %d, want %+v", i, g.key, g.score, rank(g.vector), rank(g.text), w)
		}
	}
	// k = 60 (the default): A = 1/61 + 1/62, C = 1/63 + 1/61.
	got = fuseRRF(DefaultRRFK, r(A, B, C), r(C, A, D))
	if math.Abs(got[0].score-(1.0/61+1.0/62)) > 1e-12 || math.Abs(got[1].score-(1.0/63+1.0/61)) > 1e-12 {
		t.Fatalf("k=60: %v %v", got[0].score, got[1].score)
	}
	// Equal scores: id order.
	got = fuseRRF(60, r(2), r(1))
	if !bytes.Equal(got[0].key, key(1)) || got[0].score != got[1].score {
		t.Fatalf("tie order: %x %x", got[0].key, got[1].key)
	}
}

// TestSearchMMR: MMR re-picks the fused candidates by λ·cos(d, q) − (1−λ)·
// max cos(d, picked), against a worked example, on both backends and
// both vector modes.
func TestSearchMMR(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		// q = (1, 0). a = (0.8, 0.6), b = (0.6, 0.8), c = (0.28, -0.96),
		// d = (0, 1): relevance a .8, b .6, c .28, d 0; cos(a,b) = .96,
		// cos(a,c) = -.352, cos(a,d) = .6, cos(b,c) = -.6, cos(b,d) = .8,
		// cos(c,d) = -.96. With λ = 0.5:
		//   pick 1: a .4, b .3, c .14, d 0 → a (.4)
		//   pick 2: b .3 - .5·.96 = -.18; c .14 + .5·.352 = .316;
		//           d 0 - .5·.6 = -.3 → c (.316)
		//   pick 3: b .3 - .5·max(.96, -.6) = -.18; d -.5·max(.6, -.96) = -.3 → b (-.18)
		// Relevance order would be a, b, c.
		for id, v := range map[int64][]float32{1: {0.8, 0.6}, 2: {0.6, 0.8}, 3: {0.28, -0.96}, 4: {0, 1}} {
			if _, err := s.Put(ctx, "c", Int(id), vecDoc(v, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 2}, nil); err != nil {
			t.Fatal(err)
		}
		for _, approx := range []bool{false, true} {
			lambda := 0.5
			res := vsearch(t, s, "c", SearchQuery{Vector: &VectorQuery{Vector: []float32{3, 0}, Approximate: approx}, MMR: &lambda, Limit: 3})
			if got := hitIDs(res); !slices.Equal(got, []int64{1, 3, 2}) {
				t.Fatalf("approximate %v: MMR order %v, want [1 3 2]", approx, got)
			}
			for i, want := range []float64{0.4, 0.316, -0.18} {
				if h := res.Hits[i]; h.MMR == nil || math.Abs(*h.MMR-want) > 1e-6 {
					t.Errorf("hit %d MMR %v, want %v", i, h.MMR, want)
				}
			}
			// λ = 1 is relevance order; the fused scores stay RRF's.
			lambda = 1
			res = vsearch(t, s, "c", SearchQuery{Vector: &VectorQuery{Vector: []float32{3, 0}, Approximate: approx}, MMR: &lambda, Limit: 3})
			if got := hitIDs(res); !slices.Equal(got, []int64{1, 2, 3}) || res.Hits[1].Score != 1.0/62 {
				t.Fatalf("λ=1: %v, score %v", got, res.Hits[1].Score)
			}
		}
	})
}

// TestSearchErrors: ranking arguments are validated exactly, each error
// naming its argument.
func TestSearchErrors(t *testing.T) {
	s := openStore(t, "memory")
	if _, err := s.Put(ctx, "c", Int(1), vecDoc([]float32{1, 0}, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "plain", Int(1), vecDoc([]float32{1, 0}, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 2}, nil); err != nil {
		t.Fatal(err)
	}
	nan, neg, big := math.NaN(), -0.1, 1.5
	vq := func(v ...float32) *VectorQuery { return &VectorQuery{Vector: v} }
	for _, tc := range []struct {
		coll  string
		q     SearchQuery
		field string
	}{
		{"c", SearchQuery{}, "vector"},
		{"c", SearchQuery{Vector: vq(1)}, "vector.vector"},
		{"c", SearchQuery{Vector: vq(1, 2, 3)}, "vector.vector"},
		{"c", SearchQuery{Vector: vq(float32(math.NaN()), 1)}, "vector.vector"},
		{"c", SearchQuery{Vector: vq(float32(math.Inf(1)), 1)}, "vector.vector"},
		{"c", SearchQuery{Vector: vq(0, 0)}, "vector.vector"},
		{"c", SearchQuery{Vector: &VectorQuery{Vector: []float32{1, 0}, K: -1}}, "vector.k"},
		{"c", SearchQuery{Vector: &VectorQuery{Vector: []float32{1, 0}, K: MaxLimit + 1}}, "vector.k"},
		{"c", SearchQuery{Vector: &VectorQuery{Vector: []float32{1, 0}, Ef: -1}}, "vector.ef"},
		{"c", SearchQuery{Vector: vq(1, 0), MMR: &nan}, "mmr"},
		{"c", SearchQuery{Vector: vq(1, 0), MMR: &neg}, "mmr"},
		{"c", SearchQuery{Vector: vq(1, 0), MMR: &big}, "mmr"},
		{"c", SearchQuery{Text: &TextQuery{Query: "x"}, MMR: new(0.5)}, "mmr"},
		{"c", SearchQuery{Vector: vq(1, 0), RRFK: -1}, "rrf_k"},
		{"c", SearchQuery{Vector: vq(1, 0), Limit: -1}, "limit"},
		{"plain", SearchQuery{Vector: vq(1, 0)}, "vector"},
	} {
		_, err := s.Search(ctx, tc.coll, tc.q)
		if e := wantCode(t, err, CodeInvalid); e.Field != tc.field {
			t.Errorf("%+v: field %q (%v), want %q", tc.q, e.Field, err, tc.field)
		}
	}
	wantCode(t, vecErrOf(s.Search(ctx, "nope", SearchQuery{Vector: vq(1, 0)})), CodeCollectionNotFound)
}

// TestVectorPersistence: vectors and their graph survive close and
// reopen, dump → load and backup, with the same search results.
func TestVectorPersistence(t *testing.T) {
	path := t.TempDir() + "/s.db"
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	vecs := randVecs(rng, 300, 8)
	putVecs(t, s, "c", vecs)
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8, Metric: MetricDot}, nil); err != nil {
		t.Fatal(err)
	}
	q := SearchQuery{Vector: &VectorQuery{Vector: vecs[7], Approximate: true}, Limit: 10}
	want := hitIDs(vsearch(t, s, "c", q))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStoreAt(t, path)
	if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got, want) {
		t.Fatalf("after reopen %v, want %v", got, want)
	}
	m := memoryCopy(t, s)
	if got := hitIDs(vsearch(t, m, "c", q)); !slices.Equal(got, want) {
		t.Fatalf("after dump and load %v, want %v", got, want)
	}
	infos, err := m.Collections(ctx)
	if err != nil || infos[0].Vector == nil || *infos[0].Vector != (VectorDef{Field: "v", Dimension: 8, Metric: MetricDot}) {
		t.Fatalf("loaded collection %+v, %v", infos, err)
	}
}

// openStoreAt opens the store file at path, verified and closed when the
// test ends.
func openStoreAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Verify(ctx); err != nil {
			t.Error(err)
		}
		s.Close()
	})
	return s
}

// TestVectorBatchRetry: concurrent writers share batches; one refused
// document (wrong dimension) rolls its batch back and the others run
// again, leaving vectors and graph consistent (Verify at cleanup).
func TestVectorBatchRetry(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 4}, nil); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 64)
		for i := range errs {
			wg.Go(func() {
				v := []float32{float32(i), 1, float32(i % 3), 2}
				if i%9 == 0 {
					v = v[:3]
				}
				_, errs[i] = s.Put(ctx, "c", Int(int64(i)), vecDoc(v, i))
			})
		}
		wg.Wait()
		for i, err := range errs {
			if (i%9 == 0) != (ErrorCode(err) == CodeSchemaViolation) || (i%9 != 0 && err != nil) {
				t.Fatalf("put %d: %v", i, err)
			}
		}
		n, _, err := s.Count(ctx, "c", nil)
		if err != nil || n != 64-8 {
			t.Fatalf("count %d, %v", n, err)
		}
		res := vsearch(t, s, "c", SearchQuery{Vector: &VectorQuery{Vector: []float32{5, 1, 2, 2}, Approximate: true}, Limit: 100})
		if len(res.Hits) != 56 {
			t.Fatalf("%d hits", len(res.Hits))
		}
		seen := map[string]bool{}
		for _, h := range res.Hits {
			k := fmt.Sprint(h.Doc.ID)
			if seen[k] {
				t.Fatalf("hit %s twice", k)
			}
			seen[k] = true
		}
	})
}

// TestGraphCache: an approximate search reads a copy of the graph once
// the same state was searched twice, never a copy of another state: a
// write makes the next search read the file and see it, and a rolled-back
// write leaves the copy valid. On a file the copy holds views of the
// file's map (no vectors of its own), which stay valid while other
// collections are written, rewritten and emptied (their pages freed and
// reused): searches through the copy then answer as the file does.
func TestGraphCache(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		rng := rand.New(rand.NewPCG(7, 8))
		vecs := randVecs(rng, 200, 8)
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 8}, nil); err != nil {
			t.Fatal(err)
		}
		putVecs(t, s, "c", vecs)
		q := SearchQuery{Vector: &VectorQuery{Vector: vecs[3], Approximate: true}, Limit: 3}
		cached := func() *graphCache {
			graphCaches.Lock()
			defer graphCaches.Unlock()
			if slot := graphCaches.m[cacheKey{weak.Make(s), "c"}]; slot != nil {
				return slot.copy
			}
			return nil
		}
		first := hitIDs(vsearch(t, s, "c", q))
		if cached() != nil || first[0] != 3 {
			t.Fatalf("first search: %v, copy %v", first, cached() != nil)
		}
		if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got, first) || cached() == nil {
			t.Fatalf("second search: %v, copy %v", got, cached() != nil)
		}
		c := cached()
		if file := s.db.Path() != "" && !kv.IsURL(s.db.Path()); (c.at != 0) != file {
			t.Fatalf("the copy's map %#x on a file %v", c.at, file)
		}
		if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got, first) || cached() != c {
			t.Fatalf("third search: %v", got)
		}
		// The copy holds what the file holds, after other collections'
		// writes and deletes (pages freed and reused).
		other := randVecs(rng, 300, 8)
		for round := range 4 {
			putVecs(t, s, "other", other)
			if _, _, err := s.DeleteWhere(ctx, "other", nil); err != nil {
				t.Fatal(err)
			}
			if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got, first) || cached() != c {
				t.Fatalf("round %d: %v", round, got)
			}
			s.catMu.RLock()
			col := s.cat["c"]
			s.catMu.RUnlock()
			if err := s.db.View(func(tx kv.Tx) error {
				v, err := openVectors(tx, col)
				if err != nil {
					return err
				}
				for slot := range v.slots() {
					if !slices.Equal(v.vector(slot), c.vec(slot)) || !bytes.Equal(v.node(slot), c.node(slot)) || !bytes.Equal(v.docKey(slot), c.docKey(slot)) {
						t.Fatalf("round %d: slot %d of the copy is not the file's", round, slot)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		// A refused batch rolls back: the copy still holds the state.
		_, err := s.PutMany(ctx, "c", []Doc{{ID: Int(500), Value: vecDoc(vecs[3], 0)}, {ID: Int(501), Value: vecDoc([]float32{1}, 0)}})
		wantCode(t, err, CodeSchemaViolation)
		if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got, first) || cached() != c {
			t.Fatalf("after a refused batch: %v", got)
		}
		// A write: the next search reads the file and finds the new
		// document; the one after builds a new copy.
		if _, err := s.Put(ctx, "c", Int(500), vecDoc(vecs[3], 0)); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitLinked(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if got := hitIDs(vsearch(t, s, "c", q)); !slices.Contains(got, 500) || !slices.Contains(got, 3) {
				t.Fatalf("search %d after the write: %v", i, got)
			}
		}
		if cached() == c || cached() == nil {
			t.Fatal("no new copy after the write")
		}
	})
}

// TestDistanceKernels: dot and sqL2 (AVX2 where the CPU has it) agree
// with the Go loops at every length, aligned or not.
func TestDistanceKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for n := range 100 {
		for _, off := range []int{0, 1, 3} {
			v := randVecs(rng, 2, n+off)
			a, b := v[0][off:], v[1][off:]
			if d, g := dot(a, b), dotGo(a, b); math.Abs(float64(d-g)) > 1e-4 {
				t.Fatalf("n %d off %d: dot %v, Go %v", n, off, d, g)
			}
			if d, g := sqL2(a, b), sqL2Go(a, b); math.Abs(float64(d-g)) > 1e-4 {
				t.Fatalf("n %d off %d: sqL2 %v, Go %v", n, off, d, g)
			}
		}
	}
	var a, b [5]float32
	if dot(a[:], b[:]) != 0 || sqL2(a[:0], b[:0]) != 0 {
		t.Fatal("zero vectors")
	}
}

// TestSearchHybrid: a vector and a text source fuse by RRF through
// Search, after the filter, each hit carrying its rank and score in each
// source: vectors rank 1, 2, 3 (closest to (1, 0) first); the text
// "heron" is in document 3 only, so text ranks 3 alone; with k = 60, 3
// scores 1/63 + 1/61, 1 scores 1/61 and 2 scores 1/62.
func TestSearchHybrid(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 2}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateTextIndex(ctx, "c", TextIndexDef{Name: "t", Fields: []string{"t"}}, nil); err != nil {
			t.Fatal(err)
		}
		for id, d := range map[int64]string{
			1: `{"v": {"$vector": [1, 0.1]}, "t": "a gull on the shore", "g": 1}`,
			2: `{"v": {"$vector": [1, 0.5]}, "t": "a tern at sea", "g": 1}`,
			3: `{"v": {"$vector": [1, 0.9]}, "t": "a heron in the reeds", "g": 1}`,
			4: `{"v": {"$vector": [1, 0]}, "t": "another heron", "g": 2}`,
		} {
			if _, err := s.Put(ctx, "c", Int(id), j(t, d)); err != nil {
				t.Fatal(err)
			}
		}
		for _, approx := range []bool{false, true} {
			res := vsearch(t, s, "c", SearchQuery{Filter: flt(t, `{"g": 1}`), Vector: &VectorQuery{Vector: []float32{1, 0}, Approximate: approx},
				Text: &TextQuery{Query: "heron"}})
			if got := hitIDs(res); !slices.Equal(got, []int64{3, 1, 2}) {
				t.Fatalf("approximate %v: hybrid order %v, want [3 1 2]", approx, got)
			}
			h := res.Hits[0]
			if math.Abs(h.Score-(1.0/63+1.0/61)) > 1e-12 || h.Vector.Rank != 3 || h.Text == nil || h.Text.Rank != 1 || h.Text.Score <= 0 {
				t.Fatalf("hit 3: %+v %+v %+v", h, h.Vector, h.Text)
			}
			if h := res.Hits[1]; h.Score != 1.0/61 || h.Text != nil || h.Vector.Rank != 1 {
				t.Fatalf("hit 1: %+v", h)
			}
		}
		// A text error is placed under "text".
		_, err := s.Search(ctx, "c", SearchQuery{Text: &TextQuery{Query: "x", Index: "nope"}})
		if e := wantCode(t, err, CodeInvalid); !bytes.HasPrefix([]byte(e.Field), []byte("text")) {
			t.Fatalf("text error field %q: %v", e.Field, err)
		}
	})
}

// TestVectorFlat: a flat vector field keeps no graph (Verify checks it)
// and answers exact searches through writes, updates and deletes; an
// approximate search is refused naming vector.approximate; dump → load
// keeps it flat.
func TestVectorFlat(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		def := VectorDef{Field: "v", Dimension: 3, Metric: MetricL2, Flat: true}
		if _, err := s.SetVector(ctx, "c", def, nil); err != nil {
			t.Fatal(err)
		}
		wantCode(t, vecErrOf(s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 3, Metric: MetricL2}, nil)), CodeIndexExists)
		for i, v := range [][]float32{{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}} {
			if _, err := s.Put(ctx, "c", Int(int64(i)), vecDoc(v, i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Put(ctx, "c", Int(3), vecDoc([]float32{-1, 0, 0}, 3)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, "c", Int(1)); err != nil {
			t.Fatal(err)
		}
		q := SearchQuery{Vector: &VectorQuery{Vector: []float32{0.9, 0, 0}}}
		if got := hitIDs(vsearch(t, s, "c", q)); !slices.Equal(got, []int64{0, 2, 3}) {
			t.Fatalf("flat search %v", got)
		}
		q.Vector.Approximate = true
		_, err := s.Search(ctx, "c", q)
		if e := wantCode(t, err, CodeInvalid); e.Field != "vector.approximate" {
			t.Fatalf("approximate on flat: %v (field %q)", err, e.Field)
		}
		infos, err := memoryCopy(t, s).Collections(ctx)
		if err != nil || infos[0].Vector == nil || *infos[0].Vector != def {
			t.Fatalf("loaded %+v, %v", infos, err)
		}
	})
}

// TestHNSWBatches: a write batch's vectors are linked into the graph
// together when the batch ends, on every core for a large batch and on
// the writer's goroutine for a small one, including a document written
// twice in a batch, a vector removed after it was written, and a freed
// slot taken again in the same batch; building the graph over existing
// documents takes the same path. The graph stays whole and every
// document's own vector finds it first.
func TestHNSWBatches(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		const n, dim = 900, 12
		rng := rand.New(rand.NewPCG(5, 6))
		vecs := randVecs(rng, n+1, dim)
		for _, coll := range []string{"before", "after"} {
			if coll == "after" {
				if _, err := s.SetVector(ctx, coll, VectorDef{Field: "v", Dimension: dim, Metric: MetricL2}, nil); err != nil {
					t.Fatal(err)
				}
			}
			putVecs(t, s, coll, vecs[:n]) // batches of 500 and 400: in parallel
			if coll == "before" {
				if _, err := s.SetVector(ctx, coll, VectorDef{Field: "v", Dimension: dim, Metric: MetricL2}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A small batch (linked on the writer's goroutine): document 1
		// loses its vector and document n takes its slot, document 2 is
		// written twice, document 3 gets a vector and loses it.
		vecs[1], vecs[2] = nil, randVecs(rng, 1, dim)[0]
		small := []Doc{
			{ID: Int(1), Value: Map(Field{"g", Int(1)})},
			{ID: Int(n), Value: vecDoc(vecs[n], 0)},
			{ID: Int(2), Value: vecDoc(randVecs(rng, 1, dim)[0], 2)},
			{ID: Int(2), Value: vecDoc(vecs[2], 2)},
			{ID: Int(3), Value: vecDoc(randVecs(rng, 1, dim)[0], 3)},
			{ID: Int(3), Value: Map(Field{"g", Int(3)})},
		}
		vecs[3] = nil
		// The same in a large batch.
		big := slices.Clone(small)
		for i := 10; i < 200; i++ {
			vecs[i] = randVecs(rng, 1, dim)[0]
			big = append(big, Doc{ID: Int(int64(i)), Value: vecDoc(vecs[i], i%10)})
		}
		for _, coll := range []string{"before", "after"} {
			if _, err := s.PutMany(ctx, coll, small); err != nil {
				t.Fatal(err)
			}
			if _, err := s.PutMany(ctx, coll, big); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		for _, coll := range []string{"before", "after"} {
			missed := 0
			for i, v := range vecs {
				if v == nil {
					continue
				}
				ids := hitIDs(vsearch(t, s, coll, SearchQuery{Vector: &VectorQuery{Vector: v, Approximate: true}, Limit: 1}))
				if len(ids) != 1 || ids[0] != int64(i) {
					missed++
				}
			}
			if missed > 0 {
				t.Errorf("%s: %d documents not found first by their own vector", coll, missed)
			}
		}
	})
}
