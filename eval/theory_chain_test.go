package eval

import (
	"fmt"
	"math"
)

// An independent reference for the closed forms of theory*.go: the paper's
// Markov chain on aggregated states (Section 4.1: all L multiedges of a
// diamond direction as one state), solved by dense Gaussian elimination.

// thChain is a finite Markov chain given by its transition lists.
type thChain struct{ rows [][]thArc }

type thArc struct {
	to int
	p  float64
}

func newThChain(n int) *thChain { return &thChain{rows: make([][]thArc, n)} }

func (c *thChain) arc(from, to int, p float64) {
	if p != 0 {
		c.rows[from] = append(c.rows[from], thArc{to, p})
	}
}

// solve returns x on the transient states (0 on absorbing ones) of
// (I - P_TT) x = rhs, or of its transpose when transpose is set.
func (c *thChain) solve(absorbing []bool, rhs []float64, transpose bool) []float64 {
	n := len(c.rows)
	idx := make([]int, n)
	var ids []int
	for s := range n {
		idx[s] = -1
		if !absorbing[s] {
			idx[s] = len(ids)
			ids = append(ids, s)
		}
	}
	m := len(ids)
	a := make([][]float64, m)
	for r := range a {
		a[r] = make([]float64, m+1)
		a[r][r] = 1
		a[r][m] = rhs[ids[r]]
	}
	for r, s := range ids {
		for _, e := range c.rows[s] {
			if t := idx[e.to]; t >= 0 {
				if transpose {
					a[t][r] -= e.p
				} else {
					a[r][t] -= e.p
				}
			}
		}
	}
	for col := range m {
		piv := col
		for r := col + 1; r < m; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		a[col], a[piv] = a[piv], a[col]
		for r := range m {
			if r != col && a[r][col] != 0 {
				f := a[r][col] / a[col][col]
				for k := col; k <= m; k++ {
					a[r][k] -= f * a[col][k]
				}
			}
		}
	}
	x := make([]float64, n)
	for r, s := range ids {
		x[s] = a[r][m] / a[r][r]
	}
	return x
}

// times is the expected number of transitions to absorption.
func (c *thChain) times(absorbing []bool) []float64 {
	ones := make([]float64, len(c.rows))
	for i := range ones {
		ones[i] = 1
	}
	return c.solve(absorbing, ones, false)
}

// hitProb is the probability of being absorbed in target (a subset of absorbing).
func (c *thChain) hitProb(absorbing, target []bool) []float64 {
	rhs := make([]float64, len(c.rows))
	for s, row := range c.rows {
		for _, e := range row {
			if target[e.to] {
				rhs[s] += e.p
			}
		}
	}
	x := c.solve(absorbing, rhs, false)
	for s := range x {
		if target[s] {
			x[s] = 1
		}
	}
	return x
}

// visits is the expected number of visits to each transient state before
// absorption, starting at start (counted once).
func (c *thChain) visits(absorbing []bool, start int) []float64 {
	rhs := make([]float64, len(c.rows))
	rhs[start] = 1
	return c.solve(absorbing, rhs, true)
}

// thBranch numbers the 4k+2 aggregated states of one branch of depth k from base:
// L_j^+ for j = 1..k+1 (k+1: leaf-incoming), R_j^+, L_j^- for j = 1..k, and
// R_j^- for j = 0..k (0: fork-incoming).
type thBranch struct{ k, base int }

func (b thBranch) lp(j int) int { return b.base + j - 1 }
func (b thBranch) rp(j int) int { return b.base + b.k + j }
func (b thBranch) lm(j int) int { return b.base + 2*b.k + j }
func (b thBranch) rm(j int) int { return b.base + 3*b.k + 1 + j }
func (b thBranch) size() int    { return 4*b.k + 2 }

// add writes the branch's transitions of Section 4.1 (all but the fork-incoming state's).
func (b thBranch) add(c *thChain, p ABCD) {
	for j := 1; j <= b.k; j++ {
		a, bb, cc, d := p.A[j-1], p.B[j-1], p.C[j-1], p.D[j-1]
		c.arc(b.lp(j), b.rp(j), cc)
		c.arc(b.lp(j), b.rm(j-1), 1-cc)
		c.arc(b.rp(j), b.lp(j+1), a)
		c.arc(b.rp(j), b.lm(j), 1-a)
		c.arc(b.rm(j), b.lm(j), bb)
		c.arc(b.rm(j), b.lp(j+1), 1-bb)
		c.arc(b.lm(j), b.rm(j-1), d)
		c.arc(b.lm(j), b.rp(j), 1-d)
	}
	c.arc(b.lp(b.k+1), b.rm(b.k), 1)
}

// pick reads a FourStates out of per-state values x.
func (b thBranch) pick(x []float64) FourStates {
	f := newFourStates(b.k)
	for j := 1; j <= b.k; j++ {
		f.LPlus[j-1], f.RPlus[j-1], f.LMinus[j-1], f.RMinus[j-1] = x[b.lp(j)], x[b.rp(j)], x[b.lm(j)], x[b.rm(j)]
	}
	return f
}

// thBranchValues are the per-branch quantities of Appendix B, Definitions
// 'g_q' and 'mu', computed on one branch with its fork-incoming state (and, on
// the target branch, its leaf-incoming state) absorbing.
type thBranchValues struct {
	MuTilde, GTilde, Mu, G, Q FourStates
	GTildeLeaf                float64 // tilde-g(L_{K+1}^+)
	Psucc                     float64
}

func thBranchOf(p ABCD) thBranchValues {
	b := thBranch{k: len(p.A)}
	c := newThChain(b.size())
	b.add(c, p)
	off := make([]bool, b.size())
	off[b.rm(0)] = true
	gt := c.times(off)
	var v thBranchValues
	v.GTilde, v.MuTilde, v.GTildeLeaf = b.pick(gt), b.pick(c.visits(off, b.lp(1))), gt[b.lp(b.k+1)]

	on := append([]bool(nil), off...)
	on[b.lp(b.k+1)] = true
	fork := make([]bool, b.size())
	fork[b.rm(0)] = true
	q := c.hitProb(on, fork)
	v.G, v.Q, v.Mu = b.pick(c.times(on)), b.pick(q), b.pick(c.visits(on, b.lp(1)))
	v.Psucc = 1 - q[b.lp(1)]
	return v
}

// thFull is the whole graph's chain: state 0 is s0 -> f, then the branches;
// every fork-head state moves uniformly to the W branch entries.
type thFull struct {
	c        *thChain
	branches []thBranch
}

func newThFull(ps []ABCD) thFull {
	var f thFull
	n := 1
	for _, p := range ps {
		f.branches = append(f.branches, thBranch{k: len(p.A), base: n})
		n += 4*len(p.A) + 2
	}
	f.c = newThChain(n)
	w := float64(len(ps))
	for i, b := range f.branches {
		b.add(f.c, ps[i])
		for _, e := range f.branches {
			f.c.arc(b.rm(0), e.lp(1), 1/w)
		}
		f.c.arc(0, b.lp(1), 1/w)
	}
	return f
}

// target returns h_x and d_x (visits from s0 -> f) for x the leaf of branch t.
func (f thFull) target(t int) (h, d []float64) {
	abs := make([]bool, len(f.c.rows))
	b := f.branches[t]
	abs[b.lp(b.k+1)] = true
	return f.c.times(abs), f.c.visits(abs, 0)
}

// hitting is H_f averaged over the uniform target leaf.
func (f thFull) hitting() float64 {
	var s float64
	for t := range f.branches {
		h, _ := f.target(t)
		s += h[0]
	}
	return s / float64(len(f.branches))
}

// thHomogeneous is the graph of W identical branches with probabilities p.
func thHomogeneous(W int, p ABCD) thFull {
	ps := make([]ABCD, W)
	for i := range ps {
		ps[i] = p
	}
	return newThFull(ps)
}

// thGrads returns the rescaled G_j^(p) straight from their definition
// (Section 5.2): G_j^(a) = W p_succ E_x[d_x(R_j^+)(h_x(L_j^-) - h_x(L_{j+1}^+))]
// etc. on branch 1, with d_x and h_x of the whole chain.
func thGrads(W int, p ABCD) (ga, gb, gc, gd []float64, psucc float64) {
	f := thHomogeneous(W, p)
	psucc = thBranchOf(p).Psucc
	b, k := f.branches[0], len(p.A)
	ga, gb, gc, gd = make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
	for t := range W {
		h, d := f.target(t)
		for j := 1; j <= k; j++ {
			ga[j-1] += d[b.rp(j)] * (h[b.lm(j)] - h[b.lp(j+1)])
			gb[j-1] += d[b.rm(j)] * (h[b.lp(j+1)] - h[b.lm(j)])
			gc[j-1] += d[b.lp(j)] * (h[b.rm(j-1)] - h[b.rp(j)])
			gd[j-1] += d[b.lm(j)] * (h[b.rp(j)] - h[b.rm(j-1)])
		}
	}
	for _, g := range [][]float64{ga, gb, gc, gd} {
		for i := range g {
			g[i] *= psucc // W p_succ times the average (1/W) sum_t
		}
	}
	return ga, gb, gc, gd, psucc
}

// thClose reports whether x and y agree to relative tolerance tol (absolute
// below scale).
func thClose(x, y, tol, scale float64) bool {
	return math.Abs(x-y) <= tol*math.Max(scale, math.Max(math.Abs(x), math.Abs(y)))
}

// thNamed is one named per-depth quantity, for comparing tables.
type thNamed struct {
	name string
	v    []float64
}

func (f FourStates) thNamed(prefix string) []thNamed {
	return []thNamed{
		{prefix + "(L_j^+)", f.LPlus}, {prefix + "(R_j^+)", f.RPlus},
		{prefix + "(L_j^-)", f.LMinus}, {prefix + "(R_j^-)", f.RMinus},
	}
}

// thDiff lists every depth where got and want disagree, as
// "name j=..: got X, want Y".
func thDiff(got, want []thNamed, tol, scale float64) []string {
	var out []string
	for i, g := range got {
		w := want[i]
		if len(g.v) != len(w.v) {
			out = append(out, fmt.Sprintf("%s: %d depths, want %d", g.name, len(g.v), len(w.v)))
			continue
		}
		for j := range g.v {
			if !thClose(g.v[j], w.v[j], tol, scale) {
				out = append(out, fmt.Sprintf("%s j=%d: got %.12g, want %.12g", g.name, j+1, g.v[j], w.v[j]))
			}
		}
	}
	return out
}
