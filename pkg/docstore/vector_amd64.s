#include "textflag.h"

// ZERO_SUMS clears the four accumulators Y0 to Y3.
#define ZERO_SUMS \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3

// SUM_TO_X0 adds the 32 lanes of Y0 to Y3 into the low lane of X0.
#define SUM_TO_X0 \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y3, Y2, Y2; \
	VADDPS Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VHADDPS X0, X0, X0; \
	VHADDPS X0, X0, X0; \
	VZEROUPPER

// LOAD_BF16_32 widens the 32 bfloat16s at DI into the float32s of Y4 to
// Y7.
#define LOAD_BF16_32 \
	VPMOVZXWD (DI), Y4; \
	VPMOVZXWD 16(DI), Y5; \
	VPMOVZXWD 32(DI), Y6; \
	VPMOVZXWD 48(DI), Y7; \
	VPSLLD $16, Y4, Y4; \
	VPSLLD $16, Y5, Y5; \
	VPSLLD $16, Y6, Y6; \
	VPSLLD $16, Y7, Y7

// func dotAVX2(a, b *float32, n int) float32
// n is a multiple of 8.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO_SUMS

dot32:
	CMPQ CX, $32
	JL   dot8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  dot32

dot8:
	CMPQ CX, $8
	JL   dotdone
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  dot8

dotdone:
	SUM_TO_X0
	MOVSS X0, ret+24(FP)
	RET

// func sqL2AVX2(a, b *float32, n int) float32
// n is a multiple of 8.
TEXT ·sqL2AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO_SUMS

l2_32:
	CMPQ CX, $32
	JL   l2_8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VSUBPS (DI), Y4, Y4
	VSUBPS 32(DI), Y5, Y5
	VSUBPS 64(DI), Y6, Y6
	VSUBPS 96(DI), Y7, Y7
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  l2_32

l2_8:
	CMPQ CX, $8
	JL   l2done
	VMOVUPS (SI), Y4
	VSUBPS (DI), Y4, Y4
	VFMADD231PS Y4, Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  l2_8

l2done:
	SUM_TO_X0
	MOVSS X0, ret+24(FP)
	RET

// func prefetchLines(p unsafe.Pointer, size int)
// Prefetches the size bytes at p, a cache line at a time.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ size+8(FP), CX
	ADDQ SI, CX

pf:
	CMPQ SI, CX
	JGE  pfdone
	PREFETCHT0 (SI)
	ADDQ $64, SI
	JMP  pf

pfdone:
	RET

// The bfloat16 kernels: b's components are the high 16 bits of float32s,
// widened (VPMOVZXWD) and shifted into place (VPSLLD) 8 at a time.

// func dotBF16AVX2(a *float32, b *uint16, n int) float32
// n is a multiple of 8.
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO_SUMS

bdot32:
	CMPQ CX, $32
	JL   bdot8
	LOAD_BF16_32
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ $128, SI
	ADDQ $64, DI
	SUBQ $32, CX
	JMP  bdot32

bdot8:
	CMPQ CX, $8
	JL   bdotdone
	VPMOVZXWD (DI), Y4
	VPSLLD $16, Y4, Y4
	VFMADD231PS (SI), Y4, Y0
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JMP  bdot8

bdotdone:
	SUM_TO_X0
	MOVSS X0, ret+24(FP)
	RET

// func sqL2BF16AVX2(a *float32, b *uint16, n int) float32
// n is a multiple of 8.
TEXT ·sqL2BF16AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO_SUMS

bl2_32:
	CMPQ CX, $32
	JL   bl2_8
	LOAD_BF16_32
	VSUBPS (SI), Y4, Y4
	VSUBPS 32(SI), Y5, Y5
	VSUBPS 64(SI), Y6, Y6
	VSUBPS 96(SI), Y7, Y7
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ $128, SI
	ADDQ $64, DI
	SUBQ $32, CX
	JMP  bl2_32

bl2_8:
	CMPQ CX, $8
	JL   bl2done
	VPMOVZXWD (DI), Y4
	VPSLLD $16, Y4, Y4
	VSUBPS (SI), Y4, Y4
	VFMADD231PS Y4, Y4, Y0
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JMP  bl2_8

bl2done:
	SUM_TO_X0
	MOVSS X0, ret+24(FP)
	RET

// func widenBF16AVX2(dst *float32, src *uint16, n int)
// n is a multiple of 8.
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

widen8:
	CMPQ CX, $8
	JL   widendone
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  widen8

widendone:
	VZEROUPPER
	RET
