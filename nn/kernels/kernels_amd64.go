package kernels

// cpuAVX reports whether the CPU and the operating system support AVX2
// and FMA: the vector kernels then use kernels_amd64.s (4 lanes, fused
// multiply-add: about twice gonum's SSE2 at the sampler's lengths).
var cpuAVX = detectAVX()

// haveAVX is whether the vector kernels use the assembly (UseAVX).
var haveAVX = cpuAVX

// detectAVX checks CPUID for FMA, AVX and OSXSAVE (leaf 1) and AVX2 (leaf
// 7), and XCR0 for the saved SSE and AVX register state.
func detectAVX() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if c1&fma == 0 || c1&osxsave == 0 || c1&avx == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	const avx2 = 1 << 5
	return b7&avx2 != 0
}

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv() (a, d uint32)

// dotAVX returns x . y over len(x) elements; y must be at least as long.
//
//go:noescape
func dotAVX(x, y []float64) float64

// axpyAVX adds a x to dst over len(dst) elements; x must be at least as
// long.
//
//go:noescape
func axpyAVX(dst []float64, a float64, x []float64)

// addTwoAVX writes x + y into dst over len(dst) elements; x and y must be
// at least as long.
//
//go:noescape
func addTwoAVX(dst, x, y []float64)

// dotsAVX writes y[i] = x . a[i*stride : i*stride+len(x)] for i <
// len(y); a must hold them.
//
//go:noescape
func dotsAVX(y, x, a []float64, stride int)

// axpysAVX adds sum_i c[i] a[i*stride : i*stride+len(dst)] to dst, i <
// len(c), in order of i; a must hold them.
//
//go:noescape
func axpysAVX(dst, c, a []float64, stride int)

// axpys2AVX is axpysAVX on two rows at once, dst0 with c0 and dst1 with
// c1, over the same rows of a: len(dst1) = len(dst0), len(c1) = len(c0).
//
//go:noescape
func axpys2AVX(dst0, dst1, c0, c1, a []float64, stride int)

// expsAVX writes dst[i] = e^(src[i] - m) for i < len(dst), a multiple of 4,
// as exp computes it (fused multiply-adds may round its polynomial
// differently); c holds exp's constants (expConsts) and table is
// &expTable[0]. Every src[i] - m must be in exp's range (-708, 709): with
// check, expsAVX tests it first and returns false, writing nothing, when
// one is not (its vector compares took a fifth of Exps's time as a Go
// loop); without, the caller has checked (it returns true).
//
//go:noescape
func expsAVX(dst, src []float64, m float64, c *[12]float64, table *float64, check bool) bool

// expsScalarAVX writes x[i] = Exp(x[i]) for the four, bit for bit as the
// scalar Exp (its operations, none fused, lane by lane). Each x[i] must be
// in exp's range (-708, 709). c is &expConsts, table &expTable[0].
//
//go:noescape
func expsScalarAVX(x *[4]float64, c *[12]float64, table *float64)

// logsAVX writes dst[i] = math.Log(src[i]) for i < len(dst), a multiple
// of 4, bit for bit on amd64 (the operations of its assembly), when every
// src[i] is a normal positive finite number; it returns false, writing
// nothing, when one is not. c is &logConsts.
//
//go:noescape
func logsAVX(dst, src []float64, c *[72]float64) bool

// gerAVX adds x[i] y to a[i*stride : i*stride+len(y)] for i < len(x); a
// must hold them.
//
//go:noescape
func gerAVX(a, x, y []float64, stride int)

// fmaPeak runs n iterations of 48 independent fused multiply-adds (12
// four-wide ones) on registers and returns their sum (BenchmarkPeakFMA).
//
//go:noescape
func fmaPeak(n int) float64
