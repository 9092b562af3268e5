//go:build !amd64

package docstore

// dot returns the dot product of a and b (len(b) ≥ len(a)).
func dot(a, b []float32) float32 { return dotGo(a, b) }

// sqL2 returns the squared Euclidean distance between a and b (len(b) ≥
// len(a)).
func sqL2(a, b []float32) float32 { return sqL2Go(a, b) }

// dotBF16 returns the dot product of a and the bfloat16s b (len(b) ≥
// len(a)).
func dotBF16(a []float32, b []uint16) float32 { return dotBF16Go(a, b) }

// sqL2BF16 returns the squared Euclidean distance between a and the
// bfloat16s b (len(b) ≥ len(a)).
func sqL2BF16(a []float32, b []uint16) float32 { return sqL2BF16Go(a, b) }

// widenBF16 sets dst to the bfloat16s src (len(src) ≥ len(dst)).
func widenBF16(dst []float32, src []uint16) { widenBF16Go(dst, src) }

// prefetch does nothing here (vector_amd64.go says why it exists).
func prefetch[E float32 | uint16 | byte]([]E) {}
