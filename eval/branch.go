package eval

import (
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
// The CSR row of a forward state f_g[i] lists b_g then f_{g+1}; the row of a
// backward state b_g[i] lists b_{g-1} then f_g (ascending ids), so
//
//	f row: [ P^{fb}_g (m_g) | P^{ff}_g (m_{g+1}) ]
//	b row: [ P^{bb}_g (m_{g-1}) | P^{bf}_g (m_g) ]
type blocks struct {
	b       tasks.Branch
	probs   []float64
	offsets []int
}

// fRows and bRows fill dst with the CSR rows of the forward and backward
// states of group g.
func (k blocks) fRows(g int, dst [][]float64) [][]float64 { return k.rows(k.b.Fwd(g, 0), g, dst) }
func (k blocks) bRows(g int, dst [][]float64) [][]float64 { return k.rows(k.b.Bwd(g, 0), g, dst) }

// rows fills dst with the rows of the m_g consecutive states from first.
func (k blocks) rows(first, g int, dst [][]float64) [][]float64 {
	dst = dst[:0]
	for s := first; s < first+k.b.M(g); s++ {
		dst = append(dst, k.probs[k.offsets[s]:k.offsets[s+1]])
	}
	return dst
}

// scratch holds the per-group elimination factors of one branch solve.
type scratch struct {
	y, v [][]float64 // per group: Y (2m x R), V (2m x m_prev), row-major
	// def[g][i] is the probability that the walk from f_g[i] is absorbed at
	// the target before it comes back to b_g (0 off the target branch): the
	// row deficit of X, carried additively for the GTH elimination.
	def     [][]float64
	x, s    []float64 // m x m work matrices
	deficit []float64
	rhs     []float64
	// Row views of the current group's and its neighbours' states.
	fr, br, nr [][]float64
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
		w.def = append(w.def, make([][]float64, groups-len(w.def))...)
	}
	w.x = grow(w.x, maxM*maxM)
	w.s = grow(w.s, maxM*maxM)
	w.deficit = grow(w.deficit, maxM)
}

// values solves x = c + Q x on branch b for the three right-hand sides and
// writes them at the branch's global state ids in out[col]. With target
// false only colTime is solved (the walk returns to the fork surely). With
// target true it also writes, at the ids of the forward states, the
// deficits that visits needs (defOut).
func (w *scratch) values(k blocks, target bool, out *[numCols][]float64, defOut []float64) bool {
	b := k.b
	G := b.Groups()
	R := 1
	if target {
		R = numCols
	}
	w.ensure(G, maxMulti(b))
	for g := G - 1; g >= 0; g-- {
		m, mp := b.M(g), prevM(b, g)
		y := grow(w.y[g], 2*m*R)
		v := grow(w.v[g], 2*m*mp)
		def := grow(w.def[g], m)
		w.y[g], w.v[g], w.def[g] = y, v, def
		yf, yb := y[:m*R], y[m*R:]
		vf, vb := v[:m*mp], v[m*mp:]
		x := grow(w.x, m*m)
		// r^f = c^f + P^{ff} Y^f_{g+1};  X = P^{fb} + P^{ff} V^f_{g+1}.
		w.fr = k.fRows(g, w.fr)
		for i, row := range w.fr {
			if target && g == G-1 { // the target leaf absorbs
				yf[i*R+colSuccess], def[i] = 1, 1
				continue
			}
			yf[i*R+colTime] = 1
			copy(x[i*m:(i+1)*m], row[:m])
			if g == G-1 {
				continue
			}
			mn := b.M(g + 1)
			ynf, vnf := w.y[g+1][:mn*R], w.v[g+1][:mn*m]
			for l, p := range row[m : m+mn] { // (m x mn) x (mn x R) and (mn x m)
				for c := range R {
					yf[i*R+c] += p * ynf[l*R+c]
				}
				for j := range m {
					x[i*m+j] += p * vnf[l*m+j]
				}
				if target {
					def[i] += p * ynf[l*R+colSuccess]
				}
			}
		}
		if g == 0 {
			// b_0 (fork-incoming) absorbs: b_0 = c^b, f_0 = r^f + X c^b.
			if target {
				yb[colReturn] = 1
				yf[colReturn] += x[0]
				copy(defOut[b.Fwd(g, 0):], def)
			}
			continue
		}
		// (I - P^{bf} X) b_g = c^b + P^{bf} r^f + P^{bb} b_{g-1}. The row
		// sums of S = I - P^{bf} X are P^{bb} 1 + P^{bf} def (GTH).
		nr := R + mp
		s := grow(w.s, m*m)
		deficit := grow(w.deficit, m)
		rhs := grow(w.rhs, m*nr)
		w.rhs = rhs
		w.br = k.bRows(g, w.br)
		for i, row := range w.br {
			rhs[i*nr+colTime] = 1
			for l, p := range row[mp : mp+m] { // P^{bf}: (m x m)
				for c := range R {
					rhs[i*nr+c] += p * yf[l*R+c]
				}
				for j := range m {
					s[i*m+j] -= p * x[l*m+j]
				}
				deficit[i] += p * def[l]
			}
			for j, p := range row[:mp] { // P^{bb}: (m x mp)
				rhs[i*nr+R+j] = p
				deficit[i] += p
			}
		}
		if !gthFactor(s, deficit, m) {
			return false
		}
		gthSolve(s, m, rhs, nr)
		if target {
			copy(defOut[b.Fwd(g, 0):], def)
		}
		for i := range m {
			copy(yb[i*R:(i+1)*R], rhs[i*nr:i*nr+R])
			copy(vb[i*mp:(i+1)*mp], rhs[i*nr+R:(i+1)*nr])
		}
		// Y^f = r^f + X Y^b; V^f = X V^b.
		for i := range m {
			for l := range m {
				xl := x[i*m+l]
				for c := range R {
					yf[i*R+c] += xl * yb[l*R+c]
				}
				for j := range mp {
					vf[i*mp+j] += xl * vb[l*mp+j]
				}
			}
		}
	}
	// Root to leaf: z_g = Y_g + V_g b_{g-1}.
	for g := range G {
		m, mp := b.M(g), prevM(b, g)
		y, v := w.y[g], w.v[g]
		prev := 0 // first id of b_{g-1}: its states are contiguous
		if g > 0 {
			prev = b.Bwd(g-1, 0)
		}
		for r := range 2 * m {
			id := b.Start[g] + r // forward rows then backward rows, as the ids
			for c := range R {
				val := y[r*R+c]
				for j := range mp {
					val += v[r*mp+j] * out[c][prev+j]
				}
				out[c][id] = val
			}
		}
	}
	return true
}

// prevM is the multiplicity of the group before g (0 before the first).
func prevM(b tasks.Branch, g int) int {
	if g == 0 {
		return 0
	}
	return b.M(g - 1)
}

func maxMulti(b tasks.Branch) int {
	m := 1
	for _, x := range b.Multi {
		m = max(m, x)
	}
	return m
}
