package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// thQuantities are the quantities Init and Closed share, gathered from
// either (or from the reference chain) for comparison.
type thQuantities struct {
	dx, dxOff, muTilde, gTilde, mu, g, q FourStates
	delta, e, dga, dgc, smallDelta, eps  []float64
	psucc, hf                            float64
	gradA, gradB, gradC, gradD           []float64
}

func (x thQuantities) table() []thNamed {
	var out []thNamed
	for _, f := range []struct {
		p string
		v FourStates
	}{{"d_x", x.dx}, {"d_x off", x.dxOff}, {"tilde-mu", x.muTilde}, {"tilde-g", x.gTilde},
		{"mu", x.mu}, {"g", x.g}, {"q", x.q}} {
		out = append(out, f.v.thNamed(f.p)...)
	}
	return append(out,
		thNamed{"Delta_j", x.delta}, thNamed{"E_j", x.e}, thNamed{"Delta g^a_j", x.dga},
		thNamed{"Delta g^c_j", x.dgc}, thNamed{"delta_j", x.smallDelta}, thNamed{"epsilon_j", x.eps},
		thNamed{"p_succ", []float64{x.psucc}}, thNamed{"H_f", []float64{x.hf}},
		thNamed{"G^(a)_j", x.gradA}, thNamed{"G^(b)_j", x.gradB}, thNamed{"G^(c)_j", x.gradC}, thNamed{"G^(d)_j", x.gradD})
}

func thInitTable(in Init) []thNamed {
	return thQuantities{in.DxTarget, in.DxOff, in.MuTilde, in.GTilde, in.Mu, in.G, in.Q,
		in.Delta, in.E, in.DeltaGa, in.DeltaGc, in.SmallDelta, in.Epsilon, in.Psucc, in.H0,
		in.GradA, in.GradB, in.GradC, in.GradD}.table()
}

func thClosedTable(c Closed, hf float64) []thNamed {
	return thQuantities{c.DxTarget, c.DxOff, c.MuTilde, c.GTilde, c.Mu, c.G, c.Q,
		c.Delta, c.E, c.DeltaGa, c.DeltaGc, c.SmallDelta, c.Epsilon, c.Psucc, hf,
		c.GradA, c.GradB, c.GradC, c.GradD}.table()
}

// thChainTable computes the same quantities from the reference chain. The
// off-target d_x are tilde-mu/p_succ (Proposition 'd_x'); the target ones come
// from the whole chain's visit counts, and G^(p) from their definition. It
// also returns the chain's H_f.
func thChainTable(W int, p ABCD) ([]thNamed, float64) {
	bv := thBranchOf(p)
	full := thHomogeneous(W, p)
	_, d := full.target(0)
	dx := full.branches[0].pick(d)
	dxOff := full.branches[1%W].pick(d)
	if W == 1 {
		dxOff = newFourStates(len(p.A))
		for i := range p.A {
			dxOff.LPlus[i], dxOff.RPlus[i] = bv.MuTilde.LPlus[i]/bv.Psucc, bv.MuTilde.RPlus[i]/bv.Psucc
			dxOff.LMinus[i], dxOff.RMinus[i] = bv.MuTilde.LMinus[i]/bv.Psucc, bv.MuTilde.RMinus[i]/bv.Psucc
		}
	}
	k := len(p.A)
	gaps := func(f FourStates, leaf, fork float64) (lgap, rgap []float64) {
		// lgap_j = f(L_j^-) - f(L_{j+1}^+), rgap_j = f(R_j^+) - f(R_{j-1}^-).
		lgap, rgap = make([]float64, k), make([]float64, k)
		for i := range k {
			next, prev := leaf, fork
			if i+1 < k {
				next = f.LPlus[i+1]
			}
			if i > 0 {
				prev = f.RMinus[i-1]
			}
			lgap[i], rgap[i] = f.LMinus[i]-next, f.RPlus[i]-prev
		}
		return lgap, rgap
	}
	neg := func(s []float64) []float64 {
		for i := range s {
			s[i] = -s[i]
		}
		return s
	}
	tildeGL, e := gaps(bv.GTilde, bv.GTildeLeaf, 0) // Delta_j = -tildeGL_j
	dga, gR := gaps(bv.G, 0, 0)                     // Delta g^c_j = -gR_j
	smallDelta, qR := gaps(bv.Q, 0, 1)              // epsilon_j = -qR_j
	ga, gb, gc, gd, _ := thGrads(W, p)
	hf := full.hitting()
	return thQuantities{dx, dxOff, bv.MuTilde, bv.GTilde, bv.Mu, bv.G, bv.Q,
		neg(tildeGL), e, dga, neg(gR), smallDelta, neg(qR), bv.Psucc, hf, ga, gb, gc, gd}.table(), hf
}

var thGrid = []int{1, 2, 3, 5}

// TestInitMatchesClosedForms evaluates ClosedForms at the pretrained
// probabilities and compares it with the paper's values at initialization.
func TestInitMatchesClosedForms(t *testing.T) {
	for _, W := range thGrid {
		for _, K := range thGrid {
			for _, L := range thGrid {
				in := InitValues(W, K, L)
				p := InitProbabilities(K, L)
				hf := HfFromClosedForms(W, p)
				c := ClosedForms(W, p, in.H0)
				for _, msg := range thDiff(thClosedTable(c, hf), thInitTable(in), 1e-9, 1) {
					t.Errorf("W=%d K=%d L=%d: closed forms vs init values: %s", W, K, L, msg)
				}
			}
		}
	}
}

// TestInitMatchesChain checks the paper's values at initialization against the
// exact reference chain: where they disagree, the chain is right.
func TestInitMatchesChain(t *testing.T) {
	for _, W := range thGrid {
		for _, K := range thGrid {
			for _, L := range thGrid {
				in := InitValues(W, K, L)
				want, _ := thChainTable(W, InitProbabilities(K, L))
				for _, msg := range thDiff(thInitTable(in), want, 1e-8, in.H0) {
					t.Errorf("W=%d K=%d L=%d: paper init value vs exact chain: %s", W, K, L, msg)
				}
			}
		}
	}
}

// thRandomABCD draws probabilities in [0.05, 1], with some exactly 1 (the
// converged values).
func thRandomABCD(rng *rand.Rand, k int) ABCD {
	draw := func() []float64 {
		s := make([]float64, k)
		for i := range s {
			s[i] = 0.05 + 0.95*rng.Float64()
			if rng.IntN(6) == 0 {
				s[i] = 1
			}
		}
		return s
	}
	return ABCD{draw(), draw(), draw(), draw()}
}

func TestClosedFormsMatchChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name string
		W    int
		p    ABCD
	}{
		{"rlvr_limit", 3, thOnes(4)},
		{"sft_limit", 2, thSFT([]int{2, 2, 2})},
		{"init", 4, InitProbabilities(3, 2)},
	}
	for i := range 40 {
		cases = append(cases, struct {
			name string
			W    int
			p    ABCD
		}{fmt.Sprintf("random%d", i), 1 + rng.IntN(4), thRandomABCD(rng, 1+rng.IntN(6))})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, hf := thChainTable(tc.W, tc.p)
			c := ClosedForms(tc.W, tc.p, hf)
			if msgs := thDiff(thClosedTable(c, HfFromClosedForms(tc.W, tc.p)), want, 1e-8, hf); len(msgs) > 0 {
				t.Errorf("W=%d %+v: closed forms vs exact chain:\n%s", tc.W, tc.p, strings.Join(msgs, "\n"))
			}
		})
	}
}

// TestClosedFormsAlternatives checks the paper's two expressions of Delta_j
// and of Delta g^c_j (Appendix B, "Off-target" and "On-target quantities").
func TestClosedFormsAlternatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		W, p := 1+rng.IntN(5), thRandomABCD(rng, 1+rng.IntN(8))
		if i < 64 {
			W, p = thGrid[i%4], InitProbabilities(thGrid[(i/4)%4], thGrid[i/16])
		}
		c := ClosedForms(W, p, 0)
		scale := 1 + c.F[c.K-1]
		for j := range c.K {
			if !thClose(c.Delta[j], c.DeltaAlt[j], 1e-9, scale) {
				t.Errorf("%+v: Delta_%d = (2 + c E)/b = %v, (d E - 2)/a = %v", p, j+1, c.Delta[j], c.DeltaAlt[j])
			}
			if j > 0 && !thClose(c.DeltaGc[j], c.DeltaGcAlt[j], 1e-9, scale) {
				t.Errorf("%+v: Delta g^c_%d = (a Dga - 2)/d = %v, (b Dga_{j-1} + 2)/c = %v", p, j+1, c.DeltaGc[j], c.DeltaGcAlt[j])
			}
		}
		if !math.IsNaN(c.DeltaGcAlt[0]) {
			t.Errorf("DeltaGcAlt at j=1 = %v, want NaN (defined for j >= 2)", c.DeltaGcAlt[0])
		}
	}
}

func TestClosedFormsInvalid(t *testing.T) {
	for _, p := range []ABCD{{}, {A: []float64{0.5}, B: []float64{0.5}}, {[]float64{0.5}, []float64{0}, []float64{1}, []float64{1}}} {
		if err := p.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", p)
		}
		if c := ClosedForms(2, p, 1); c.K != 0 {
			t.Errorf("ClosedForms(%+v).K = %d, want 0", p, c.K)
		}
		if !math.IsNaN(HfFromClosedForms(2, p)) {
			t.Errorf("HfFromClosedForms(%+v) is not NaN", p)
		}
	}
}

// TestGInitSigns checks Lemma 'Gjp_init': G_j^(a)(0), G_j^(c)(0) > 0, and logs
// where G_j^(b)(0), G_j^(d)(0) are negative.
func TestGInitSigns(t *testing.T) {
	for W := 1; W <= 20; W++ {
		for K := 1; K <= 20; K++ {
			for L := 1; L <= 8; L++ {
				in := InitValues(W, K, L)
				for j := range K {
					if !(in.GradA[j] > 0 && in.GradC[j] > 0) {
						t.Errorf("W=%d K=%d L=%d j=%d: G^(a) = %v, G^(c) = %v, want > 0", W, K, L, j+1, in.GradA[j], in.GradC[j])
					}
				}
			}
		}
	}
	// The negative G^(b), G^(d) depths at t = 0, asserted: none at the
	// paper's size (so the "brief regime" in which b and d decrease does not
	// occur there, as the README says), the middle depths for fewer
	// branches, reaching depth K at W = 2 (TestGjpInitRightEnd).
	for _, tc := range []struct {
		W, K, L int
		b, d    string
	}{
		{15, 15, 5, "[]", "[]"},
		{15, 15, 1, "[]", "[]"},
		{5, 15, 5, "[4 5 6 7 8 9 10 11 12 13 14]", "[5 6 7 8 9 10 11 12 13 14]"},
		{2, 15, 5, "[1 2 3 4 5 6 7 8 9 10 11 12 13 14]", "[2 3 4 5 6 7 8 9 10 11 12 13 14 15]"},
	} {
		in := InitValues(tc.W, tc.K, tc.L)
		nb, nd := []int{}, []int{}
		for j := range in.K {
			if in.GradB[j] < 0 {
				nb = append(nb, j+1)
			}
			if in.GradD[j] < 0 {
				nd = append(nd, j+1)
			}
		}
		if fmt.Sprint(nb) != tc.b || fmt.Sprint(nd) != tc.d {
			t.Errorf("W=%d K=%d L=%d at t=0: G^(b) < 0 at j = %v, G^(d) < 0 at j = %v; want %s and %s", tc.W, tc.K, tc.L, nb, nd, tc.b, tc.d)
		}
	}
}

// TestGjpInitRightEnd pins where Lemma 'Gjp_init' is wrong: it bounds the
// negative depths of G^(b), G^(d) by r(W,K,L) <= K-1, yet G_K^(d)(0) < 0
// already at W = 2, K = 3, L = 2 (the paper's own closed form gives -6/11 and
// the exact chain agrees), and at W = 2, K = 15, L = 5.
func TestGjpInitRightEnd(t *testing.T) {
	in := InitValues(2, 3, 2)
	if want := -6.0 / 11; !thClose(in.GradD[2], want, 1e-12, 0) {
		t.Errorf("G_3^(d)(0) at W=2 K=3 L=2 = %v, want %v", in.GradD[2], want)
	}
	_, _, _, gd, _ := thGrads(2, InitProbabilities(3, 2))
	if !thClose(gd[2], -6.0/11, 1e-9, 1) {
		t.Errorf("chain G_3^(d)(0) at W=2 K=3 L=2 = %v, want -6/11", gd[2])
	}
	if in := InitValues(2, 15, 5); in.GradD[14] >= 0 {
		t.Errorf("G_15^(d)(0) at W=2 K=15 L=5 = %v, want < 0", in.GradD[14])
	}
}
