package eval

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

func graph(t testing.TB, c tasks.Config) *tasks.Graph {
	t.Helper()
	g, err := tasks.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func analyze(t testing.TB, g *tasks.Graph, probs []float64) *Analysis {
	t.Helper()
	r, err := NewAnalyzer(g).Analyze(probs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func relErr(got, want float64) float64 {
	return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
}

// TestPretrainedEqualsH0 checks the exact hitting time of the uniform world
// model against Appendix B's H_0 = (2W-1)(1+K+K/L)(1+K(L+1)).
func TestPretrainedEqualsH0(t *testing.T) {
	for _, c := range []struct{ W, K, L int }{
		{1, 1, 1}, {2, 1, 1}, {3, 2, 2}, {4, 3, 1}, {2, 5, 3}, {6, 6, 5}, {15, 15, 5}, {7, 40, 2},
	} {
		g := graph(t, tasks.Config{W: c.W, K: c.K, L: c.L})
		got := analyze(t, g, PolicyPretrained(g)).HittingTime
		if want := H0(c.W, c.K, c.L); relErr(got, want) > 1e-9 {
			t.Errorf("W=%d K=%d L=%d: got %.12g, want H_0 = %.12g", c.W, c.K, c.L, got, want)
		}
	}
	g := graph(t, tasks.DefaultConfig())
	if got := analyze(t, g, PolicyPretrained(g)).HittingTime; relErr(got, 50141) > 1e-12 {
		t.Errorf("paper size: got %.12g, want 50141", got)
	}
}

// TestLimitsMatchClosedForms checks the converged RLVR and SFT policies
// against the closed forms derived in theory.go, homogeneous and
// heterogeneous, including the paper's size where the SFT limit is ~4e14.
func TestLimitsMatchClosedForms(t *testing.T) {
	for _, c := range []tasks.Config{
		{W: 1, K: 1, L: 1}, {W: 2, K: 3, L: 2}, {W: 5, K: 4, L: 3}, {W: 15, K: 15, L: 5}, {W: 6, K: 12, L: 5},
		{Branches: [][]int{{2, 2, 3}, {5, 1}, {4, 4, 4, 4}}},
		{Branches: [][]int{{1}, {3, 3, 3, 3, 3, 3}}},
	} {
		g := graph(t, c)
		ks := make([]int, g.W())
		for i, b := range g.Branches {
			ks[i] = b.Depth()
		}
		shape := c.Shape()
		for _, tc := range []struct {
			name string
			p    []float64
			want float64
		}{
			{"rlvr-limit", PolicyRLVRLimit(g), RLVRLimit(ks)},
			{"sft-limit", PolicySFTLimit(g), SFTLimitHetero(shape)},
		} {
			got := analyze(t, g, tc.p).HittingTime
			if relErr(got, tc.want) > 1e-9 {
				t.Errorf("%s %s: got %.15g, want %.15g", tasks.FormatBranches(shape), tc.name, got, tc.want)
			}
		}
	}
	g := graph(t, tasks.DefaultConfig())
	got := analyze(t, g, PolicySFTLimit(g)).HittingTime
	if want := SFTLimit(15, 15, 5); relErr(got, want) > 1e-9 || math.IsInf(got, 0) {
		t.Errorf("paper size sft-limit: got %.15g, want %.15g", got, want)
	}
	t.Logf("paper size: sft-limit hitting time %.6g, rlvr-limit %v", got, analyze(t, g, PolicyRLVRLimit(g)).HittingTime)
}

// randomRationalPolicy draws rows with small integer weights, so the exact
// rational reference stays cheap; returns float and rational tables.
func randomRationalPolicy(g *tasks.Graph, rng *rand.Rand) ([]float64, []*big.Rat) {
	p := make([]float64, len(g.Next))
	q := make([]*big.Rat, len(g.Next))
	fork := make([]int64, g.W())
	for i := range fork {
		fork[i] = 1 + rng.Int64N(4)
	}
	for s, st := range g.States {
		lo, hi := g.Offsets[s], g.Offsets[s+1]
		w := make([]int64, hi-lo)
		var sum int64
		for i := range w {
			w[i] = 1 + rng.Int64N(4)
			if st.Class == tasks.ForkIn {
				w[i] = fork[i]
			}
			sum += w[i]
		}
		for i := range w {
			q[lo+i] = big.NewRat(w[i], sum)
			p[lo+i], _ = q[lo+i].Float64()
		}
	}
	return p, q
}

func ratTable(p []float64) []*big.Rat {
	q := make([]*big.Rat, len(p))
	for i, x := range p {
		q[i] = new(big.Rat).SetFloat64(x)
	}
	return q
}

// ratSolve solves A x = b exactly (Gauss-Jordan, A square, nonsingular).
func ratSolve(a [][]*big.Rat, b []*big.Rat) []*big.Rat {
	n := len(b)
	for c := 0; c < n; c++ {
		p := c
		for a[p][c].Sign() == 0 {
			p++
		}
		a[c], a[p], b[c], b[p] = a[p], a[c], b[p], b[c]
		inv := new(big.Rat).Inv(a[c][c])
		for r := 0; r < n; r++ {
			if r == c || a[r][c].Sign() == 0 {
				continue
			}
			f := new(big.Rat).Mul(a[r][c], inv)
			for k := c; k < n; k++ {
				a[r][k] = new(big.Rat).Sub(a[r][k], new(big.Rat).Mul(f, a[c][k]))
			}
			b[r] = new(big.Rat).Sub(b[r], new(big.Rat).Mul(f, b[c]))
		}
	}
	x := make([]*big.Rat, n)
	for i := range x {
		x[i] = new(big.Rat).Quo(b[i], a[i][i])
	}
	return x
}

// exactReference solves the whole chain densely in rational arithmetic for
// target m: h = 1 + Q h and d = e_0 + Q^T d over the non-absorbed states.
func exactReference(g *tasks.Graph, q []*big.Rat, m int) (h, d []*big.Rat) {
	n := g.NumStates()
	newSys := func() ([][]*big.Rat, []*big.Rat) {
		a := make([][]*big.Rat, n)
		for i := range a {
			a[i] = make([]*big.Rat, n)
			for j := range a[i] {
				a[i][j] = new(big.Rat)
			}
			a[i][i].SetInt64(1)
		}
		return a, make([]*big.Rat, n)
	}
	ah, bh := newSys()
	ad, bd := newSys()
	for s := range n {
		bh[s], bd[s] = new(big.Rat), new(big.Rat)
		if g.Hits(s, m) {
			continue // absorbed: h = 0, and it emits no visits
		}
		bh[s].SetInt64(1)
		for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
			a := g.Next[i]
			ah[s][a].Sub(ah[s][a], q[i])
			ad[a][s].Sub(ad[a][s], q[i])
		}
	}
	bd[0].SetInt64(1)
	h, d = ratSolve(ah, bh), ratSolve(ad, bd)
	for s := range n {
		if g.Hits(s, m) {
			d[s].SetInt64(0) // reached at t = tau, not before
		}
	}
	return h, d
}

func TestAgainstRationalSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 0))
	for _, c := range []tasks.Config{
		{W: 2, K: 1, L: 1}, {W: 2, K: 2, L: 2}, {W: 3, K: 1, L: 3}, {Branches: [][]int{{2, 1}, {3}}},
	} {
		g := graph(t, c)
		rp, rq := randomRationalPolicy(g, rng)
		policies := map[string][]*big.Rat{"random": rq}
		floats := map[string][]float64{"random": rp}
		for _, name := range PolicyNames {
			p, _ := Named(g, name)
			floats[name], policies[name] = p, ratTable(p)
		}
		// Branches alike but for one row (the last branch's entry, c_1):
		// the identical-branch reuse must not copy the solve.
		p := PolicyPretrained(g)
		setDesired(g, p, g.Branches[g.W()-1].Entry(), 0.99)
		floats["entry-differs"], policies["entry-differs"] = p, ratTable(p)
		for name, q := range policies {
			r := analyze(t, g, floats[name])
			for m := 1; m <= g.W(); m++ {
				h, d := exactReference(g, q, m)
				for s := range g.States {
					hw, _ := h[s].Float64()
					dw, _ := d[s].Float64()
					if e := math.Abs(r.H(m, s) - hw); e > 1e-9*math.Max(1, hw) {
						t.Errorf("%s %s t%d h(%s): got %.15g, want %.15g", tasks.FormatBranches(c.Shape()), name, m, g.Name(s), r.H(m, s), hw)
					}
					if e := math.Abs(r.D(m, s) - dw); e > 1e-9*math.Max(1, dw) {
						t.Errorf("%s %s t%d d(%s): got %.15g, want %.15g", tasks.FormatBranches(c.Shape()), name, m, g.Name(s), r.D(m, s), dw)
					}
				}
			}
		}
	}
}

// TestVisitsSumToHittingTime: the expected visits before hitting add up to
// the hitting time (every transition leaves one counted state).
func TestVisitsSumToHittingTime(t *testing.T) {
	g := graph(t, tasks.Config{Branches: [][]int{{2, 2, 3}, {5, 1}, {4, 4, 4, 4}}})
	rp, _ := randomRationalPolicy(g, rand.New(rand.NewPCG(3, 0)))
	r := analyze(t, g, rp)
	for m := 1; m <= g.W(); m++ {
		sum := 0.0
		for s := range g.States {
			sum += r.D(m, s)
		}
		if relErr(sum, r.PerTarget[m-1]) > 1e-12 {
			t.Errorf("t%d: visits sum to %.15g, hitting time %.15g", m, sum, r.PerTarget[m-1])
		}
	}
}

// TestMonteCarloAgrees compares seeded rollouts with the exact hitting time
// (within 4 standard errors).
func TestMonteCarloAgrees(t *testing.T) {
	for _, c := range []tasks.Config{{W: 3, K: 2, L: 2}, {Branches: [][]int{{2, 1}, {3}, {1, 1, 1}}}} {
		g := graph(t, c)
		rp, _ := randomRationalPolicy(g, rand.New(rand.NewPCG(5, 0)))
		for _, name := range append([]string{"random"}, PolicyNames...) {
			p := rp
			if name != "random" {
				p, _ = Named(g, name)
			}
			exact := analyze(t, g, p).HittingTime
			sp, err := NewSampler(g, p)
			if err != nil {
				t.Fatal(err)
			}
			mc, _ := sp.MonteCarlo(context.Background(), 20000, 0, 11)
			if se := mc.CI95 / 1.96; math.Abs(mc.HittingTime-exact) > 4*se || mc.SuccessRate != 1 {
				t.Errorf("%s %s: Monte Carlo %.4g ± %.2g (success %v), exact %.6g", tasks.FormatBranches(c.Shape()), name, mc.HittingTime, mc.CI95, mc.SuccessRate, exact)
			}
		}
	}
}

// TestCostWeightsGradient checks the surrogate's gradient
// pi(a|s) (C(s,a) - sum_b pi(b|s) C(s,b)) against central finite
// differences of the exact hitting time in the softmax logits.
func TestCostWeightsGradient(t *testing.T) {
	g := graph(t, tasks.Config{Branches: [][]int{{2, 3}, {1}, {2}}})
	rng := rand.New(rand.NewPCG(9, 0))
	logits := make([]float64, len(g.Next))
	for i := range logits {
		logits[i] = rng.NormFloat64()
	}
	fork := g.Offsets[g.Branches[0].ForkIn()]
	for _, b := range g.Branches { // fork-incoming rows stay identical
		copy(logits[g.Offsets[b.ForkIn()]:g.Offsets[b.ForkIn()+1]], logits[fork:fork+g.W()])
	}
	probs := func(l []float64) []float64 {
		p := make([]float64, len(l))
		for s := range g.States {
			lo, hi := g.Offsets[s], g.Offsets[s+1]
			z := 0.0
			for i := lo; i < hi; i++ {
				z += math.Exp(l[i])
			}
			for i := lo; i < hi; i++ {
				p[i] = math.Exp(l[i]) / z
			}
		}
		return p
	}
	an := NewAnalyzer(g)
	p := probs(logits)
	r, err := an.Analyze(p)
	if err != nil {
		t.Fatal(err)
	}
	c := append([]float64(nil), r.CostWeights()...)
	checked := 0
	for s := range g.States {
		if !g.Trained(s) {
			continue
		}
		lo, hi := g.Offsets[s], g.Offsets[s+1]
		mean := 0.0
		for i := lo; i < hi; i++ {
			mean += p[i] * c[i]
		}
		for i := lo; i < hi; i++ {
			const eps = 1e-5
			l := append([]float64(nil), logits...)
			l[i] += eps
			up, _ := an.Analyze(probs(l))
			hUp := up.HittingTime
			l[i] -= 2 * eps
			down, _ := an.Analyze(probs(l))
			fd := (hUp - down.HittingTime) / (2 * eps)
			got := p[i] * (c[i] - mean)
			if math.Abs(got-fd) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Errorf("dH/dtheta(%s -> %s): got %.10g, finite differences %.10g", g.Name(s), g.Name(g.Next[i]), got, fd)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d logits", checked)
	}
}

func TestCheckPolicyErrors(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 1, L: 2})
	p := PolicyPretrained(g)
	bad := append([]float64(nil), p...)
	bad[3] = math.NaN()
	diffFork := PolicyPretrained(g)
	o := g.Offsets[g.Branches[1].ForkIn()]
	diffFork[o], diffFork[o+1] = 0.3, 0.7
	for name, q := range map[string][]float64{"short": p[1:], "nan": bad, "fork rows differ": diffFork} {
		if _, err := NewAnalyzer(g).Analyze(q); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
	// Analyze skips the rows of a branch identical to an earlier one (both
	// checked the same): it reports CheckPolicy's first error all the same.
	g = graph(t, tasks.Config{W: 3, K: 2, L: 2})
	at := func(q []float64, j, k int) *float64 { return &q[g.Offsets[g.Branches[j].Entry()]+k] }
	nanEach, lastSum, lastNeg := PolicyPretrained(g), PolicyPretrained(g), PolicyPretrained(g)
	for j := range g.Branches {
		*at(nanEach, j, 5) = math.NaN()
	}
	*at(lastSum, 2, 5) += 0.5
	*at(lastNeg, 2, 5) = -0.25
	for name, q := range map[string][]float64{"nan in every branch": nanEach, "a row of the last branch sums to 1.5": lastSum, "a negative probability in the last branch": lastNeg} {
		want := CheckPolicy(g, q)
		_, err := NewAnalyzer(g).Analyze(q)
		if want == nil || err == nil || err.Error() != want.Error() {
			t.Errorf("%s: Analyze: %v, want CheckPolicy's %v", name, err, want)
		}
	}
}

// TestInfiniteHittingTimeReported: a policy that never reaches the leaves
// (every branch entry turns straight back, c_1 = 0) has no finite hitting
// time; the analysis says so instead of printing garbage.
func TestInfiniteHittingTimeReported(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 2, L: 2})
	p := PolicyPretrained(g)
	for _, b := range g.Branches {
		setDesired(g, p, b.Entry(), 0)
	}
	_, err := NewAnalyzer(g).Analyze(p)
	if err == nil || !strings.Contains(err.Error(), "never reached") {
		t.Errorf("got %v, want an error saying the target is never reached", err)
	}
}

// TestCostWeightsOfSameBranches: a branch whose rows equal an earlier
// branch's gets that branch's weights copied, bit for bit what computing
// them gives: the symmetric start at the paper's size, identical branches
// under a source row that is not uniform (their constants differ: no
// copy), and uneven branches of which some are alike.
func TestCostWeightsOfSameBranches(t *testing.T) {
	weights := func(g *tasks.Graph, probs []float64, copying bool) []float64 {
		t.Helper()
		defer func(old bool) { copySameWeights = old }(copySameWeights)
		copySameWeights = copying
		r, err := NewAnalyzer(g).Analyze(probs)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float64(nil), r.CostWeights()...)
	}
	paper := graph(t, tasks.Config{W: 15, K: 15, L: 5})
	skewed := graph(t, tasks.Config{W: 4, K: 3, L: 2})
	source := PolicyPretrained(skewed)
	row := source[skewed.Offsets[0]:skewed.Offsets[1]]
	for i := range row {
		row[i] = float64(i+1) / float64(len(row)*(len(row)+1)/2)
	}
	hetero := graph(t, tasks.Config{Branches: [][]int{{2, 2, 3}, {5, 1}, {2, 2, 3}, {5, 1}, {4}}})
	for _, tc := range []struct {
		name  string
		g     *tasks.Graph
		probs []float64
	}{{"symmetric, W=K=15, L=5", paper, PolicyPretrained(paper)}, {"skewed source row", skewed, source}, {"uneven branches", hetero, PolicyPretrained(hetero)}} {
		fast, slow := weights(tc.g, tc.probs, true), weights(tc.g, tc.probs, false)
		for i := range slow {
			if math.Float64bits(fast[i]) != math.Float64bits(slow[i]) {
				t.Fatalf("%s: weight %d (-> %s): copied %v, computed %v", tc.name, i, tc.g.Name(tc.g.Next[i]), fast[i], slow[i])
			}
		}
	}
}
