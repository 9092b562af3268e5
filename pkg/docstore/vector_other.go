//go:build !amd64

package docstore

// dot returns the dot product of a and b (len(b) ≥ len(a)).
func dot(a, b []float32) float32 { return dotGo(a, b) }

// sqL2 returns the squared Euclidean distance between a and b (len(b) ≥
// len(a)).
func sqL2(a, b []float32) float32 { return sqL2Go(a, b) }

// dotU8 returns the dot product of a and the bytes b (len(b) ≥ len(a)).
func dotU8(a []float32, b []uint8) float32 { return dotU8Go(a, b) }

// stepCodes sets dst[i] to u[i]·w[i] + b[i] (u, w and b at least as long
// as dst).
func stepCodes(dst []float32, u []uint8, w, b []float32) { stepCodesGo(dst, u, w, b) }

// prefetch does nothing here (vector_amd64.go says why it exists).
func prefetch[E float32 | byte]([]E) {}
