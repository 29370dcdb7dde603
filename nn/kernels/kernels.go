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

// gemmRows is Gemm with alpha 1 on the vector kernels, row by row of c on
// all cores: c[i] = beta c[i] + op(a)[i] op(b), one Axpys over b's rows
// (its 16-wide blocks kept in registers over the whole inner dimension)
// or, when b is transposed, one Dots over them. gonum's serial kernels
// underneath blas64.Gemm are two-wide SSE2 without fused multiply-adds:
// the attention's tables and their gradients spent a third of the windows
// pass in them.
func gemmRows(transA, transB bool, a, b Matrix, beta float64, c Matrix) {
	inner := a.Cols
	if transA {
		inner = a.Rows
	}
	grain := max(1, (1<<16)/max(1, c.Cols*inner)) // rows per chunk: about 64k multiply-adds
	ParallelFor(c.Rows, grain, func(lo, hi int) {
		var x, tmp []float64
		if transA {
			x = make([]float64, inner)
		}
		if transB && beta != 0 {
			tmp = make([]float64, c.Cols)
		}
		for i := lo; i < hi; i++ {
			row := c.Data[i*c.Stride : i*c.Stride+c.Cols]
			if transA { // column i of a
				for k := range x {
					x[k] = a.Data[k*a.Stride+i]
				}
			} else {
				x = a.Data[i*a.Stride : i*a.Stride+inner]
			}
			if transB { // row[j] = beta row[j] + x . b[j]
				if beta == 0 {
					Dots(row, x, b.Data, b.Stride)
					continue
				}
				Dots(tmp, x, b.Data, b.Stride)
				for j, v := range tmp {
					row[j] = beta*row[j] + v
				}
				continue
			}
			switch beta {
			case 0:
				clear(row)
			case 1:
			default:
				for j := range row {
					row[j] *= beta
				}
			}
			Axpys(row, x, b.Data, b.Stride)
		}
	})
}

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
// up to GOMAXPROCS goroutines (the caller's included), chunks of at least
// grain items; it returns when every chunk is done. fn must treat its
// items independently (no shared accumulator), so that results do not
// depend on the number of goroutines.
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
	for lo := chunk; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo int) {
			defer wg.Done()
			fn(lo, min(n, lo+chunk))
		}(lo)
	}
	fn(0, min(n, chunk))
	wg.Wait()
}

// ParallelEach calls fn(i) for every i < n on up to GOMAXPROCS goroutines
// (the caller's included), each taking the next item when it is done with
// one: for items of very unequal cost, such as rollouts. fn must treat its
// items independently.
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
	for range w - 1 {
		wg.Go(work)
	}
	work()
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
