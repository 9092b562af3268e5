package hnswlibpeer

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPeer drives the peer over its protocol on a few unit vectors: two
// batches added, an add out of range refused with the process still
// answering, and each vector its own nearest.
func TestPeer(t *testing.T) {
	if missing := Missing(); missing != "" {
		t.Skipf("%s not found (scripts/install-deps.sh --bench installs them)", missing)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	vecs := make([][]float32, 2_000)
	for i := range vecs {
		v := make([]float32, 16)
		var norm float64
		for j := range v {
			v[j] = float32(rng.NormFloat64())
			norm += float64(v[j]) * float64(v[j])
		}
		for j := range v {
			v[j] = float32(float64(v[j]) / math.Sqrt(norm))
		}
		vecs[i] = v
	}
	p, err := Start(t.TempDir(), vecs, 16, 40, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, lo := range []int{0, 1_000} {
		d, err := p.Add(lo, lo+1_000)
		if err != nil {
			t.Fatal(err)
		}
		if d <= 0 {
			t.Fatalf("add %d: took %v", lo, d)
		}
	}
	if _, err := p.Add(1_990, 2_001); err == nil {
		t.Fatal("add past the index's capacity: no error")
	}
	got, err := p.Search(vecs[:50], 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, ids := range got {
		if len(ids) != 10 || ids[0] != int64(i) {
			t.Fatalf("query %d (vector %d itself): %v", i, i, ids)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
