package docstore

import "golang.org/x/sys/cpu"

// useAVX2 is whether dot and sqL2 run the AVX2 and FMA kernels of
// vector_amd64.s (8 components per instruction) rather than Go's.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotAVX2 returns the dot product of the n components at a and b; n is a
// multiple of 8.
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

// sqL2AVX2 returns the squared Euclidean distance between the n
// components at a and b; n is a multiple of 8.
//
//go:noescape
func sqL2AVX2(a, b *float32, n int) float32

// dot returns the dot product of a and b (len(b) ≥ len(a)).
func dot(a, b []float32) float32 {
	if !useAVX2 || len(a) < 8 {
		return dotGo(a, b)
	}
	n := len(a) &^ 7
	if n == len(a) {
		return dotAVX2(&a[0], &b[:n][0], n)
	}
	return dotAVX2(&a[0], &b[:len(a)][0], n) + dotGo(a[n:], b[n:])
}

// sqL2 returns the squared Euclidean distance between a and b (len(b) ≥
// len(a)).
func sqL2(a, b []float32) float32 {
	if !useAVX2 || len(a) < 8 {
		return sqL2Go(a, b)
	}
	n := len(a) &^ 7
	if n == len(a) {
		return sqL2AVX2(&a[0], &b[:n][0], n)
	}
	return sqL2AVX2(&a[0], &b[:len(a)][0], n) + sqL2Go(a[n:], b[n:])
}

// prefetchLines asks the CPU to load the n components at p into its
// caches, a line at a time, without waiting for them.
//
//go:noescape
func prefetchLines(p *float32, n int)

// prefetch starts loading v into the CPU's caches: a graph search
// prefetches the vectors of a node's neighbours before computing their
// distances, so that their loads from memory overlap rather than follow
// one another (the build is bound by them, not by the arithmetic).
func prefetch(v []float32) {
	if len(v) > 0 {
		prefetchLines(&v[0], len(v))
	}
}
