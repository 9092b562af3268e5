//go:build !amd64

package docstore

// dot returns the dot product of a and b (len(b) ≥ len(a)).
func dot(a, b []float32) float32 { return dotGo(a, b) }

// sqL2 returns the squared Euclidean distance between a and b (len(b) ≥
// len(a)).
func sqL2(a, b []float32) float32 { return sqL2Go(a, b) }

// prefetch does nothing here (vector_amd64.go says why it exists).
func prefetch([]float32) {}
