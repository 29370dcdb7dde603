package kernels

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
)

// TestVectorKernels checks dot, axpy, addTo and addTwo against plain loops
// at every length from 0 to 40 (the assembly's blocks of 16 and 4 and its
// scalar tail) and at 64 and 257, on views that do not start at a
// multiple of 4. Sums are compared to a relative 1e-14 of the sum of
// absolute terms (the kernels may add in another order, and fuse
// multiplications); element-wise sums must be exact.
func TestVectorKernels(t *testing.T) { checkVectorKernels(t) }

func checkVectorKernels(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	lens := []int{64, 257}
	for n := 0; n <= 40; n++ {
		lens = append(lens, n)
	}
	for _, n := range lens {
		x, y, z := randomVector(rng, n+1, 1)[1:], randomVector(rng, n+3, 1)[3:], randomVector(rng, n, 1)
		want, abs := 0.0, 0.0
		for i := range x {
			want, abs = want+x[i]*y[i], abs+math.Abs(x[i]*y[i])
		}
		if got := Dot(x, y); math.Abs(got-want) > 1e-14*abs {
			t.Errorf("n=%d: dot: got %v, want %v", n, got, want)
		}
		dst := append([]float64(nil), z...)
		Axpy(dst, -0.7, x)
		for i := range dst {
			if w := z[i] - 0.7*x[i]; math.Abs(dst[i]-w) > 1e-15*(math.Abs(z[i])+math.Abs(0.7*x[i])) {
				t.Errorf("n=%d: axpy[%d]: got %v, want %v", n, i, dst[i], w)
			}
		}
		copy(dst, z)
		AddTo(dst, x)
		for i := range dst {
			if w := z[i] + x[i]; dst[i] != w {
				t.Errorf("n=%d: addTo[%d]: got %v, want %v", n, i, dst[i], w)
			}
		}
		AddTwo(dst, x, y)
		for i := range dst {
			if w := x[i] + y[i]; dst[i] != w {
				t.Errorf("n=%d: addTwo[%d]: got %v, want %v", n, i, dst[i], w)
			}
		}
	}
}

// TestStridedKernels checks dots and axpys against dot and axpy row by row
// (the same rounding) on rows of every width from 0 to 21 and at 64, back
// to back and strided, with 0, 1, 2, 5 and 8 rows (dots takes two rows at a
// time, then the odd one).
func TestStridedKernels(t *testing.T) { checkStridedKernels(t) }

func checkStridedKernels(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	widths := []int{64}
	for n := 0; n <= 21; n++ {
		widths = append(widths, n)
	}
	for _, n := range widths {
		for _, shape := range [][2]int{{0, 3}, {1, 3}, {2, 0}, {5, 3}, {5, 0}, {8, 3}} {
			rows, stride := shape[0], n+shape[1]
			a, x, c := randomVector(rng, rows*stride, 1), randomVector(rng, n, 1), randomVector(rng, rows, 1)
			y := make([]float64, rows)
			Dots(y, x, a, stride)
			got, want := randomVector(rng, n, 1), make([]float64, n)
			copy(want, got)
			Axpys(got, c, a, stride)
			for i := range rows {
				row := a[i*stride : i*stride+n]
				if w := Dot(x, row); y[i] != w {
					t.Errorf("width %d, %d rows of stride %d: dots[%d]: got %v, want %v", n, rows, stride, i, y[i], w)
				}
				Axpy(want, c[i], row)
			}
			for j := range want {
				if got[j] != want[j] {
					t.Errorf("width %d, %d rows of stride %d: axpys[%d]: got %v, want %v", n, rows, stride, j, got[j], want[j])
				}
			}
		}
	}
}

// TestVectorKernelsRefuseUnequalLengths: a length mismatch panics rather
// than reading past a slice.
func TestVectorKernelsRefuseUnequalLengths(t *testing.T) {
	for name, fn := range map[string]func(){
		"dot":    func() { Dot(make([]float64, 5), make([]float64, 4)) },
		"axpy":   func() { Axpy(make([]float64, 5), 1, make([]float64, 4)) },
		"addTo":  func() { AddTo(make([]float64, 5), make([]float64, 4)) },
		"addTwo": func() { AddTwo(make([]float64, 5), make([]float64, 5), make([]float64, 4)) },
		"dots":   func() { Dots(make([]float64, 2), make([]float64, 4), make([]float64, 8), 5) },
		"axpys":  func() { Axpys(make([]float64, 4), make([]float64, 2), make([]float64, 8), 5) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("got no panic, want one")
				}
			}()
			fn()
		})
	}
}

// randomVector returns n values drawn from N(0, scale^2).
func randomVector(rng *rand.Rand, n int, scale float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = scale * rng.NormFloat64()
	}
	return x
}

// TestMatrixKernels checks Gemm (every transposition, beta 0, 1 and
// -0.5, alpha 1 and 0.3), Gemv (both, beta 0 and 1) and Ger on strided
// views against plain loops, to a relative 1e-13 of the sum of absolute
// terms, at shapes around the vector kernels' blocks.
func TestMatrixKernels(t *testing.T) { checkMatrixKernels(t) }

func checkMatrixKernels(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 2}, {7, 17, 33}, {64, 192, 40}, {5, 64, 200}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, beta := range []float64{0, 1, -0.5} {
					for _, alpha := range []float64{1, 0.3} {
						a, b, c := gemmOperands(rng, m, n, k, ta, tb)
						want := make([]float64, m*n)
						abs := make([]float64, m*n)
						for i := range m {
							for j := range n {
								s, sa := beta*c.Data[i*c.Stride+j], math.Abs(beta*c.Data[i*c.Stride+j])
								for l := range k {
									ai, bi := i*a.Stride+l, l*b.Stride+j
									if ta {
										ai = l*a.Stride + i
									}
									if tb {
										bi = j*b.Stride + l
									}
									av, bv := a.Data[ai], b.Data[bi]
									s, sa = s+alpha*av*bv, sa+math.Abs(alpha*av*bv)
								}
								want[i*n+j], abs[i*n+j] = s, sa
							}
						}
						Gemm(ta, tb, alpha, a, b, beta, c)
						for i := range m {
							for j := range n {
								if got := c.Data[i*c.Stride+j]; math.Abs(got-want[i*n+j]) > 1e-13*abs[i*n+j] {
									t.Fatalf("gemm %v (transA %v, transB %v, alpha %v, beta %v) [%d,%d]: got %v, want %v", sh, ta, tb, alpha, beta, i, j, got, want[i*n+j])
								}
							}
						}
					}
				}
			}
		}
		a := View(randomVector(rng, m*(n+2), 1), 0, m, n, n+2)
		for _, trans := range []bool{false, true} {
			for _, beta := range []float64{0, 1} {
				xl, yl := n, m
				if trans {
					xl, yl = m, n
				}
				x, y := randomVector(rng, xl, 1), randomVector(rng, yl, 1)
				want := make([]float64, yl)
				for i := range yl {
					s := beta * y[i]
					for l := range xl {
						ai := i*a.Stride + l
						if trans {
							ai = l*a.Stride + i
						}
						s += a.Data[ai] * x[l]
					}
					want[i] = s
				}
				Gemv(trans, 1, a, x, beta, y)
				for i := range y {
					if math.Abs(y[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
						t.Fatalf("gemv %v (trans %v, beta %v) [%d]: got %v, want %v", sh, trans, beta, i, y[i], want[i])
					}
				}
			}
		}
		for _, alpha := range []float64{1, -0.7} {
			x, y := randomVector(rng, m, 1), randomVector(rng, n, 1)
			want := append([]float64(nil), a.Data...)
			for i := range m {
				for j := range n {
					want[i*a.Stride+j] += alpha * x[i] * y[j]
				}
			}
			Ger(alpha, x, y, a)
			for i, v := range a.Data {
				if math.Abs(v-want[i]) > 1e-14*(1+math.Abs(want[i])) {
					t.Fatalf("ger %v alpha %v [%d]: got %v, want %v", sh, alpha, i, v, want[i])
				}
			}
		}
	}
}

// TestParallelEach: every item is visited exactly once, on 1 to 4
// goroutines, for no items, fewer items than goroutines and many.
func TestParallelEach(t *testing.T) {
	for procs := 1; procs <= 4; procs++ {
		for _, n := range []int{0, 1, 3, 1000} {
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				seen := make([]atomic.Int32, n)
				ParallelEach(n, func(i int) { seen[i].Add(1) })
				for i := range seen {
					if c := seen[i].Load(); c != 1 {
						t.Errorf("%d goroutines, %d items: item %d visited %d times", procs, n, i, c)
					}
				}
			}()
		}
	}
}

// BenchmarkGemm times Gemm at the shapes of the windows pass's attention
// at the paper's size (ops.attentionKernel, D=64, one head, W=3D, about
// 2,600 distinct tokens a fill): the token tables E_u W_all, dW_all =
// E_u^T dT_E over half the tokens, and dE_u += dT_E W_all^T. It reports
// multiply-adds per second on all cores.
func BenchmarkGemm(b *testing.B) {
	const d, w, u = 64, 192, 2600
	for _, c := range []struct {
		name    string
		ta, tb  bool
		m, n, k int
		beta    float64
	}{
		{"tables", false, false, u, w, d, 0},
		{"dWall", true, false, d, w, u / 2, 0},
		{"dE", false, true, u, d, w, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			ar, ac := c.m, c.k
			if c.ta {
				ar, ac = c.k, c.m
			}
			br, bc := c.k, c.n
			if c.tb {
				br, bc = c.n, c.k
			}
			a, bm, cm := Dense(randomVector(rng, ar*ac, 1), ar, ac), Dense(randomVector(rng, br*bc, 1), br, bc), Dense(randomVector(rng, c.m*c.n, 1), c.m, c.n)
			for b.Loop() {
				Gemm(c.ta, c.tb, 1, a, bm, c.beta, cm)
			}
			b.ReportMetric(float64(c.m*c.n*c.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
		})
	}
}

// TestGemmBlockedIsRowByRow checks that gemmRows' blocked loops give, bit
// for bit, what one Axpys or Dots per row of c over the whole inner
// dimension gives (the loop before the blocks), at shapes that cut every
// kind of block and tail, the windows pass's among them.
func TestGemmBlockedIsRowByRow(t *testing.T) {
	if !haveAVX {
		t.Skip("no AVX2 and FMA: Gemm goes to gonum")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 2}, {7, 17, 33}, {64, 192, 1300}, {131, 64, 192}, {65, 197, 67}, {2, 300, 40}, {9, 63, 513}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				if ta && tb {
					continue
				}
				for _, beta := range []float64{0, 1, -0.5} {
					a, b, c := gemmOperands(rng, m, n, k, ta, tb)
					want := View(slices.Clone(c.Data), 0, m, n, n+3)
					gemmRowByRow(ta, tb, a, b, beta, want)
					gemmRows(ta, tb, a, b, beta, c)
					for i := range m {
						for j := range n {
							if g, w := c.Data[i*c.Stride+j], want.Data[i*c.Stride+j]; math.Float64bits(g) != math.Float64bits(w) {
								t.Fatalf("gemm %v (transA %v, transB %v, beta %v) [%d,%d]: got %v, want %v bit for bit", sh, ta, tb, beta, i, j, g, w)
							}
						}
					}
				}
			}
		}
	}
}

// gemmOperands returns random strided views a, b and c for c = op(a)
// op(b) + c, op(a) (m, k) and op(b) (k, n), transposed as ta and tb say.
func gemmOperands(rng *rand.Rand, m, n, k int, ta, tb bool) (a, b, c Matrix) {
	ar, ac := m, k
	if ta {
		ar, ac = k, m
	}
	br, bc := k, n
	if tb {
		br, bc = n, k
	}
	a = View(randomVector(rng, ar*(ac+2), 1), 0, ar, ac, ac+2)
	b = View(randomVector(rng, br*(bc+1), 1), 0, br, bc, bc+1)
	c = View(randomVector(rng, m*(n+3), 1), 0, m, n, n+3)
	return a, b, c
}

// gemmRowByRow is gemmRows without blocks: each row of c from one Axpys or
// Dots over the whole inner dimension.
func gemmRowByRow(transA, transB bool, a, b Matrix, beta float64, c Matrix) {
	inner := a.Cols
	if transA {
		inner = a.Rows
	}
	x := make([]float64, inner)
	tmp := make([]float64, c.Cols)
	for i := range c.Rows {
		row := c.Data[i*c.Stride : i*c.Stride+c.Cols]
		for k := range x {
			if transA {
				x[k] = a.Data[k*a.Stride+i]
			} else {
				x[k] = a.Data[i*a.Stride+k]
			}
		}
		if transB {
			Dots(tmp, x, b.Data, b.Stride)
			for j, v := range tmp {
				if beta == 0 {
					row[j] = v
				} else {
					row[j] = beta*row[j] + v
				}
			}
			continue
		}
		for j := range row {
			if beta == 0 {
				row[j] = 0
			} else if beta != 1 {
				row[j] *= beta
			}
		}
		Axpys(row, x, b.Data, b.Stride)
	}
}

// TestAxpys2IsTwoAxpys checks Axpys2 against two Axpys bit for bit at every
// row length from 0 to 40 (the 16- and 4-wide blocks and the scalar tail)
// and 1 to 5 rows of a.
func TestAxpys2IsTwoAxpys(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 40; n++ {
		for k := 1; k <= 5; k++ {
			stride := n + 3
			a := randomVector(rng, (k-1)*stride+n, 1)
			c0, c1 := randomVector(rng, k, 1), randomVector(rng, k, 1)
			d0, d1 := randomVector(rng, n, 1), randomVector(rng, n, 1)
			w0, w1 := slices.Clone(d0), slices.Clone(d1)
			Axpys(w0, c0, a, stride)
			Axpys(w1, c1, a, stride)
			Axpys2(d0, d1, c0, c1, a, stride)
			for i := range n {
				if math.Float64bits(d0[i]) != math.Float64bits(w0[i]) || math.Float64bits(d1[i]) != math.Float64bits(w1[i]) {
					t.Fatalf("length %d, %d rows, element %d: got %v, %v, want %v, %v", n, k, i, d0[i], d1[i], w0[i], w1[i])
				}
			}
		}
	}
}
