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

// dotBF16AVX2 returns the dot product of the n float32s at a and the n
// bfloat16s at b; n is a multiple of 8.
//
//go:noescape
func dotBF16AVX2(a *float32, b *uint16, n int) float32

// sqL2BF16AVX2 returns the squared Euclidean distance between the n
// float32s at a and the n bfloat16s at b; n is a multiple of 8.
//
//go:noescape
func sqL2BF16AVX2(a *float32, b *uint16, n int) float32

// dotBF16 returns the dot product of a and the bfloat16s b (len(b) ≥
// len(a)).
func dotBF16(a []float32, b []uint16) float32 {
	if !useAVX2 || len(a) < 8 {
		return dotBF16Go(a, b)
	}
	n := len(a) &^ 7
	if n == len(a) {
		return dotBF16AVX2(&a[0], &b[:n][0], n)
	}
	return dotBF16AVX2(&a[0], &b[:len(a)][0], n) + dotBF16Go(a[n:], b[n:])
}

// sqL2BF16 returns the squared Euclidean distance between a and the
// bfloat16s b (len(b) ≥ len(a)).
func sqL2BF16(a []float32, b []uint16) float32 {
	if !useAVX2 || len(a) < 8 {
		return sqL2BF16Go(a, b)
	}
	n := len(a) &^ 7
	if n == len(a) {
		return sqL2BF16AVX2(&a[0], &b[:n][0], n)
	}
	return sqL2BF16AVX2(&a[0], &b[:len(a)][0], n) + sqL2BF16Go(a[n:], b[n:])
}

// widenBF16AVX2 sets the n float32s at dst to the n bfloat16s at src; n
// is a multiple of 8.
//
//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

// widenBF16 sets dst to the bfloat16s src (len(src) ≥ len(dst)).
func widenBF16(dst []float32, src []uint16) {
	if !useAVX2 || len(dst) < 8 {
		widenBF16Go(dst, src)
		return
	}
	n := len(dst) &^ 7
	widenBF16AVX2(&dst[0], &src[:n][0], n)
	widenBF16Go(dst[n:], src[n:])
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
func prefetch[E float32 | uint16 | byte](v []E) {
	if len(v) > 0 {
		prefetchLines(unsafe.Pointer(&v[0]), len(v)*int(unsafe.Sizeof(v[0])))
	}
}
