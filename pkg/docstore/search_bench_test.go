package docstore

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// benchTextDocs returns n short documents of made-up words drawn by a
// Zipf law over 5,000 words, with English stop words among them (the
// workload of the test module's BenchmarkStoreText).
func benchTextDocs(n int) []string {
	r := rand.New(rand.NewPCG(10, 1))
	syll := strings.Fields("ba ke lo mu ri sa te vo zi na pe qua do fi gu")
	stop := strings.Fields("the of and a to in is it")
	var vocab []string
	seen := map[string]bool{}
	for len(vocab) < 5000 {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if s := b.String(); !seen[s] {
			seen[s] = true
			vocab = append(vocab, s)
		}
	}
	z := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	out := make([]string, n)
	for d := range out {
		words := make([]string, 6+r.IntN(10))
		for i := range words {
			if r.IntN(5) == 0 {
				words[i] = stop[r.IntN(len(stop))]
			} else {
				words[i] = vocab[z.Uint64()]
			}
		}
		out[d] = strings.Join(words, " ")
	}
	return out
}

// BenchmarkTextIngest indexes b.N×1,000 short documents in a text index
// (stop words on), 1,000 a transaction (NoSync: the CPU it costs).
func BenchmarkTextIngest(b *testing.B) {
	texts := benchTextDocs(b.N * 1000)
	benchIngest(b, "docs", func(s *Store) error {
		_, err := s.CreateTextIndex(ctx, "docs", TextIndexDef{Name: "body", Fields: []string{"body"}, StopWords: true}, nil)
		return err
	}, len(texts), func(i int) Value { return Map(Field{Key: "body", Value: Text(texts[i])}) })
}

// BenchmarkHNSWIngest builds an HNSW field of b.N×1,000 embedding-like
// vectors of 384 dimensions (embeddingVecs), 1,000 a transaction
// (NoSync), and reports the rate and the recall@10 of 100 approximate
// searches at the default ef against exact ones: the loop to profile the
// build with (the test module's BenchmarkStoreVector measures it at
// 100,000 against a peer).
func BenchmarkHNSWIngest(b *testing.B) {
	vecs := embeddingVecs(1, b.N*1000, 384)
	s := benchIngest(b, "v", func(s *Store) error {
		_, err := s.SetVector(ctx, "v", VectorDef{Field: "v", Dimension: 384}, nil)
		return err
	}, len(vecs), func(i int) Value { return Map(Field{Key: "v", Value: Vector(vecs[i])}) })
	found, qs := 0, embeddingVecs(2, 100, 384)
	for _, q := range qs {
		exact := hitIDs(vsearch(b, s, "v", SearchQuery{Vector: &VectorQuery{Vector: q}, Limit: 10}))
		for _, id := range hitIDs(vsearch(b, s, "v", SearchQuery{Vector: &VectorQuery{Vector: q, Approximate: true}, Limit: 10})) {
			if slices.Contains(exact, id) {
				found++
			}
		}
	}
	b.ReportMetric(float64(found)/float64(10*len(qs)), "recall@10")
}

// benchIngest stores n documents doc(i) in coll of a new store that setup
// prepared, 1,000 a transaction, waits until the linker has linked their
// vectors (if any), reports documents per second and returns the store.
func benchIngest(b *testing.B, coll string, setup func(*Store) error, n int, doc func(i int) Value) *Store {
	s := benchStore(b)
	if err := setup(s); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for lo := 0; lo < n; lo += 1000 {
		docs := make([]Doc, 0, 1000)
		for i := lo; i < min(lo+1000, n); i++ {
			docs = append(docs, Doc{ID: Int(int64(i)), Value: doc(i)})
		}
		if _, err := s.PutMany(ctx, coll, docs); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.WaitLinked(ctx, coll); err != nil { // a vector field's graph, whole
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "docs/s")
	return s
}

// embeddingVecs returns n unit vectors of dim components near a random
// 16-dimensional subspace (Gaussian coordinates in a random basis, plus
// 5% noise in every component), as text embeddings are: the workload of
// the test module's BenchmarkStoreVector (vecSet there), where nearest
// neighbours mean something.
func embeddingVecs(seed uint64, n, dim int) [][]float32 {
	const rank = 16
	rng := rand.New(rand.NewPCG(seed, 0x7ec))
	brng := rand.New(rand.NewPCG(1, 0xba5e))
	basis := make([][]float32, rank)
	for i := range basis {
		basis[i] = make([]float32, dim)
		for j := range basis[i] {
			basis[i][j] = float32(brng.NormFloat64())
		}
	}
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for _, b := range basis {
			z := float32(rng.NormFloat64())
			for j := range v {
				v[j] += z * b[j]
			}
		}
		var norm float64
		for j := range v {
			v[j] += float32(rng.NormFloat64() * 0.05 * 4)
			norm += float64(v[j]) * float64(v[j])
		}
		for j := range v {
			v[j] = float32(float64(v[j]) / math.Sqrt(norm))
		}
		out[i] = v
	}
	return out
}
