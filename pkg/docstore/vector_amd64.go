package docstore

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

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

// dotU8AVX2 returns the dot product of the n float32s at a and the n
// bytes at b; n is a multiple of 8.
//
//go:noescape
func dotU8AVX2(a *float32, b *uint8, n int) float32

// dotU8 returns the dot product of a and the bytes b (len(b) ≥ len(a)).
func dotU8(a []float32, b []uint8) float32 {
	if !useAVX2 || len(a) < 8 {
		return dotU8Go(a, b)
	}
	n := len(a) &^ 7
	if n == len(a) {
		return dotU8AVX2(&a[0], &b[:n][0], n)
	}
	return dotU8AVX2(&a[0], &b[:len(a)][0], n) + dotU8Go(a[n:], b[n:])
}

// stepCodesAVX2 sets the n float32s at dst to u[i]·w[i] + b[i] for the n
// bytes at u and float32s at w and b; n is a multiple of 8.
//
//go:noescape
func stepCodesAVX2(dst *float32, u *uint8, w, b *float32, n int)

// stepCodes sets dst[i] to u[i]·w[i] + b[i] (u, w and b at least as long
// as dst).
func stepCodes(dst []float32, u []uint8, w, b []float32) {
	if !useAVX2 || len(dst) < 8 {
		stepCodesGo(dst, u, w, b)
		return
	}
	n := len(dst) &^ 7
	stepCodesAVX2(&dst[0], &u[:n][0], &w[:n][0], &b[:n][0], n)
	stepCodesGo(dst[n:], u[n:], w[n:], b[n:])
}

// prefetchLines asks the CPU to load the size bytes at p into its
// caches, a line at a time, without waiting for them.
//
//go:noescape
func prefetchLines(p unsafe.Pointer, size int)

// prefetch starts loading v into the CPU's caches: a graph search
// prefetches the vectors of a node's neighbours before computing their
// distances, so that their loads from memory overlap rather than follow
// one another (the build is bound by them, not by the arithmetic).
func prefetch[E float32 | byte](v []E) {
	if len(v) > 0 {
		prefetchLines(unsafe.Pointer(&v[0]), len(v)*int(unsafe.Sizeof(v[0])))
	}
}
