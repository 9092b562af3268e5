package docstore

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestKeySet: a filter's allowed set holds exactly the keys added, of
// every kind (dense and sparse non-negative ints, negative ints, texts,
// a key added twice), whether its integers went to a bitmap or a map;
// its length counts each key once and sortedKeys lists them in order.
func TestKeySet(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		var b keySetBuilder
		want := map[string]bool{}
		add := func(v Value) {
			k := AppendKey(nil, v)
			b.add(k)
			want[string(k)] = true
		}
		base := int64(rng.IntN(3)) << (8 * rng.IntN(7)) // 0, or a high base
		n := rng.IntN(300)
		for range n {
			switch rng.IntN(10) {
			case 0:
				add(Int(-1 - rng.Int64N(1000)))
			case 1:
				add(Text(fmt.Sprintf("doc-%d", rng.IntN(500))))
			case 2:
				if round%2 == 0 {
					add(Int(rng.Int64N(math.MaxInt64))) // sparse: the integers go to a map
				} else {
					add(Int(base + rng.Int64N(int64(n)+1)))
				}
			default:
				add(Int(base + rng.Int64N(int64(2*n)+1)))
			}
		}
		if n > 0 && rng.IntN(2) == 0 { // a key added again
			for k := range want {
				b.add([]byte(k))
				break
			}
		}
		s := b.set()
		if s.len() != len(want) {
			t.Fatalf("round %d: len %d, want %d", round, s.len(), len(want))
		}
		var keys []string
		for k := range want {
			keys = append(keys, k)
			if !s.has([]byte(k)) {
				t.Fatalf("round %d: %x missing", round, k)
			}
		}
		slices.Sort(keys)
		if got := s.sortedKeys(); !slices.Equal(got, keys) {
			t.Fatalf("round %d: sortedKeys %d keys, want %d", round, len(got), len(keys))
		}
		// Keys not added: near the integers' span, far from it, other kinds,
		// and an integer's key not written shortest (which AppendKey never
		// writes).
		others := []Value{Int(base - 1), Int(base + int64(2*n) + 1), Int(base + int64(2*n) + 64), Int(math.MaxInt64), Int(-1), Text("doc-x"), Float(0.5)}
		for i := range 50 {
			others = append(others, Int(base+int64(i)))
		}
		for _, v := range others {
			k := AppendKey(nil, v)
			if s.has(k) != want[string(k)] {
				t.Fatalf("round %d: has(%v) = %v", round, v, s.has(k))
			}
		}
		if s.has([]byte{keyIntZero + 2, 0, 5, numInt}) {
			t.Fatalf("round %d: a key not written shortest is in the set", round)
		}
	}
	var nilSet *keySet
	if nilSet.pass() != nil {
		t.Fatal("a nil set (no filter) has a membership test")
	}
}

// TestSearchFilteredAgainstReference: hybrid searches with filters (none;
// through an index, covering the filter or not; a scan), a vector and a
// text source fused by RRF, over documents whose ids are dense ints, or
// ints, negative ints and texts mixed, some without a vector or a text,
// return exactly what a reference computes from the documents: the
// filter's documents ranked by float64 distance and by brute-force BM25
// (statistics over the whole collection), fused by Σ 1/(60 + rank), ties
// in id order. The approximate search returns only documents the filter
// allows, each with its reference text rank, and the same hits when the
// graph is read from the file and from its copy in memory (the vector
// source then ranks on another goroutine).
func TestSearchFilteredAgainstReference(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		for _, coll := range []string{"dense", "mixed"} {
			testFilteredSearch(t, s, coll)
		}
	})
}

// refDoc is a document of testFilteredSearch's reference.
type refDoc struct {
	key []byte
	vec []float32
	val Value
}

func testFilteredSearch(t *testing.T, s *Store, coll string) {
	const n, dim = 600, 6
	rng := rand.New(rand.NewPCG(11, uint64(len(coll))))
	words := strings.Fields("tide reef gull kelp wave sand shell foam salt")
	if _, err := s.SetVector(ctx, coll, VectorDef{Field: "v", Dimension: dim, Metric: MetricL2}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateIndex(ctx, coll, IndexDef{Name: "g", Fields: []string{"g"}}, nil); err != nil {
		t.Fatal(err)
	}
	def := TextIndexDef{Name: "t", Fields: []string{"t"}}
	mustText(t, s, coll, def)
	var docs []Doc
	var ref []refDoc
	for i := range n {
		id := Int(int64(i))
		if coll == "mixed" {
			switch i % 4 {
			case 1:
				id = Int(int64(i) * 1_000_003)
			case 2:
				id = Int(-int64(i))
			case 3:
				id = Text(fmt.Sprintf("d%03d", i))
			}
		}
		fields := []Field{{"g", Int(int64(rng.IntN(10)))}, {"h", Int(int64(rng.IntN(100)))}}
		var vec []float32
		if rng.IntN(12) != 0 {
			vec = randVecs(rng, 1, dim)[0]
			fields = append(fields, Field{"v", Vector(vec)})
		}
		if rng.IntN(12) != 0 {
			ws := make([]string, 1+rng.IntN(5))
			for j := range ws {
				ws[j] = words[min(rng.IntN(len(words)), rng.IntN(len(words)))] // the first words commoner
			}
			fields = append(fields, Field{"t", Text(strings.Join(ws, " "))})
		}
		val := Map(fields...)
		docs = append(docs, Doc{ID: id, Value: val})
		ref = append(ref, refDoc{key: AppendKey(nil, id), vec: vec, val: val})
	}
	if _, err := s.PutMany(ctx, coll, docs); err != nil {
		t.Fatal(err)
	}
	filters := []string{"", `{"g": {"$in": [0, 2, 4, 6, 8]}}`, `{"g": 3}`, `{"g": {"$in": [1, 5]}, "h": {"$lt": 50}}`, `{"h": {"$gte": 30}}`}
	for _, fs := range filters {
		var f *Filter
		if fs != "" {
			f = flt(t, fs)
		}
		keep := func(d refDoc) bool { return f == nil || f.Match(d.val) }
		allowed := map[string]bool{}
		for _, d := range ref {
			if keep(d) {
				allowed[string(d.key)] = true
			}
		}
		for qi := range 4 {
			q := randVecs(rng, 1, dim)[0]
			text := words[qi] + " " + words[qi+3]
			sq := SearchQuery{Filter: f, Vector: &VectorQuery{Vector: q}, Text: &TextQuery{Query: text}, Limit: 15}
			what := fmt.Sprintf("%s: filter %s, query %d", coll, fs, qi)
			textRef := bruteBM25Among(t, s, coll, def, text, 15, func(k []byte) bool { return allowed[string(k)] })
			want := refFused(refVectors(ref, q, 15, keep), textRef, 15)
			got := vsearch(t, s, coll, sq)
			if g, w := hitKeys(got), fusedKeys(want); !slices.EqualFunc(g, w, bytes.Equal) {
				t.Fatalf("%s: hits\n%x\nwant\n%x", what, g, w)
			}
			for i, h := range got.Hits {
				if math.Abs(h.Score-want[i].score) > 1e-12 || rankOf(h.Vector) != rankOf(want[i].vector) || rankOf(h.Text) != rankOf(want[i].text) {
					t.Fatalf("%s: hit %d score %v ranks %d %d, want %v %d %d", what, i, h.Score, rankOf(h.Vector), rankOf(h.Text), want[i].score, rankOf(want[i].vector), rankOf(want[i].text))
				}
			}
			// Approximate: three times, so that the graph's copy in memory
			// is built (by the second) and read.
			sq.Vector.Approximate = true
			var first SearchResult
			for run := range 3 {
				res := vsearch(t, s, coll, sq)
				textRank := map[string]int{}
				for i, r := range textRef {
					textRank[string(r.IDKey)] = i + 1
				}
				for _, h := range res.Hits {
					k := AppendKey(nil, h.Doc.ID)
					if !allowed[string(k)] {
						t.Fatalf("%s: approximate hit %s is not allowed by the filter", what, js(t, h.Doc.ID))
					}
					if rankOf(h.Text) != textRank[string(k)] {
						t.Fatalf("%s: approximate hit %s text rank %d, want %d", what, js(t, h.Doc.ID), rankOf(h.Text), textRank[string(k)])
					}
				}
				if run == 0 {
					first = res
				} else if g, w := hitKeys(res), hitKeys(first); !slices.EqualFunc(g, w, bytes.Equal) {
					t.Fatalf("%s: approximate run %d: hits\n%x\nthe first run's\n%x", what, run, g, w)
				}
			}
		}
	}
}

// refVectors ranks the documents keep allows that have a vector by
// float64 L2 distance to q (ties by key), the first n.
func refVectors(ref []refDoc, q []float32, n int, keep func(refDoc) bool) []Ranked {
	var out []Ranked
	for _, d := range ref {
		if d.vec == nil || !keep(d) {
			continue
		}
		var l2 float64
		for j := range q {
			l2 += (float64(q[j]) - float64(d.vec[j])) * (float64(q[j]) - float64(d.vec[j]))
		}
		out = append(out, Ranked{IDKey: d.key, Score: -l2})
	}
	slices.SortFunc(out, func(a, b Ranked) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.IDKey, b.IDKey)
	})
	return out[:min(n, len(out))]
}

// refFused fuses two rankings by Σ 1/(60 + rank), best first, ties by
// key, the first n.
func refFused(vector, text []Ranked, n int) []*fused {
	byKey := map[string]*fused{}
	for src, list := range [][]Ranked{vector, text} {
		for i, r := range list {
			f := byKey[string(r.IDKey)]
			if f == nil {
				f = &fused{key: r.IDKey}
				byKey[string(r.IDKey)] = f
			}
			f.score += 1 / float64(60+i+1)
			if src == 0 {
				f.vector = &SourceRank{Rank: i + 1}
			} else {
				f.text = &SourceRank{Rank: i + 1}
			}
		}
	}
	var out []*fused
	for _, f := range byKey {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *fused) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.key, b.key)
	})
	return out[:min(n, len(out))]
}

func hitKeys(res SearchResult) [][]byte {
	var out [][]byte
	for _, h := range res.Hits {
		out = append(out, AppendKey(nil, h.Doc.ID))
	}
	return out
}

func rankOf(sr *SourceRank) int {
	if sr == nil {
		return 0
	}
	return sr.Rank
}

// TestSearchProfile: a search asked for a profile times its stages; one
// not asked has none.
func TestSearchProfile(t *testing.T) {
	s := openStore(t, "memory")
	if _, err := s.SetVector(ctx, "c", VectorDef{Field: "v", Dimension: 2}, nil); err != nil {
		t.Fatal(err)
	}
	mustText(t, s, "c", TextIndexDef{Name: "t", Fields: []string{"t"}})
	for i := range 50 {
		putJSON(t, s, "c", int64(i), fmt.Sprintf(`{"v": {"$vector": [1, %d]}, "t": "word%d common", "g": %d}`, i, i%3, i%2))
	}
	lambda := 0.5
	q := SearchQuery{Filter: flt(t, `{"g": 1}`), Vector: &VectorQuery{Vector: []float32{1, 0}}, Text: &TextQuery{Query: "common"}, MMR: &lambda}
	if res := vsearch(t, s, "c", q); res.Profile != nil {
		t.Fatalf("a profile not asked for: %+v", res.Profile)
	}
	q.Profile = true
	p := vsearch(t, s, "c", q).Profile
	if p == nil || p.Filter <= 0 || p.Vector <= 0 || p.Text <= 0 || p.Sources < max(p.Vector, p.Text) || p.Fusion <= 0 || p.MMR <= 0 || p.Hits <= 0 {
		t.Fatalf("profile %+v", p)
	}
}
