package eval

import (
	"math"
	"math/rand"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestCertificateRejects: the certificate fails at points that are not
// optimal, each for the reason it should.
func TestCertificateRejects(t *testing.T) {
	g := graph(t, tasks.Config{W: 5, K: 5, L: 3})
	first := func(c1 float64) []float64 { // source on branch 1, c_{1,1} = c1
		return entryPolicy(g, []float64{1, 0, 0, 0, 0}, []float64{c1, 1, 1, 1, 1})
	}
	tests := []struct {
		name  string
		probs []float64
		train bool
		check func(c *Certificate) bool
		why   string
	}{
		// From (*) with the source on branch 1: H = 49 + 32c + 18/c, so
		// dH/dc_{1,1} = 14 at c = 1 and rejecting at the entry pays 14.
		{"source on 1, c=1", first(1), true,
			func(c *Certificate) bool {
				return math.Abs(c.Margin-(-14.0/99)) < 1e-12 && c.MarginAt == "f>u1.1l -> u1.1l>f"
			},
			"margin -14/99 at branch 1's entry"},
		// dH/dc = 32 - 18/c^2 = 0 only at c = 3/4: at 0.8 the logit
		// gradient is c(1-c) dH/dc = 0.16 * 3.875 at the entry row.
		{"source on 1, c=0.8", first(0.8), true,
			func(c *Certificate) bool { return math.Abs(c.Gradient-0.16*3.875/c.HittingTime) < 1e-12 },
			"logit gradient 0.62/H at branch 1's entry"},
		// Exact RLVR's symmetric limit: first order holds (the source
		// gradient is 0 by symmetry, turning back at an entry costs
		// 2 + 4K/W - 4K/W = 2 per unit), but H is affine in the source
		// row, so every source vertex has H = 99 too, and there the
		// entry margin is -14/99.
		{"symmetric limit", PolicyRLVRLimit(g), true,
			func(c *Certificate) bool {
				return c.Gradient == 0 && c.Margin > 0 && c.FaceVertices == 5 && math.Abs(c.FaceMargin-(-14.0/99)) < 1e-12
			},
			"first order holds, the face check fails with margin -14/99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Certify(g, tt.probs, tt.train)
			if err != nil {
				t.Fatal(err)
			}
			if c.Holds(1e-9) {
				t.Errorf("certificate holds: %+v", *c)
			}
			if !tt.check(c) {
				t.Errorf("got %+v, want %s", *c, tt.why)
			}
		})
	}
	// With the source frozen the symmetric limit is the optimum (99).
	if c, err := Certify(g, PolicyRLVRLimit(g), false); err != nil || !c.Holds(1e-9) {
		t.Errorf("frozen source, symmetric limit: got %+v, %v, want a certificate that holds", c, err)
	}
}

// TestSymmetricLimitIsPlateau pins why no local test at exact RLVR's
// symmetric limit (W=K=5, L=3, source trained) can see that it is not
// optimal: it is a non-strict local minimum. In the family, with
// sigma_1 = 1/W + t(1 - 1/W) and c_{1,1} = 1 - s, (*) gives
// H = 99 + s (2 - 4K t (1 - 1/W)) + O(s^2): flat in t at s = 0, increasing
// in s for t < 1/(2K(1 - 1/W)) = 1/8. And random perturbations of every
// trained row at scales up to 1e-3 never go below 99 either. Only beyond
// t = 1/8 does rejecting at branch 1's entry pay (at t = 1, 97).
func TestSymmetricLimitIsPlateau(t *testing.T) {
	g := graph(t, tasks.Config{W: 5, K: 5, L: 3})
	an := NewAnalyzer(g)
	at := func(tt, s float64) float64 {
		sigma := []float64{0.2 + 0.8*tt, 0.2 * (1 - tt), 0.2 * (1 - tt), 0.2 * (1 - tt), 0.2 * (1 - tt)}
		r, err := an.Analyze(entryPolicy(g, sigma, []float64{1 - s, 1, 1, 1, 1}))
		if err != nil {
			t.Fatal(err)
		}
		return r.HittingTime
	}
	for _, tt := range []float64{0, 0.01, 0.05, 0.1, 0.12} {
		for _, s := range []float64{0, 1e-6, 1e-3, 1e-2} {
			if h := at(tt, s); h < 99*(1-1e-13) {
				t.Errorf("t=%v s=%v: H = %.15g < 99", tt, s, h)
			}
		}
	}
	if h := at(0.3, 1e-3); h >= 99 {
		t.Errorf("t=0.3 s=1e-3: H = %.15g, want below 99", h)
	}
	rng := rand.New(rand.NewSource(11))
	p := PolicyRLVRLimit(g)
	for _, eps := range []float64{1e-3, 1e-4, 1e-5} {
		low := math.Inf(1)
		for range 300 {
			q := append([]float64(nil), p...)
			for s := range g.States {
				if !g.Trained(s) {
					continue
				}
				lo, hi := g.Offsets[s], g.Offsets[s+1]
				z, w := 0.0, make([]float64, hi-lo)
				for i := range w {
					w[i] = rng.ExpFloat64()
					z += w[i]
				}
				for i := range w {
					q[lo+i] = (1-eps)*q[lo+i] + eps*w[i]/z
				}
			}
			r, err := an.Analyze(q)
			if err != nil {
				t.Fatal(err)
			}
			low = min(low, r.HittingTime)
		}
		if low < 99*(1-1e-13) {
			t.Errorf("eps=%v: a perturbation reached %.15g < 99", eps, low)
		}
	}
}
