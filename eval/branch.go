package eval

import (
	"gonum.org/v1/gonum/blas"
	lapack "gonum.org/v1/gonum/lapack/gonum"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// A branch of depth k is a chain of 2k+1 edge groups (entry connector,
// diamond 1, connector, ..., leaf connector); group g has m_g parallel edges,
// so m_g forward states f_g and m_g backward states b_g. A forward state of
// group g moves to b_g or f_{g+1}; a backward state of group g moves to
// b_{g-1} or f_g. The chain restricted to a branch is therefore block
// tridiagonal in the groups, and each block couples only m_g x m_g pieces:
// one small solve per group (the Schur complement I - P^{bf} X below)
// eliminates it, so a branch costs O(sum_g m_g^3), linear in its states
// for bounded multiplicity. The fork-incoming state b_0 is absorbing for the
// branch; on the target branch so is the leaf-incoming state f_{2k}.

// Right-hand sides of the value system x = c + Q x on one branch.
const (
	colTime    = iota // expected transitions until absorption
	colReturn         // probability of absorbing at the fork-incoming state
	colSuccess        // probability of absorbing at the target leaf
	numCols
)

// blocks reads the probability blocks of a branch from the policy table.
type blocks struct {
	b       tasks.Branch
	probs   []float64
	offsets []int
}

// pfb is P(f_g[i] -> b_g[j]), pff is P(f_g[i] -> f_{g+1}[j]),
// pbb is P(b_g[i] -> b_{g-1}[j]), pbf is P(b_g[i] -> f_g[j]) (rows of the
// CSR list b_{g-1} or b_g first, then the next forward group: ascending ids).
func (k blocks) pfb(g, i, j int) float64 { return k.probs[k.offsets[k.b.Fwd(g, i)]+j] }
func (k blocks) pff(g, i, j int) float64 {
	return k.probs[k.offsets[k.b.Fwd(g, i)]+k.b.M(g)+j]
}
func (k blocks) pbb(g, i, j int) float64 { return k.probs[k.offsets[k.b.Bwd(g, i)]+j] }
func (k blocks) pbf(g, i, j int) float64 {
	return k.probs[k.offsets[k.b.Bwd(g, i)]+k.b.M(g-1)+j]
}

// scratch holds the per-group elimination factors of one branch solve.
type scratch struct {
	y, v   [][]float64 // per group: Y (2m x R), V (2m x m_prev), row-major
	x, s   []float64   // m x m work matrices
	rhs    []float64
	tmp    []float64
	ipiv   []int
	lapack lapack.Implementation
}

func grow(buf []float64, n int) []float64 {
	if cap(buf) < n {
		return make([]float64, n)
	}
	buf = buf[:n]
	for i := range buf {
		buf[i] = 0
	}
	return buf
}

func (w *scratch) ensure(groups, maxM int) {
	if len(w.y) < groups {
		w.y = append(w.y, make([][]float64, groups-len(w.y))...)
		w.v = append(w.v, make([][]float64, groups-len(w.v))...)
	}
	w.x = grow(w.x, maxM*maxM)
	w.s = grow(w.s, maxM*maxM)
	if cap(w.ipiv) < maxM {
		w.ipiv = make([]int, maxM)
	}
}

// solve overwrites rhs (m x nrhs) with S^{-1} rhs, S (m x m) in w.s.
func (w *scratch) solve(m, nrhs int, rhs []float64) bool {
	if m == 1 {
		if w.s[0] == 0 {
			return false
		}
		for j := 0; j < nrhs; j++ {
			rhs[j] /= w.s[0]
		}
		return true
	}
	if !w.lapack.Dgetrf(m, m, w.s, m, w.ipiv[:m]) {
		return false
	}
	w.lapack.Dgetrs(blas.NoTrans, m, nrhs, w.s, m, w.ipiv[:m], rhs, nrhs)
	return true
}

// values solves x = c + Q x on branch b for the three right-hand sides and
// writes them at the branch's global state ids in out[col]. With target
// false only colTime is solved (the walk returns to the fork surely).
func (w *scratch) values(k blocks, target bool, out *[numCols][]float64) bool {
	b := k.b
	G := b.Groups()
	R := 1
	if target {
		R = numCols
	}
	w.ensure(G, maxMulti(b))
	for g := G - 1; g >= 0; g-- {
		m := b.M(g)
		mp := 0
		if g > 0 {
			mp = b.M(g - 1)
		}
		y := grow(w.y[g], 2*m*R)
		v := grow(w.v[g], 2*m*mp)
		yf, yb := y[:m*R], y[m*R:]
		vf, vb := v[:m*mp], v[m*mp:]
		x := w.x[:m*m]
		for i := range x {
			x[i] = 0
		}
		// r^f = c^f + P^{ff} Y^f_{g+1};  X = P^{fb} + P^{ff} V^f_{g+1}.
		leafAbsorbs := target && g == G-1
		for i := 0; i < m; i++ {
			if leafAbsorbs {
				yf[i*R+colSuccess] = 1
				continue
			}
			yf[i*R+colTime] = 1
			for j := 0; j < m; j++ {
				x[i*m+j] = k.pfb(g, i, j)
			}
			if g == G-1 {
				continue
			}
			mn := b.M(g + 1)
			ynf, vnf := w.y[g+1][:mn*R], w.v[g+1][:mn*m]
			for l := 0; l < mn; l++ {
				p := k.pff(g, i, l) // (m x mn) x (mn x R) and (mn x m)
				for c := 0; c < R; c++ {
					yf[i*R+c] += p * ynf[l*R+c]
				}
				for j := 0; j < m; j++ {
					x[i*m+j] += p * vnf[l*m+j]
				}
			}
		}
		if g == 0 {
			// b_0 (fork-incoming) absorbs: b_0 = c^b, f_0 = r^f + X c^b.
			if target {
				yb[colReturn] = 1
				yf[colReturn] += x[0]
			}
			w.y[g], w.v[g] = y, v
			continue
		}
		// (I - P^{bf} X) b_g = c^b + P^{bf} r^f + P^{bb} b_{g-1}.
		s := w.s[:m*m]
		rhs := grow(w.rhs, m*(R+mp))
		w.rhs = rhs
		nr := R + mp
		for i := 0; i < m; i++ {
			rhs[i*nr+colTime] = 1
			for j := 0; j < m; j++ {
				p := k.pbf(g, i, j)
				s[i*m+j] = 0
				for c := 0; c < R; c++ {
					rhs[i*nr+c] += p * yf[j*R+c]
				}
			}
			for j := 0; j < m; j++ {
				acc := 0.0
				for l := 0; l < m; l++ {
					acc += k.pbf(g, i, l) * x[l*m+j]
				}
				s[i*m+j] = -acc
			}
			s[i*m+i]++
			for j := 0; j < mp; j++ {
				rhs[i*nr+R+j] = k.pbb(g, i, j)
			}
		}
		if !w.solve(m, nr, rhs) {
			return false
		}
		for i := 0; i < m; i++ {
			copy(yb[i*R:(i+1)*R], rhs[i*nr:i*nr+R])
			copy(vb[i*mp:(i+1)*mp], rhs[i*nr+R:(i+1)*nr])
		}
		// Y^f = r^f + X Y^b; V^f = X V^b.
		for i := 0; i < m; i++ {
			for l := 0; l < m; l++ {
				xl := x[i*m+l]
				for c := 0; c < R; c++ {
					yf[i*R+c] += xl * yb[l*R+c]
				}
				for j := 0; j < mp; j++ {
					vf[i*mp+j] += xl * vb[l*mp+j]
				}
			}
		}
		w.y[g], w.v[g] = y, v
	}
	// Root to leaf: z_g = Y_g + V_g b_{g-1}.
	for g := 0; g < G; g++ {
		m := b.M(g)
		y, v := w.y[g], w.v[g]
		mp := 0
		if g > 0 {
			mp = b.M(g - 1)
		}
		for r := 0; r < 2*m; r++ {
			id := b.Start[g] + r // forward rows then backward rows, as the ids
			for c := 0; c < R; c++ {
				val := y[r*R+c]
				for j := 0; j < mp; j++ {
					val += v[r*mp+j] * out[c][b.Bwd(g-1, j)]
				}
				out[c][id] = val
			}
		}
	}
	return true
}

func maxMulti(b tasks.Branch) int {
	m := 1
	for _, x := range b.Multi {
		m = max(m, x)
	}
	return m
}
