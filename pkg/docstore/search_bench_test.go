package docstore

import (
	"math/rand/v2"
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

// BenchmarkHNSWIngest inserts b.N×1,000 random vectors of 384 dimensions
// in an HNSW field, 1,000 a transaction (NoSync).
func BenchmarkHNSWIngest(b *testing.B) {
	vecs := randVecs(rand.New(rand.NewPCG(1, 2)), b.N*1000, 384)
	benchIngest(b, "v", func(s *Store) error {
		_, err := s.SetVector(ctx, "v", VectorDef{Field: "v", Dimension: 384}, nil)
		return err
	}, len(vecs), func(i int) Value { return Map(Field{Key: "v", Value: Vector(vecs[i])}) })
}

// benchIngest stores n documents doc(i) in coll of a new store that setup
// prepared, 1,000 a transaction, and reports documents per second.
func benchIngest(b *testing.B, coll string, setup func(*Store) error, n int, doc func(i int) Value) {
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
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "docs/s")
}
