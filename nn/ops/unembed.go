package ops

import (
	"runtime"
	"sort"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// Unembed adds the fused sparse unembedding and log-softmax op: for each
// token position n of the batch laid out by lay, holding token x, and each
// slot j < R,
//
//	z_nj = B[e] + hn_n . U[a]   (e = Offsets[x] + j, a = Next[e]) when e is in Row(x),
//	z_nj = MaskLogit            otherwise,
//	out_nj = z_nj - log sum_j' exp(z_nj')
//
// so only the valid next tokens of each position get a logit: no (N, V)
// product. hn is (N, D); U holds the output embedding of token a in row a,
// (V, D), or, transposed (the identity initialisation's layout), in column
// a, (D, V); bias is the (NNZ) table B of per-entry logits, or nil for
// none. It returns the log-probabilities (N*R).
//
// The hand-written backward keeps the forward's probabilities pi: dz = g -
// pi sum_row(g) on unmasked slots, then dhn_n = sum_j dz_nj U[a], dU[a] =
// sum over the slots whose next token is a of dz hn (grouped by next
// token, so tokens are spread over the cores without shared sums) and
// dB[e] = sum of dz over the slots of entry e. TestUnembedMatchesStock
// checks it against gorgonia's autodiff of stock.Unembed.
func Unembed(lay *Layout, hn, u, bias *G.Node, transposed bool) (*G.Node, error) {
	d := hn.Shape()[1]
	k := &unembedKernel{lay: lay, d: d, v: len(lay.offsets) - 1, transposed: transposed, hasB: bias != nil}
	in := G.Nodes{hn, u}
	if bias != nil {
		in = append(in, bias)
	}
	return applyFused("Unembed", k, tensor.Shape{lay.N() * lay.r}, in...) // (N, D), U, [B] -> (N*R)
}

// unembedKernel computes Unembed's forward and backward.
type unembedKernel struct {
	lay        *Layout
	d, v       int
	transposed bool      // U is (D, V)
	hasB       bool      // a bias table B is the third input
	pi         []float64 // (N*R) probabilities kept for the backward
	dz         []float64 // (N*R) logit gradients
}

// outputGrads writes dU[a] = sum over the slots whose next token is a of
// dz hn, U stored by row (V, D): each core takes a range of next tokens
// holding about its share of the slots, and walks the positions in order,
// adding their slots in its range, so that it reads hn (the batch's
// residual stream, megabytes) front to back rather than a row here and a
// row there. Each dU[a] still adds its slots in slot order, bit for bit
// one Axpy per slot of aslot's list.
func (k *unembedKernel) outputGrads(du, hn []float64) {
	l, d, r := k.lay, k.d, k.lay.r
	parts := max(1, min(runtime.GOMAXPROCS(0), len(l.aslot)/4096))
	kernels.ParallelFor(parts, 1, func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			// Next tokens [a0, a1): the first a whose slots before it reach
			// p / parts of them, to the first that reach (p+1) / parts.
			a0 := sort.SearchInts(l.aoff, p*len(l.aslot)/parts)
			a1 := sort.SearchInts(l.aoff, (p+1)*len(l.aslot)/parts)
			if p == parts-1 {
				a1 = k.v
			}
			if p == 0 {
				a0 = 0
			}
			clear(du[a0*d : a1*d])
			for n := range l.N() {
				h := hn[n*d : (n+1)*d]
				for j, e := range l.entries[n*r : (n+1)*r] {
					if e < 0 {
						break
					}
					if a := l.next[e]; a >= a0 && a < a1 {
						kernels.Axpy(du[a*d:(a+1)*d], k.dz[n*r+j], h)
					}
				}
			}
		}
	})
}

// row returns the output embedding of token a, row a of a (V, D) U (not
// transposed).
func (k *unembedKernel) row(u []float64, a int) []float64 { return u[a*k.d : (a+1)*k.d] }

// logit returns hn . U[a].
func (k *unembedKernel) logit(hn, u []float64, a int) float64 {
	if !k.transposed {
		return kernels.Dot(hn, k.row(u, a))
	}
	z := 0.0
	for i, h := range hn {
		z += h * u[i*k.v+a]
	}
	return z
}

func (k *unembedKernel) forward(out []float64, in [][]float64) error {
	l, d, r := k.lay, k.d, k.lay.r
	hn, u := in[0], in[1]
	var b []float64
	if k.hasB {
		b = in[2]
	}
	k.pi = kernels.Grow(k.pi, len(out))
	kernels.ParallelFor(l.N(), 64, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			h, x := hn[n*d:(n+1)*d], l.tok[n]
			e0, nv := l.offsets[x], l.offsets[x+1]-l.offsets[x] // the row's entries fill slots [0, nv)
			z, pi := out[n*r:(n+1)*r], k.pi[n*r:(n+1)*r]
			if !k.transposed { // one Dots per run of consecutive next tokens: their rows of U are one block
				for j := 0; j < nv; {
					a, j1 := l.next[e0+j], j+1
					for j1 < nv && l.next[e0+j1] == a+j1-j {
						j1++
					}
					kernels.Dots(z[j:j1], h, u[a*d:], d)
					j = j1
				}
			} else {
				for j := 0; j < nv; j++ {
					z[j] = k.logit(h, u, l.next[e0+j])
				}
			}
			if b != nil {
				for j := 0; j < nv; j++ {
					z[j] += b[e0+j]
				}
			}
			m, lse := kernels.LogSoftmax(z, pi, z[:nv])
			for j := nv; j < r; j++ { // masked: log-softmax of MaskLogit, probability exactly 0
				z[j], pi[j] = (MaskLogit-m)-lse, 0
			}
		}
	})
	return nil
}

func (k *unembedKernel) backward(grads [][]float64, in [][]float64, g []float64) error {
	l, d, r := k.lay, k.d, k.lay.r
	hn, u := in[0], in[1]
	dhn, du := grads[0], grads[1]
	next := l.next
	k.dz = kernels.Grow(k.dz, len(g))
	kernels.ParallelFor(l.N(), 64, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			gr, pi, dz := g[n*r:(n+1)*r], k.pi[n*r:(n+1)*r], k.dz[n*r:(n+1)*r]
			sum := 0.0
			for _, v := range gr {
				sum += v
			}
			dh := dhn[n*d : (n+1)*d]
			clear(dh)
			es, nv := l.entries[n*r:(n+1)*r], r
			for j, e := range es {
				if e < 0 {
					clear(dz[j:])
					nv = j
					break
				}
				dz[j] = gr[j] - pi[j]*sum
			}
			for j := 0; j < nv; {
				a, j1 := next[es[j]], j+1
				if !k.transposed {
					for j1 < nv && next[es[j1]] == a+j1-j { // a run of consecutive next tokens: one Axpys, the same sums in the same order
						j1++
					}
					kernels.Axpys(dh, dz[j:j1], u[a*d:], d)
				} else {
					for i := range dh {
						dh[i] += dz[j] * u[i*k.v+a]
					}
				}
				j = j1
			}
		}
	})
	if !k.transposed {
		k.outputGrads(du, hn)
	} else {
		kernels.ParallelFor(k.v, 16, func(lo, hi int) {
			for a := lo; a < hi; a++ {
				slots := l.aslot[l.aoff[a]:l.aoff[a+1]]
				for i := 0; i < d; i++ {
					v := 0.0
					for _, s := range slots {
						v += k.dz[s] * hn[(s/r)*d+i]
					}
					du[i*k.v+a] = v
				}
			}
		})
	}
	if k.hasB {
		db := grads[2]
		clear(db)
		for s, e := range l.entries {
			if e >= 0 {
				db[e] += k.dz[s]
			}
		}
	}
	return nil
}
