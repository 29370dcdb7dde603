package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/floats"
)

// The plain-Go kernels the fused ops and the sampler are made of. Vector
// kernels call AVX2 and FMA assembly when the CPU has it (kernels_amd64.s:
// about twice gonum's SSE2 at length 64) and gonum's assembly otherwise
// (floats.Dot, floats.AddScaled: SSE2 on amd64, about twice as fast as an
// unrolled Go loop at length 64); Matrix products call gonum's blocked,
// parallel Gemm. Lengths are always equal by construction: the kernels
// panic otherwise, and a panic inside a tape machine's goroutine cannot
// be recovered.

// UseAVX makes the vector kernels use the AVX2 and FMA assembly (on) or
// gonum's code (off), the path machines without AVX2 and FMA take, and
// returns the previous setting. On is refused (false) where the CPU lacks
// them. It is for tests and benchmarks that run both paths, as
//
//	defer kernels.UseAVX(kernels.UseAVX(false))
//
// and must not be called while kernels run.
func UseAVX(on bool) (was bool) {
	was, haveAVX = haveAVX, on && cpuAVX
	return was
}

// Dot returns x . y, len(x) == len(y).
func Dot(x, y []float64) float64 {
	if !haveAVX {
		return floats.Dot(x, y)
	}
	if len(x) != len(y) {
		panic("kernels: dot: lengths differ")
	}
	return dotAVX(x, y)
}

// Axpy adds a x to dst, len(dst) == len(x).
func Axpy(dst []float64, a float64, x []float64) {
	if !haveAVX {
		floats.AddScaled(dst, a, x)
		return
	}
	if len(x) != len(dst) {
		panic("kernels: axpy: lengths differ")
	}
	axpyAVX(dst, a, x)
}

// AddTo adds x to dst element by element, len(dst) == len(x): an axpy
// with a = 1 (a fused 1 x + dst rounds as x + dst).
func AddTo(dst, x []float64) {
	if !haveAVX {
		floats.Add(dst, x)
		return
	}
	Axpy(dst, 1, x)
}

// AddTwo writes x + y into dst, all of one length.
func AddTwo(dst, x, y []float64) {
	if !haveAVX {
		floats.AddTo(dst, x, y)
		return
	}
	if len(x) != len(dst) || len(y) != len(dst) {
		panic("kernels: addTwo: lengths differ")
	}
	addTwoAVX(dst, x, y)
}

// Dots writes y[i] = x . a[i*stride : i*stride+len(x)] for every i <
// len(y): the rows of a strided Matrix times a vector, without gemv's
// per-call cost.
func Dots(y, x, a []float64, stride int) {
	if len(y) == 0 {
		return
	}
	if (len(y)-1)*stride+len(x) > len(a) {
		panic("kernels: dots: rows past the Matrix")
	}
	if haveAVX {
		dotsAVX(y, x, a, stride)
		return
	}
	for i := range y {
		y[i] = floats.Dot(x, a[i*stride:i*stride+len(x)])
	}
}

// Axpys adds sum_i c[i] a[i*stride : i*stride+len(dst)] to dst, i <
// len(c): a strided Matrix transposed times a vector, as one axpy per
// row in order of i.
func Axpys(dst, c, a []float64, stride int) {
	if len(c) == 0 {
		return
	}
	if (len(c)-1)*stride+len(dst) > len(a) {
		panic("kernels: axpys: rows past the Matrix")
	}
	if haveAVX {
		axpysAVX(dst, c, a, stride)
		return
	}
	for i, ci := range c {
		floats.AddScaled(dst, ci, a[i*stride:i*stride+len(dst)])
	}
}

// Axpys2 is Axpys on two rows at once, dst0 with c0 and dst1 with c1, over
// the same rows of a, each bit for bit what Axpys gives it: a block of a
// read once serves both, and their sums run in parallel chains.
func Axpys2(dst0, dst1, c0, c1, a []float64, stride int) {
	if len(dst1) != len(dst0) || len(c1) != len(c0) {
		panic("kernels: axpys2: rows of unequal lengths")
	}
	if len(c0) == 0 {
		return
	}
	if (len(c0)-1)*stride+len(dst0) > len(a) {
		panic("kernels: axpys2: rows past the Matrix")
	}
	if haveAVX {
		axpys2AVX(dst0, dst1, c0, c1, a, stride)
		return
	}
	Axpys(dst0, c0, a, stride)
	Axpys(dst1, c1, a, stride)
}

// impl is gonum's native BLAS, called directly (blas64 adds an interface
// call and argument structs per call, which show at the sampler's sizes).
var impl gonum.Implementation

// Matrix is a row-major (rows, cols) view of data with the given row
// stride, the blas64 form Gemm takes: column blocks of a wider Matrix are
// views with stride > cols.
type Matrix = blas64.General

// View returns the (rows, cols) Matrix of data starting at its element
// off, rows stride apart.
func View(data []float64, off, rows, cols, stride int) Matrix {
	if rows == 0 || cols == 0 {
		return Matrix{Rows: rows, Cols: cols, Stride: max(stride, 1), Data: nil}
	}
	return Matrix{Rows: rows, Cols: cols, Stride: stride, Data: data[off : off+(rows-1)*stride+cols]}
}

// Dense returns the contiguous (rows, cols) Matrix held by data.
func Dense(data []float64, rows, cols int) Matrix { return View(data, 0, rows, cols, cols) }

// Gemm computes c = alpha op(a) op(b) + beta c, op a transpose when the
// flag says so. Empty products leave beta c.
func Gemm(transA, transB bool, alpha float64, a, b Matrix, beta float64, c Matrix) {
	if c.Rows == 0 || c.Cols == 0 {
		return
	}
	inner := a.Cols
	if transA {
		inner = a.Rows
	}
	if inner == 0 {
		if beta != 1 {
			for i := 0; i < c.Rows; i++ {
				row := c.Data[i*c.Stride : i*c.Stride+c.Cols]
				for j := range row {
					row[j] *= beta
				}
			}
		}
		return
	}
	if haveAVX && alpha == 1 && !(transA && transB) {
		gemmRows(transA, transB, a, b, beta, c)
		return
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	blas64.Gemm(ta, tb, alpha, a, b, beta, c)
}

// gemmRows is Gemm with alpha 1 on the vector kernels, rows of c split
// over the cores: c[i] = beta c[i] + op(a)[i] op(b), by Axpys over b's
// rows or, when b is transposed, by Dots over them. gonum's serial kernels
// underneath blas64.Gemm are two-wide SSE2 without fused multiply-adds:
// the attention's tables and their gradients spent a third of the windows
// pass in them.
//
// The loops are blocked so that b is read from the first-level cache: a
// block of b's rows and columns (gemmBlock bytes) is applied to a block
// of c's rows (gemmRowBlock) before the next. Each element of c still
// takes its products in the order of the inner dimension, as one row's
// Axpys or Dots over the whole of it would (Axpys keeps a running sum
// per element, stored between blocks; Dots' sums are each row's own),
// so the result is the unblocked loop's bit for bit
// (TestGemmBlockedIsRowByRow). Unblocked, each row of c read all of b:
// from the third-level cache for dW_all = E_u^T dT_E at the paper's size
// (2 MB), at a sixth of the machine's multiply-add rate.
func gemmRows(transA, transB bool, a, b Matrix, beta float64, c Matrix) {
	inner := a.Cols
	if transA {
		inner = a.Rows
	}
	grain := max(1, (1<<16)/max(1, c.Cols*inner)) // rows per chunk: about 64k multiply-adds
	ParallelFor(c.Rows, grain, func(lo, hi int) {
		// The chunk's rows of op(a), gathered when a is transposed, and
		// a row of products for beta != 0 when b is: scratch kept from
		// call to call (at the paper's size dW_all's columns of E_u are a
		// third of a megabyte a core, every fill).
		sp := gemmScratch.Get().(*[]float64)
		defer gemmScratch.Put(sp)
		n := c.Cols
		if transA {
			n += (hi - lo) * inner
		}
		*sp = Grow(*sp, n)
		tmp, xs := (*sp)[:c.Cols], (*sp)[c.Cols:]
		x := func(i int) []float64 { return a.Data[i*a.Stride : i*a.Stride+inner] }
		if transA {
			for k := range inner {
				col := a.Data[k*a.Stride:]
				for i := lo; i < hi; i++ {
					xs[(i-lo)*inner+k] = col[i]
				}
			}
			x = func(i int) []float64 { return xs[(i-lo)*inner : (i-lo+1)*inner] }
		}
		if transB { // row[j] = beta row[j] + x . b[j], b[j] row j of b
			jb := max(2, gemmBlock/(8*inner)) // rows of b a block
			for i0 := lo; i0 < hi; i0 += gemmRowBlock {
				i1 := min(hi, i0+gemmRowBlock)
				for j0 := 0; j0 < c.Cols; j0 += jb {
					j1 := min(c.Cols, j0+jb)
					for i := i0; i < i1; i++ {
						row := c.Data[i*c.Stride+j0 : i*c.Stride+j1]
						if beta == 0 {
							Dots(row, x(i), b.Data[j0*b.Stride:], b.Stride)
							continue
						}
						t := tmp[:j1-j0]
						Dots(t, x(i), b.Data[j0*b.Stride:], b.Stride)
						for j, v := range t {
							row[j] = beta*row[j] + v
						}
					}
				}
			}
			return
		}
		for i := lo; i < hi; i++ {
			row := c.Data[i*c.Stride : i*c.Stride+c.Cols]
			switch beta {
			case 0:
				clear(row)
			case 1:
			default:
				for j := range row {
					row[j] *= beta
				}
			}
		}
		nb := min(c.Cols, gemmCols)                 // columns of b a block
		kb := max(1, gemmBlock/(8*nb))              // rows of b a block
		for i0 := lo; i0 < hi; i0 += gemmRowBlock { // c's block: rows i0..i1, all columns
			i1 := min(hi, i0+gemmRowBlock)
			for k0 := 0; k0 < inner; k0 += kb {
				k1 := min(inner, k0+kb)
				for j0 := 0; j0 < c.Cols; j0 += nb {
					j1 := min(c.Cols, j0+nb)
					bk, i := b.Data[k0*b.Stride+j0:], i0
					for ; i+1 < i1; i += 2 {
						Axpys2(c.Data[i*c.Stride+j0:i*c.Stride+j1], c.Data[(i+1)*c.Stride+j0:(i+1)*c.Stride+j1], x(i)[k0:k1], x(i + 1)[k0:k1], bk, b.Stride)
					}
					if i < i1 {
						Axpys(c.Data[i*c.Stride+j0:i*c.Stride+j1], x(i)[k0:k1], bk, b.Stride)
					}
				}
			}
		}
	})
}

// gemmScratch holds gemmRows' scratch rows (*[]float64), one per chunk
// running.
var gemmScratch = sync.Pool{New: func() any { return new([]float64) }}

// gemmRows' blocks: about gemmBlock bytes of b, gemmCols of its columns
// (a multiple of Axpys' 16-wide blocks), applied to gemmRowBlock rows of c
// at a time.
const (
	gemmBlock    = 16 << 10
	gemmCols     = 64
	gemmRowBlock = 64
)

// Gemv computes y = alpha op(a) x + beta y, op a transpose when trans.
func Gemv(trans bool, alpha float64, a Matrix, x []float64, beta float64, y []float64) {
	if a.Rows == 0 || a.Cols == 0 {
		return
	}
	if haveAVX && alpha == 1 && (beta == 0 || beta == 1) {
		switch {
		case !trans && beta == 0: // y = a x
			Dots(y[:a.Rows], x[:a.Cols], a.Data, a.Stride)
			return
		case trans: // y = beta y + a^T x
			if beta == 0 {
				clear(y[:a.Cols])
			}
			Axpys(y[:a.Cols], x[:a.Rows], a.Data, a.Stride)
			return
		}
	}
	t := blas.NoTrans
	if trans {
		t = blas.Trans
	}
	impl.Dgemv(t, a.Rows, a.Cols, alpha, a.Data, a.Stride, x, 1, beta, y, 1)
}

// Ger adds alpha x y^T to a (len(x), len(y)).
func Ger(alpha float64, x, y []float64, a Matrix) {
	if a.Rows == 0 || a.Cols == 0 {
		return
	}
	if haveAVX && alpha == 1 {
		if len(x) < a.Rows || len(y) < a.Cols {
			panic("kernels: ger: vectors shorter than the Matrix")
		}
		gerAVX(a.Data, x[:a.Rows], y[:a.Cols], a.Stride)
		return
	}
	impl.Dger(a.Rows, a.Cols, alpha, x, 1, y, 1, a.Data, a.Stride)
}

// ParallelFor calls fn on contiguous chunks [lo, hi) covering [0, n), on
// up to GOMAXPROCS goroutines, chunks of at least grain items; it returns
// when every chunk is done. fn must treat its items independently (no
// shared accumulator), so that results do not depend on the number of
// goroutines.
//
// Every chunk runs on a goroutine of its own while the caller waits; the
// caller does not take the first. A goroutine started by go lands in its
// P's runnext slot, and an idle P steals from that slot only after
// usleep(3) in the runtime's runqgrab (Go 1.26 runtime/proc.go), which
// Linux stretches to about 55 us by its default 50 us timer slack; the
// idle P tries that slot last. With the caller working on its own chunk,
// the other chunk waited about 100 us for the second core, and chunks
// shorter than that ran one after the other: BenchmarkParallelForFork
// measures both forms.
func ParallelFor(n, grain int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n/max(grain, 1))
	if w <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	chunk := (n + w - 1) / w
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		wg.Go(func() { fn(lo, min(n, lo+chunk)) })
	}
	wg.Wait()
}

// ParallelEach calls fn(i) for every i < n on up to GOMAXPROCS goroutines,
// each taking the next item when it is done with one: for items of very
// unequal cost, such as rollouts. fn must treat its items independently.
// The caller waits while they run, as in ParallelFor.
func ParallelEach(n int, fn func(i int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	if w <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			fn(i)
		}
	}
	var wg sync.WaitGroup
	for range w {
		wg.Go(work)
	}
	wg.Wait()
}

// BlockSum adds to out (len m) the sum over items [0, n) of part(i, acc),
// each call adding item i's contribution to the length-m accumulator acc.
// Items are summed in fixed blocks of sumBlock, blocks in parallel, and the
// block sums in block order, so the result does not depend on the number
// of goroutines. scratch is grown as needed and returned for reuse.
func BlockSum(out []float64, n int, scratch []float64, part func(i int, acc []float64)) []float64 {
	m := len(out)
	blocks := (n + sumBlock - 1) / sumBlock
	if cap(scratch) < blocks*m {
		scratch = make([]float64, blocks*m)
	}
	scratch = scratch[:blocks*m]
	clear(scratch)
	ParallelFor(blocks, 1, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			acc := scratch[k*m : (k+1)*m]
			for i := k * sumBlock; i < min(n, (k+1)*sumBlock); i++ {
				part(i, acc)
			}
		}
	})
	for k := 0; k < blocks; k++ {
		AddTo(out, scratch[k*m:(k+1)*m])
	}
	return scratch
}

// sumBlock is the number of items BlockSum sums serially.
const sumBlock = 256

// Grow returns s resliced to n elements, reallocated when too small; the
// contents are not preserved.
func Grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// SumSquares returns the sum of the squares of x, in four interleaved
// partial sums: NaN or +Inf when an element is NaN or infinite (or when
// the squares overflow), so one pass both measures a gradient's norm and
// finds whether every element is finite.
func SumSquares(x []float64) float64 {
	var s0, s1, s2, s3 float64
	n4 := len(x) &^ 3
	for i := 0; i < n4; i += 4 {
		s0 += x[i] * x[i]
		s1 += x[i+1] * x[i+1]
		s2 += x[i+2] * x[i+2]
		s3 += x[i+3] * x[i+3]
	}
	for _, v := range x[n4:] {
		s0 += v * v
	}
	return (s0 + s1) + (s2 + s3)
}
