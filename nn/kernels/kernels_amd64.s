#include "textflag.h"

// AVX2 and FMA vector kernels (kernels_amd64.go); callers check the
// lengths and the CPU.

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv() (a, d uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, a+0(FP)
	MOVL DX, d+4(FP)
	RET

// func dotAVX(x, y []float64) float64
TEXT ·dotAVX(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ y_base+24(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ dot_tail4

dot_loop16:
	VMOVUPD (SI)(AX*8), Y4
	VMOVUPD 32(SI)(AX*8), Y5
	VMOVUPD 64(SI)(AX*8), Y6
	VMOVUPD 96(SI)(AX*8), Y7
	VFMADD231PD (DI)(AX*8), Y4, Y0
	VFMADD231PD 32(DI)(AX*8), Y5, Y1
	VFMADD231PD 64(DI)(AX*8), Y6, Y2
	VFMADD231PD 96(DI)(AX*8), Y7, Y3
	ADDQ $16, AX
	CMPQ AX, DX
	JL   dot_loop16

dot_tail4:
	MOVQ CX, DX
	ANDQ $-4, DX
	CMPQ AX, DX
	JGE  dot_reduce

dot_loop4:
	VMOVUPD (SI)(AX*8), Y4
	VFMADD231PD (DI)(AX*8), Y4, Y0
	ADDQ $4, AX
	CMPQ AX, DX
	JL   dot_loop4

dot_reduce:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	CMPQ AX, CX
	JGE  dot_done

dot_loop1:
	VMOVSD (SI)(AX*8), X4
	VFMADD231SD (DI)(AX*8), X4, X0
	INCQ AX
	CMPQ AX, CX
	JL   dot_loop1

dot_done:
	VZEROUPPER
	MOVSD X0, ret+48(FP)
	RET

// func axpyAVX(dst []float64, a float64, x []float64)
TEXT ·axpyAVX(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	VBROADCASTSD a+24(FP), Y0
	MOVQ x_base+32(FP), SI
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ   axpy_tail4

axpy_loop16:
	VMOVUPD (DI)(AX*8), Y1
	VMOVUPD 32(DI)(AX*8), Y2
	VMOVUPD 64(DI)(AX*8), Y3
	VMOVUPD 96(DI)(AX*8), Y4
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VFMADD231PD 32(SI)(AX*8), Y0, Y2
	VFMADD231PD 64(SI)(AX*8), Y0, Y3
	VFMADD231PD 96(SI)(AX*8), Y0, Y4
	VMOVUPD Y1, (DI)(AX*8)
	VMOVUPD Y2, 32(DI)(AX*8)
	VMOVUPD Y3, 64(DI)(AX*8)
	VMOVUPD Y4, 96(DI)(AX*8)
	ADDQ $16, AX
	CMPQ AX, DX
	JL   axpy_loop16

axpy_tail4:
	MOVQ CX, DX
	ANDQ $-4, DX
	CMPQ AX, DX
	JGE  axpy_tail1

axpy_loop4:
	VMOVUPD (DI)(AX*8), Y1
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ $4, AX
	CMPQ AX, DX
	JL   axpy_loop4

axpy_tail1:
	CMPQ AX, CX
	JGE  axpy_done

axpy_loop1:
	VMOVSD (DI)(AX*8), X1
	VFMADD231SD (SI)(AX*8), X0, X1
	VMOVSD X1, (DI)(AX*8)
	INCQ AX
	CMPQ AX, CX
	JL   axpy_loop1

axpy_done:
	VZEROUPPER
	RET

// func addTwoAVX(dst, x, y []float64)
TEXT ·addTwoAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ y_base+48(FP), BX
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ   add_tail4

add_loop16:
	VMOVUPD (SI)(AX*8), Y1
	VMOVUPD 32(SI)(AX*8), Y2
	VMOVUPD 64(SI)(AX*8), Y3
	VMOVUPD 96(SI)(AX*8), Y4
	VADDPD (BX)(AX*8), Y1, Y1
	VADDPD 32(BX)(AX*8), Y2, Y2
	VADDPD 64(BX)(AX*8), Y3, Y3
	VADDPD 96(BX)(AX*8), Y4, Y4
	VMOVUPD Y1, (DI)(AX*8)
	VMOVUPD Y2, 32(DI)(AX*8)
	VMOVUPD Y3, 64(DI)(AX*8)
	VMOVUPD Y4, 96(DI)(AX*8)
	ADDQ $16, AX
	CMPQ AX, DX
	JL   add_loop16

add_tail4:
	MOVQ CX, DX
	ANDQ $-4, DX
	CMPQ AX, DX
	JGE  add_tail1

add_loop4:
	VMOVUPD (SI)(AX*8), Y1
	VADDPD (BX)(AX*8), Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ $4, AX
	CMPQ AX, DX
	JL   add_loop4

add_tail1:
	CMPQ AX, CX
	JGE  add_done

add_loop1:
	VMOVSD (SI)(AX*8), X1
	VADDSD (BX)(AX*8), X1, X1
	VMOVSD X1, (DI)(AX*8)
	INCQ AX
	CMPQ AX, CX
	JL   add_loop1

add_done:
	VZEROUPPER
	RET

// func dotsAVX(y, x, a []float64, stride int)
TEXT ·dotsAVX(SB), NOSPLIT, $0-80
	MOVQ y_base+0(FP), R8
	MOVQ y_len+8(FP), R9
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	MOVQ a_base+48(FP), DI
	MOVQ stride+72(FP), R10
	SHLQ $3, R10
	MOVQ CX, DX
	ANDQ $-16, DX
	MOVQ CX, R11
	ANDQ $-4, R11
	XORQ R12, R12

	// Two rows at a time (DI and BX = DI + stride): their eight
	// accumulators' chains overlap, and each row's sums are the one-row
	// loop's, in its order, bit for bit.
dots_pair:
	MOVQ R9, R13
	SUBQ R12, R13
	CMPQ R13, $2
	JL   dots_row
	LEAQ (DI)(R10*1), BX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	XORQ AX, AX
	CMPQ AX, DX
	JGE  pair_tail4

pair_loop16:
	VMOVUPD (SI)(AX*8), Y4
	VMOVUPD 32(SI)(AX*8), Y5
	VMOVUPD 64(SI)(AX*8), Y6
	VMOVUPD 96(SI)(AX*8), Y7
	VFMADD231PD (DI)(AX*8), Y4, Y0
	VFMADD231PD 32(DI)(AX*8), Y5, Y1
	VFMADD231PD 64(DI)(AX*8), Y6, Y2
	VFMADD231PD 96(DI)(AX*8), Y7, Y3
	VFMADD231PD (BX)(AX*8), Y4, Y8
	VFMADD231PD 32(BX)(AX*8), Y5, Y9
	VFMADD231PD 64(BX)(AX*8), Y6, Y10
	VFMADD231PD 96(BX)(AX*8), Y7, Y11
	ADDQ $16, AX
	CMPQ AX, DX
	JL   pair_loop16

pair_tail4:
	CMPQ AX, R11
	JGE  pair_reduce

pair_loop4:
	VMOVUPD (SI)(AX*8), Y4
	VFMADD231PD (DI)(AX*8), Y4, Y0
	VFMADD231PD (BX)(AX*8), Y4, Y8
	ADDQ $4, AX
	CMPQ AX, R11
	JL   pair_loop4

pair_reduce:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	VADDPD Y9, Y8, Y8
	VADDPD Y11, Y10, Y10
	VADDPD Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPD X9, X8, X8
	VPERMILPD $1, X8, X9
	VADDSD X9, X8, X8
	CMPQ AX, CX
	JGE  pair_store

pair_loop1:
	VMOVSD (SI)(AX*8), X4
	VFMADD231SD (DI)(AX*8), X4, X0
	VFMADD231SD (BX)(AX*8), X4, X8
	INCQ AX
	CMPQ AX, CX
	JL   pair_loop1

pair_store:
	VMOVSD X0, (R8)(R12*8)
	VMOVSD X8, 8(R8)(R12*8)
	LEAQ (BX)(R10*1), DI
	ADDQ $2, R12
	JMP  dots_pair

dots_row:
	CMPQ R12, R9
	JGE  dots_done
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ AX, AX
	CMPQ AX, DX
	JGE  dots_tail4

dots_loop16:
	VMOVUPD (SI)(AX*8), Y4
	VMOVUPD 32(SI)(AX*8), Y5
	VMOVUPD 64(SI)(AX*8), Y6
	VMOVUPD 96(SI)(AX*8), Y7
	VFMADD231PD (DI)(AX*8), Y4, Y0
	VFMADD231PD 32(DI)(AX*8), Y5, Y1
	VFMADD231PD 64(DI)(AX*8), Y6, Y2
	VFMADD231PD 96(DI)(AX*8), Y7, Y3
	ADDQ $16, AX
	CMPQ AX, DX
	JL   dots_loop16

dots_tail4:
	CMPQ AX, R11
	JGE  dots_reduce

dots_loop4:
	VMOVUPD (SI)(AX*8), Y4
	VFMADD231PD (DI)(AX*8), Y4, Y0
	ADDQ $4, AX
	CMPQ AX, R11
	JL   dots_loop4

dots_reduce:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	CMPQ AX, CX
	JGE  dots_store

dots_loop1:
	VMOVSD (SI)(AX*8), X4
	VFMADD231SD (DI)(AX*8), X4, X0
	INCQ AX
	CMPQ AX, CX
	JL   dots_loop1

dots_store:
	VMOVSD X0, (R8)(R12*8)
	ADDQ R10, DI
	INCQ R12
	JMP  dots_row

dots_done:
	VZEROUPPER
	RET

// func axpysAVX(dst, c, a []float64, stride int)
TEXT ·axpysAVX(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ c_base+24(FP), SI
	MOVQ c_len+32(FP), R9
	MOVQ a_base+48(FP), R8
	MOVQ stride+72(FP), R10
	SHLQ $3, R10
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-16, DX

axpys_block16:
	CMPQ AX, DX
	JGE  axpys_tail4
	VMOVUPD (DI)(AX*8), Y0
	VMOVUPD 32(DI)(AX*8), Y1
	VMOVUPD 64(DI)(AX*8), Y2
	VMOVUPD 96(DI)(AX*8), Y3
	LEAQ (R8)(AX*8), BX
	XORQ R12, R12

axpys_row16:
	CMPQ R12, R9
	JGE  axpys_store16
	VBROADCASTSD (SI)(R12*8), Y4
	VFMADD231PD (BX), Y4, Y0
	VFMADD231PD 32(BX), Y4, Y1
	VFMADD231PD 64(BX), Y4, Y2
	VFMADD231PD 96(BX), Y4, Y3
	ADDQ R10, BX
	INCQ R12
	JMP  axpys_row16

axpys_store16:
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	VMOVUPD Y2, 64(DI)(AX*8)
	VMOVUPD Y3, 96(DI)(AX*8)
	ADDQ $16, AX
	JMP  axpys_block16

axpys_tail4:
	MOVQ CX, DX
	ANDQ $-4, DX

axpys_block4:
	CMPQ AX, DX
	JGE  axpys_tail1
	VMOVUPD (DI)(AX*8), Y0
	LEAQ (R8)(AX*8), BX
	XORQ R12, R12

axpys_row4:
	CMPQ R12, R9
	JGE  axpys_store4
	VBROADCASTSD (SI)(R12*8), Y4
	VFMADD231PD (BX), Y4, Y0
	ADDQ R10, BX
	INCQ R12
	JMP  axpys_row4

axpys_store4:
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  axpys_block4

axpys_tail1:
	CMPQ AX, CX
	JGE  axpys_done
	VMOVSD (DI)(AX*8), X0
	LEAQ (R8)(AX*8), BX
	XORQ R12, R12

axpys_row1:
	CMPQ R12, R9
	JGE  axpys_store1
	VMOVSD (SI)(R12*8), X4
	VFMADD231SD (BX), X4, X0
	ADDQ R10, BX
	INCQ R12
	JMP  axpys_row1

axpys_store1:
	VMOVSD X0, (DI)(AX*8)
	INCQ AX
	JMP  axpys_tail1

axpys_done:
	VZEROUPPER
	RET

// EXP_TABLE4 loads Y2 = the four expTable entries (table in R9) whose
// indices are Y3's four quadwords, by four scalar loads, not VGATHERQPD:
// on this project's host (a Xeon VM) the gather made expsAVX's loop take
// 4.3 ns an element against 2.6 with the loads (BenchmarkExp/Exps, 1,024
// elements). It clobbers X4 and R10-R13.
#define EXP_TABLE4 \
	VMOVQ X3, R10 \
	VPEXTRQ $1, X3, R11 \
	VEXTRACTI128 $1, Y3, X4 \
	VMOVQ X4, R12 \
	VPEXTRQ $1, X4, R13 \
	VMOVSD (R9)(R10*8), X2 \
	VMOVHPD (R9)(R11*8), X2, X2 \
	VMOVSD (R9)(R12*8), X4 \
	VMOVHPD (R9)(R13*8), X4, X4 \
	VINSERTF128 $1, X4, Y2, Y2

// IN_RANGE_OR_RETURN ends a range check: it goes on at label ok when
// every lane of mask (the AND of the checks' compares) is set, and returns
// false (ret) otherwise, having written nothing. It clobbers R10.
#define IN_RANGE_OR_RETURN(mask, ok, ret) \
	VMOVMSKPD mask, R10 \
	CMPQ R10, $15 \
	JEQ ok \
	MOVB $0, ret \
	VZEROUPPER \
	RET

// func expsAVX(dst, src []float64, m float64, c *[12]float64, table *float64, check bool) bool
// dst[i] = e^(src[i] - m) for i < len(dst) (a multiple of 4), as exp
// computes it (exp.go), four at a time. With check, it first tests every
// src[i] - m against exp's range (c[10], c[11]) = (-708, 709) as Exps's
// loop did, !(x > -708 && x < 709) (NaN fails), and returns false without
// writing when one fails; without, the caller has checked the range.
TEXT ·expsAVX(SB), NOSPLIT, $0-81
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	VBROADCASTSD m+48(FP), Y5
	MOVQ c+56(FP), R8
	MOVQ table+64(FP), R9
	ANDQ $-4, CX
	MOVBQZX check+72(FP), R10
	TESTQ R10, R10
	JZ   exps_consts
	VBROADCASTSD 80(R8), Y2
	VBROADCASTSD 88(R8), Y3
	VPCMPEQQ Y4, Y4, Y4
	XORQ AX, AX

exps_check:
	CMPQ AX, CX
	JGE  exps_checked
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD Y5, Y0, Y0
	VCMPPD $0x1e, Y2, Y0, Y1 // x > -708 (ordered: false for NaN)
	VANDPD Y1, Y4, Y4
	VCMPPD $0x11, Y3, Y0, Y1 // x < 709 (ordered)
	VANDPD Y1, Y4, Y4
	ADDQ $4, AX
	JMP  exps_check

exps_checked:
	IN_RANGE_OR_RETURN(Y4, exps_consts, ret+80(FP))

exps_consts:
	MOVB $1, ret+80(FP)
	VBROADCASTSD 0(R8), Y15
	VBROADCASTSD 8(R8), Y14
	VBROADCASTSD 16(R8), Y13
	VBROADCASTSD 24(R8), Y12
	VBROADCASTSD 32(R8), Y11
	VBROADCASTSD 40(R8), Y10
	VBROADCASTSD 48(R8), Y9
	VBROADCASTSD 56(R8), Y8
	VPBROADCASTQ 64(R8), Y7
	VPBROADCASTQ 72(R8), Y6
	XORQ AX, AX

exps_loop:
	CMPQ AX, CX
	JGE  exps_done
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD Y5, Y0, Y0
	VMOVAPD Y14, Y1
	VFMADD231PD Y15, Y0, Y1
	VSUBPD Y14, Y1, Y2
	VFMADD231PD Y13, Y2, Y0
	VFMADD231PD Y12, Y2, Y0
	VMOVAPD Y10, Y3
	VFMADD231PD Y11, Y0, Y3
	VMOVAPD Y9, Y4
	VFMADD231PD Y3, Y0, Y4
	VMOVAPD Y8, Y3
	VFMADD231PD Y4, Y0, Y3
	VMULPD Y0, Y0, Y4
	VFMADD231PD Y3, Y4, Y0
	VPAND Y7, Y1, Y3
	EXP_TABLE4
	VPADDQ Y6, Y1, Y1
	VPSRLQ $7, Y1, Y1
	VPSLLQ $52, Y1, Y1
	VFMADD231PD Y0, Y2, Y2
	VMULPD Y1, Y2, Y2
	VMOVUPD Y2, (DI)(AX*8)
	ADDQ $4, AX
	JMP  exps_loop

exps_done:
	VZEROUPPER
	RET

// func gerAVX(a, x, y []float64, stride int)
// a[i*stride+j] += x[i] y[j] for i < len(x), j < len(y): one axpy per row
// without a call per row.
TEXT ·gerAVX(SB), NOSPLIT, $0-80
	MOVQ a_base+0(FP), DI
	MOVQ x_base+24(FP), R8
	MOVQ x_len+32(FP), R9
	MOVQ y_base+48(FP), SI
	MOVQ y_len+56(FP), CX
	MOVQ stride+72(FP), R10
	SHLQ $3, R10
	MOVQ CX, DX
	ANDQ $-16, DX
	MOVQ CX, R11
	ANDQ $-4, R11
	XORQ R12, R12

ger_row:
	CMPQ R12, R9
	JGE  ger_done
	VBROADCASTSD (R8)(R12*8), Y0
	XORQ AX, AX
	CMPQ AX, DX
	JGE  ger_tail4

ger_loop16:
	VMOVUPD (DI)(AX*8), Y1
	VMOVUPD 32(DI)(AX*8), Y2
	VMOVUPD 64(DI)(AX*8), Y3
	VMOVUPD 96(DI)(AX*8), Y4
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VFMADD231PD 32(SI)(AX*8), Y0, Y2
	VFMADD231PD 64(SI)(AX*8), Y0, Y3
	VFMADD231PD 96(SI)(AX*8), Y0, Y4
	VMOVUPD Y1, (DI)(AX*8)
	VMOVUPD Y2, 32(DI)(AX*8)
	VMOVUPD Y3, 64(DI)(AX*8)
	VMOVUPD Y4, 96(DI)(AX*8)
	ADDQ $16, AX
	CMPQ AX, DX
	JL   ger_loop16

ger_tail4:
	CMPQ AX, R11
	JGE  ger_tail1

ger_loop4:
	VMOVUPD (DI)(AX*8), Y1
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ $4, AX
	CMPQ AX, R11
	JL   ger_loop4

ger_tail1:
	CMPQ AX, CX
	JGE  ger_next

ger_loop1:
	VMOVSD (DI)(AX*8), X1
	VFMADD231SD (SI)(AX*8), X0, X1
	VMOVSD X1, (DI)(AX*8)
	INCQ AX
	CMPQ AX, CX
	JL   ger_loop1

ger_next:
	ADDQ R10, DI
	INCQ R12
	JMP  ger_row

ger_done:
	VZEROUPPER
	RET

// func fmaPeak(n int) float64
// n iterations of 12 independent four-wide fused multiply-adds on
// registers (48 multiply-adds each): the core's peak rate, for
// BenchmarkPeakFMA.
TEXT ·fmaPeak(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	MOVQ $0x3ff0000000000000, AX
	MOVQ AX, X12
	VBROADCASTSD X12, Y12
	VMOVAPD Y12, Y13

fma_loop:
	VFMADD231PD Y12, Y13, Y0
	VFMADD231PD Y12, Y13, Y1
	VFMADD231PD Y12, Y13, Y2
	VFMADD231PD Y12, Y13, Y3
	VFMADD231PD Y12, Y13, Y4
	VFMADD231PD Y12, Y13, Y5
	VFMADD231PD Y12, Y13, Y6
	VFMADD231PD Y12, Y13, Y7
	VFMADD231PD Y12, Y13, Y8
	VFMADD231PD Y12, Y13, Y9
	VFMADD231PD Y12, Y13, Y10
	VFMADD231PD Y12, Y13, Y11
	DECQ CX
	JNZ  fma_loop
	VADDPD Y0, Y1, Y0
	VADDPD Y2, Y3, Y2
	VADDPD Y4, Y5, Y4
	VADDPD Y6, Y7, Y6
	VADDPD Y8, Y9, Y8
	VADDPD Y10, Y11, Y10
	VADDPD Y0, Y2, Y0
	VADDPD Y4, Y6, Y4
	VADDPD Y8, Y10, Y8
	VADDPD Y0, Y4, Y0
	VADDPD Y0, Y8, Y0
	VMOVSD X0, ret+8(FP)
	VZEROUPPER
	RET

// func logsAVX(dst, src []float64, c *[72]float64) bool
// dst[i] = log(src[i]) for i < len(dst) (a multiple of 4), four at a time,
// by the operations of math.Log's amd64 assembly (archLog), lane by lane
// and in its order, none fused: the same bits. Every src[i] must be a
// normal positive finite number (archLog sends zero, negatives,
// infinities and NaN to special cases, and its reduction does not handle
// subnormals): logsAVX checks them first and returns false without
// writing when one is not. c holds logConsts: each constant four times,
// 32 bytes apart (C(i) below is the i-th).
#define C(i) (i*32)(R8)
TEXT ·logsAVX(SB), NOSPLIT, $0-57
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ c+48(FP), R8
	ANDQ $-4, CX
	VPCMPEQQ Y7, Y7, Y7
	XORQ AX, AX

logs_check:
	CMPQ AX, CX
	JGE  logs_checked
	VMOVUPD (SI)(AX*8), Y0
	VCMPPD $0x1d, C(0), Y0, Y1 // x >= 2^-1022 (ordered: false for NaN)
	VANDPD Y1, Y7, Y7
	VCMPPD $0x12, C(1), Y0, Y1 // x <= the largest finite (ordered)
	VANDPD Y1, Y7, Y7
	ADDQ $4, AX
	JMP  logs_check

logs_checked:
	IN_RANGE_OR_RETURN(Y7, logs_run, ret+56(FP))

logs_run:
	MOVB $1, ret+56(FP)
	XORQ AX, AX

logs_loop:
	CMPQ AX, CX
	JGE  logs_done
	VMOVUPD (SI)(AX*8), Y0
	// f1 := the mantissa with exponent 0.5's; k := float64(e - 0x3FE),
	// exactly, as (2^52 + e) - (2^52 + 0x3FE) (x > 0: no sign bit)
	VANDPD C(2), Y0, Y2
	VORPD C(3), Y2, Y2
	VPSRLQ $52, Y0, Y1
	VPOR C(8), Y1, Y1
	VSUBPD C(4), Y1, Y1
	// if !(HSqrt2 < f1) { k -= 1; f1 *= 2 } (CMPSD X2, X0, 5)
	VMOVUPD C(5), Y0
	VCMPPD $5, Y2, Y0, Y0
	VANDPD C(6), Y0, Y3
	VSUBPD Y3, Y1, Y1
	VADDPD C(6), Y3, Y3
	VMULPD Y3, Y2, Y2
	// f := f1 - 1; s := f / (2 + f); s2 := s * s; s4 := s2 * s2
	VSUBPD C(6), Y2, Y2
	VADDPD C(7), Y2, Y0
	VDIVPD Y0, Y2, Y3
	VMULPD Y3, Y3, Y4
	VMULPD Y4, Y4, Y5
	// t1 := s2 * (L1 + s4*(L3+s4*(L5+s4*L7)))
	VMULPD C(9), Y5, Y6
	VADDPD C(10), Y6, Y6
	VMULPD Y5, Y6, Y6
	VADDPD C(11), Y6, Y6
	VMULPD Y5, Y6, Y6
	VADDPD C(12), Y6, Y6
	VMULPD Y6, Y4, Y4
	// t2 := s4 * (L2 + s4*(L4+s4*L6)); R := t1 + t2
	VMULPD C(13), Y5, Y6
	VADDPD C(14), Y6, Y6
	VMULPD Y5, Y6, Y6
	VADDPD C(15), Y6, Y6
	VMULPD Y6, Y5, Y5
	VADDPD Y5, Y4, Y4
	// hfsq := 0.5 * f * f
	VMULPD C(3), Y2, Y0
	VMULPD Y2, Y0, Y0
	// k*Ln2Hi - ((hfsq - (s*(hfsq+R) + k*Ln2Lo)) - f)
	VADDPD Y0, Y4, Y4
	VMULPD Y4, Y3, Y3
	VMULPD C(16), Y1, Y4
	VADDPD Y4, Y3, Y3
	VSUBPD Y3, Y0, Y0
	VSUBPD Y2, Y0, Y0
	VMULPD C(17), Y1, Y1
	VSUBPD Y0, Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ $4, AX
	JMP  logs_loop

logs_done:
	VZEROUPPER
	RET

#undef C

// func expsScalarAVX(x *[4]float64, c *[12]float64, table *float64)
// x[i] = Exp(x[i]) for the four, each as the scalar Exp computes it (its
// compiled operations, none fused, lane by lane: the same bits), not as
// expsAVX does (whose fused multiply-adds may round differently). Exps
// takes the last len % 4 of its arguments through it. Every x[i] must be
// in exp's range (-708, 709). c is &expConsts, table &expTable[0].
TEXT ·expsScalarAVX(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ c+8(FP), R8
	MOVQ table+16(FP), R9
	// The four lanes loaded one by one: the caller has just stored them one
	// by one, and a 32-byte load of four 8-byte stores cannot take their
	// values from the store buffer (it waits for them to reach the cache,
	// about as long as the rest of the call).
	VMOVSD (DI), X0
	VMOVHPD 8(DI), X0, X0
	VMOVSD 16(DI), X1
	VMOVHPD 24(DI), X1, X1
	VINSERTF128 $1, X1, Y0, Y0
	// k := x N/ln2 rounded by the shift; kd := k as a float64
	VBROADCASTSD 0(R8), Y5
	VMULPD Y5, Y0, Y1
	VBROADCASTSD 8(R8), Y5
	VADDPD Y5, Y1, Y1 // its low bits hold k
	VSUBPD Y5, Y1, Y2 // kd
	// r := x - kd ln2hi/N - kd ln2lo/N (the constants are stored negated:
	// x + kd (-a) is x - kd a exactly)
	VBROADCASTSD 16(R8), Y5
	VMULPD Y5, Y2, Y3
	VADDPD Y3, Y0, Y0
	VBROADCASTSD 24(R8), Y5
	VMULPD Y5, Y2, Y3
	VADDPD Y3, Y0, Y0
	// p := r + r*r*(1/2 + r*(1/6 + r*(1/24 + r/120)))
	VMULPD Y0, Y0, Y4
	VBROADCASTSD 32(R8), Y5
	VMULPD Y5, Y0, Y3
	VBROADCASTSD 40(R8), Y5
	VADDPD Y5, Y3, Y3
	VMULPD Y0, Y3, Y3
	VBROADCASTSD 48(R8), Y5
	VADDPD Y5, Y3, Y3
	VMULPD Y0, Y3, Y3
	VBROADCASTSD 56(R8), Y5
	VADDPD Y5, Y3, Y3
	VMULPD Y4, Y3, Y3
	VADDPD Y3, Y0, Y0
	// t := expTable[k mod N], by four scalar loads
	VPBROADCASTQ 64(R8), Y5
	VPAND Y5, Y1, Y3
	EXP_TABLE4
	// (t + t p) 2^(k div N)
	VMULPD Y2, Y0, Y0
	VADDPD Y2, Y0, Y0
	VPBROADCASTQ 72(R8), Y5
	VPADDQ Y5, Y1, Y1
	VPSRLQ $7, Y1, Y1
	VPSLLQ $52, Y1, Y1
	VMULPD Y1, Y0, Y0
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func axpys2AVX(dst0, dst1, c0, c1, a []float64, stride int)
//
// Two rows of axpysAVX at once over the same rows of a: dst0 += sum_i
// c0[i] a[i], dst1 += sum_i c1[i] a[i]. Each block of a is loaded once
// for both, and the eight running sums of a 16-wide block are eight
// independent chains of fused multiply-adds where one row's four wait on
// the latency of each. Every element's sum is axpysAVX's, in its order.
TEXT ·axpys2AVX(SB), NOSPLIT, $0-128
	MOVQ dst0_base+0(FP), DI
	MOVQ dst0_len+8(FP), CX
	MOVQ dst1_base+24(FP), R14
	MOVQ c0_base+48(FP), SI
	MOVQ c0_len+56(FP), R9
	MOVQ c1_base+72(FP), R13
	MOVQ a_base+96(FP), R8
	MOVQ stride+120(FP), R10
	SHLQ $3, R10
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-16, DX

axpys2_block16:
	CMPQ AX, DX
	JGE  axpys2_tail4
	VMOVUPD (DI)(AX*8), Y0
	VMOVUPD 32(DI)(AX*8), Y1
	VMOVUPD 64(DI)(AX*8), Y2
	VMOVUPD 96(DI)(AX*8), Y3
	VMOVUPD (R14)(AX*8), Y8
	VMOVUPD 32(R14)(AX*8), Y9
	VMOVUPD 64(R14)(AX*8), Y10
	VMOVUPD 96(R14)(AX*8), Y11
	LEAQ (R8)(AX*8), BX
	XORQ R12, R12

axpys2_row16:
	CMPQ R12, R9
	JGE  axpys2_store16
	VBROADCASTSD (SI)(R12*8), Y4
	VBROADCASTSD (R13)(R12*8), Y5
	VMOVUPD (BX), Y6
	VMOVUPD 32(BX), Y7
	VMOVUPD 64(BX), Y12
	VMOVUPD 96(BX), Y13
	VFMADD231PD Y6, Y4, Y0
	VFMADD231PD Y7, Y4, Y1
	VFMADD231PD Y12, Y4, Y2
	VFMADD231PD Y13, Y4, Y3
	VFMADD231PD Y6, Y5, Y8
	VFMADD231PD Y7, Y5, Y9
	VFMADD231PD Y12, Y5, Y10
	VFMADD231PD Y13, Y5, Y11
	ADDQ R10, BX
	INCQ R12
	JMP  axpys2_row16

axpys2_store16:
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	VMOVUPD Y2, 64(DI)(AX*8)
	VMOVUPD Y3, 96(DI)(AX*8)
	VMOVUPD Y8, (R14)(AX*8)
	VMOVUPD Y9, 32(R14)(AX*8)
	VMOVUPD Y10, 64(R14)(AX*8)
	VMOVUPD Y11, 96(R14)(AX*8)
	ADDQ $16, AX
	JMP  axpys2_block16

axpys2_tail4:
	MOVQ CX, DX
	ANDQ $-4, DX

axpys2_block4:
	CMPQ AX, DX
	JGE  axpys2_tail1
	VMOVUPD (DI)(AX*8), Y0
	VMOVUPD (R14)(AX*8), Y8
	LEAQ (R8)(AX*8), BX
	XORQ R12, R12

axpys2_row4:
	CMPQ R12, R9
	JGE  axpys2_store4
	VBROADCASTSD (SI)(R12*8), Y4
	VBROADCASTSD (R13)(R12*8), Y5
	VMOVUPD (BX), Y6
	VFMADD231PD Y6, Y4, Y0
	VFMADD231PD Y6, Y5, Y8
	ADDQ R10, BX
	INCQ R12
	JMP  axpys2_row4

axpys2_store4:
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y8, (R14)(AX*8)
	ADDQ $4, AX
	JMP  axpys2_block4

axpys2_tail1:
	CMPQ AX, CX
	JGE  axpys2_done
	VMOVSD (DI)(AX*8), X0
	VMOVSD (R14)(AX*8), X8
	LEAQ (R8)(AX*8), BX
	XORQ R12, R12

axpys2_row1:
	CMPQ R12, R9
	JGE  axpys2_store1
	VMOVSD (BX), X6
	VMOVSD (SI)(R12*8), X4
	VFMADD231SD X6, X4, X0
	VMOVSD (R13)(R12*8), X5
	VFMADD231SD X6, X5, X8
	ADDQ R10, BX
	INCQ R12
	JMP  axpys2_row1

axpys2_store1:
	VMOVSD X0, (DI)(AX*8)
	VMOVSD X8, (R14)(AX*8)
	INCQ AX
	JMP  axpys2_tail1

axpys2_done:
	VZEROUPPER
	RET
