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

// LOAD_U8_32 widens the 32 bytes at DI into the float32s of Y4 to Y7.
#define LOAD_U8_32 \
	VPMOVZXBD (DI), Y4; \
	VPMOVZXBD 8(DI), Y5; \
	VPMOVZXBD 16(DI), Y6; \
	VPMOVZXBD 24(DI), Y7; \
	VCVTDQ2PS Y4, Y4; \
	VCVTDQ2PS Y5, Y5; \
	VCVTDQ2PS Y6, Y6; \
	VCVTDQ2PS Y7, Y7

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

// The byte kernels: b's components are zero-extended to int32s
// (VPMOVZXBD) and converted to float32s (VCVTDQ2PS) 8 at a time.

// func dotU8AVX2(a *float32, b *uint8, n int) float32
// n is a multiple of 8.
TEXT ·dotU8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO_SUMS

udot32:
	CMPQ CX, $32
	JL   udot8
	LOAD_U8_32
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ $128, SI
	ADDQ $32, DI
	SUBQ $32, CX
	JMP  udot32

udot8:
	CMPQ CX, $8
	JL   udotdone
	VPMOVZXBD (DI), Y4
	VCVTDQ2PS Y4, Y4
	VFMADD231PS (SI), Y4, Y0
	ADDQ $32, SI
	ADDQ $8, DI
	SUBQ $8, CX
	JMP  udot8

udotdone:
	SUM_TO_X0
	MOVSS X0, ret+24(FP)
	RET

// func stepCodesAVX2(dst *float32, u *uint8, w, b *float32, n int)
// n is a multiple of 8.
TEXT ·stepCodesAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ b+24(FP), BX
	MOVQ n+32(FP), CX

step8:
	CMPQ CX, $8
	JL   stepdone
	VPMOVZXBD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMULPS (DX), Y0, Y0
	VADDPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $8, SI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  step8

stepdone:
	VZEROUPPER
	RET
