package eval

import (
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// statesOf lists the states of one class and depth on branch i.
func statesOf(g *tasks.Graph, i int, c tasks.Class, depth int) []int {
	var out []int
	for s, st := range g.States {
		if st.Branch == i && st.Class == c && st.Depth == depth {
			out = append(out, s)
		}
	}
	return out
}

// TestInitValuesMatchAnalyzer checks Appendix B's values at post-training
// initialisation, and the rescaled G_j^(p)(0) of Lemma 'Gjp_init', against
// the product's exact analysis of the pretrained policy (target t_1, branch
// 2 off target). Multiedge states are aggregated as in the paper.
func TestInitValuesMatchAnalyzer(t *testing.T) {
	for _, c := range []struct{ W, K, L int }{{2, 1, 1}, {3, 4, 2}, {2, 3, 2}, {5, 6, 3}, {15, 15, 5}} {
		g := graph(t, tasks.Config{W: c.W, K: c.K, L: c.L})
		r := analyze(t, g, PolicyPretrained(g))
		in := InitValues(c.W, c.K, c.L)
		an := r.a
		check := func(name string, j int, got, want float64) {
			t.Helper()
			if relErr(got, want) > 1e-9 && !(want == 0 && got < 1e-9) {
				t.Errorf("W=%d K=%d L=%d %s_%d: exact %.12g, paper %.12g", c.W, c.K, c.L, name, j, got, want)
			}
		}
		sum := func(i int, cl tasks.Class, j int, f func(s int) float64) float64 {
			acc := 0.0
			for _, s := range statesOf(g, i, cl, j) {
				acc += f(s)
			}
			return acc
		}
		one := func(i int, cl tasks.Class, j int, f func(s int) float64) float64 {
			return f(statesOf(g, i, cl, j)[0])
		}
		classes := []struct {
			cl   tasks.Class
			name string
			pick func(fs FourStates) []float64
		}{
			{tasks.LPlus, "L+", func(f FourStates) []float64 { return f.LPlus }},
			{tasks.RPlus, "R+", func(f FourStates) []float64 { return f.RPlus }},
			{tasks.LMinus, "L-", func(f FourStates) []float64 { return f.LMinus }},
			{tasks.RMinus, "R-", func(f FourStates) []float64 { return f.RMinus }},
		}
		check("p_succ", 0, r.Success[0], in.Psucc)
		for j := 1; j <= c.K; j++ {
			for _, cl := range classes {
				i := j - 1
				check("d_x target "+cl.name, j, sum(1, cl.cl, j, func(s int) float64 { return r.D(1, s) }), cl.pick(in.DxTarget)[i])
				check("d_x off "+cl.name, j, sum(2, cl.cl, j, func(s int) float64 { return r.D(1, s) }), cl.pick(in.DxOff)[i])
				check("mu "+cl.name, j, sum(1, cl.cl, j, func(s int) float64 { return an.tVisits[s] }), cl.pick(in.Mu)[i])
				check("mu~ "+cl.name, j, sum(2, cl.cl, j, func(s int) float64 { return an.ntVisits[s] }), cl.pick(in.MuTilde)[i])
				check("g "+cl.name, j, one(1, cl.cl, j, func(s int) float64 { return an.t[colTime][s] }), cl.pick(in.G)[i])
				check("q "+cl.name, j, one(1, cl.cl, j, func(s int) float64 { return an.t[colReturn][s] }), cl.pick(in.Q)[i])
				check("g~ "+cl.name, j, one(2, cl.cl, j, func(s int) float64 { return an.nt[colTime][s] }), cl.pick(in.GTilde)[i])
			}
			// G_j^(p) = W p_succ E_x[d_x(s)(h_x(a0) - h_x(a1))] on branch 1,
			// a1 the desired next state and a0 an undesired one.
			for _, gp := range []struct {
				name   string
				cl     tasks.Class
				want   float64
				a1, a0 func() int
			}{
				{"G(a)", tasks.RPlus, in.GradA[j-1], func() int { return firstOf(g, 1, tasks.LPlus, j+1, tasks.LeafIn) }, func() int { return statesOf(g, 1, tasks.LMinus, j)[0] }},
				{"G(b)", tasks.RMinus, in.GradB[j-1], func() int { return statesOf(g, 1, tasks.LMinus, j)[0] }, func() int { return firstOf(g, 1, tasks.LPlus, j+1, tasks.LeafIn) }},
				{"G(c)", tasks.LPlus, in.GradC[j-1], func() int { return statesOf(g, 1, tasks.RPlus, j)[0] }, func() int { return firstOf(g, 1, tasks.RMinus, j-1, tasks.ForkIn) }},
				{"G(d)", tasks.LMinus, in.GradD[j-1], func() int { return firstOf(g, 1, tasks.RMinus, j-1, tasks.ForkIn) }, func() int { return statesOf(g, 1, tasks.RPlus, j)[0] }},
			} {
				got := 0.0
				for m := 1; m <= c.W; m++ {
					d := sum(1, gp.cl, j, func(s int) float64 { return r.D(m, s) })
					got += d * (r.H(m, gp.a0()) - r.H(m, gp.a1()))
				}
				got *= r.Success[0] // W p_succ * (1/W) sum_x
				check(gp.name, j, got, gp.want)
			}
		}
	}
}

// firstOf is the first state of class c at depth j on branch i, or of class
// alt at that depth (L_{K+1}^+ is the leaf-incoming state, R_0^- the
// fork-incoming one).
func firstOf(g *tasks.Graph, i int, c tasks.Class, j int, alt tasks.Class) int {
	if s := statesOf(g, i, c, j); len(s) > 0 {
		return s[0]
	}
	return statesOf(g, i, alt, j)[0]
}
