package eval

import (
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Certificate is first-order evidence that a policy minimises the exact
// hitting time H_f over the rows a setting trains, read in probability
// space from the exact gradient weights C(s, a) = E_x[d_x(s) h_x(a)]
// (Analysis.CostWeights). Moving probability eps at row s from action b to
// action a changes H_f by eps (C(s, a) - C(s, b)) + O(eps^2), so a policy is
// a KKT point of H_f over the product of the trained rows' simplices iff on
// every trained row the actions it uses share the smallest C. Gradient
// measures the first half (in logits, dH/dtheta_{s,a} = pi(a|s)(C(s,a) - Cbar(s)),
// Cbar(s) = sum_b pi(b|s) C(s,b)); Margin the second, on the actions of
// probability exactly 0, where the logit gradient vanishes whatever the sign
// and says nothing. Both are divided by H_f: Gradient is the relative
// change of H_f per unit logit, Margin per unit of probability moved.
//
// A first-order test cannot tell a global minimum from another KKT point.
// The one such point that matters here is exact RLVR's symmetric limit
// (sigma uniform, every c = 1): with every c = 1, H_f does not depend on
// the source row at all, and near uniform sigma turning back at an entry
// costs, so it is a (non-strict) local minimum, but moving sigma to a
// vertex e_p along that plateau keeps H_f and makes rejecting at branch p's
// entry pay. Certify therefore uses the one piece of global structure it
// has: H_f is affine in the source row (s0 -> f is visited exactly once),
// so it is constant on the face of the source simplex spanned by the
// actions the row uses when those share C. When the source is trained and
// uses several actions, the certificate is also computed at every vertex of
// that face (FaceVertices of them); a failure there exhibits a policy of the
// same H_f with a descent direction.
type Certificate struct {
	// HittingTime is the H_f of the certified policy: the scale of the
	// relative fields.
	HittingTime float64 `json:"hitting_time"`
	// Gradient is max |dH/dtheta_{s,a}| / H_f over the trained rows;
	// GradientAt names its transition "s -> a".
	Gradient   float64 `json:"gradient"`
	GradientAt string  `json:"gradient_at"`
	// Margin is min (C(s,a) - Cbar(s)) / H_f over the trained actions of
	// probability 0 (0 if there are none); negative means moving mass to a
	// lowers H_f. MarginAt names its transition.
	Margin   float64 `json:"margin"`
	MarginAt string  `json:"margin_at"`
	// FaceVertices is the number of source-row vertices also certified
	// (0 unless the source is trained and uses more than one action);
	// FaceGradient and FaceMargin are the worst values over them, and
	// FaceMarginAt names the vertex and the transition.
	FaceVertices int     `json:"face_vertices"`
	FaceGradient float64 `json:"face_gradient"`
	FaceMargin   float64 `json:"face_margin"`
	FaceMarginAt string  `json:"face_margin_at"`
}

// Holds reports whether the certificate holds within tolerance tol (a
// relative change of H_f; 1e-9 leaves room for rounding in C, whose
// entries are visit-weighted hitting times).
func (c *Certificate) Holds(tol float64) bool {
	ok := c.Gradient <= tol && c.Margin >= -tol
	if c.FaceVertices > 0 {
		ok = ok && c.FaceGradient <= tol && c.FaceMargin >= -tol
	}
	return ok
}

// Certify computes the certificate of policy probs on g for the rows RLVR
// trains: every L^+, R^+, L^-, R^- row, and the source row when
// trainSource.
func Certify(g *tasks.Graph, probs []float64, trainSource bool) (*Certificate, error) {
	an := NewAnalyzer(g)
	c := &Certificate{}
	r, err := an.Analyze(probs)
	if err != nil {
		return nil, fmt.Errorf("eval: certificate: %w", err)
	}
	c.HittingTime = r.HittingTime
	c.Gradient, c.GradientAt, c.Margin, c.MarginAt = firstOrder(g, probs, r, trainSource)
	src := probs[g.Offsets[0]:g.Offsets[1]]
	var used []int
	for j, p := range src {
		if p > 0 {
			used = append(used, j)
		}
	}
	if !trainSource || len(used) < 2 {
		return c, nil
	}
	vertex := append([]float64(nil), probs...)
	c.FaceVertices, c.FaceMargin = len(used), math.Inf(1)
	for _, j := range used {
		row := vertex[g.Offsets[0]:g.Offsets[1]]
		clear(row)
		row[j] = 1
		rv, err := an.Analyze(vertex)
		if err != nil {
			return nil, fmt.Errorf("eval: certificate: source on branch %d: %w", j+1, err)
		}
		grad, _, margin, at := firstOrder(g, vertex, rv, true)
		c.FaceGradient = max(c.FaceGradient, grad)
		if margin < c.FaceMargin {
			c.FaceMargin, c.FaceMarginAt = margin, fmt.Sprintf("source on branch %d: %s", j+1, at)
		}
	}
	return c, nil
}

// firstOrder returns the largest relative logit gradient and the smallest
// relative outward margin of policy probs (analysed in r) over the
// trained rows, with the transitions where they occur.
func firstOrder(g *tasks.Graph, probs []float64, r *Analysis, trainSource bool) (grad float64, gradAt string, margin float64, marginAt string) {
	cw := r.CostWeights()
	h := r.HittingTime
	margin = math.Inf(1)
	gs, gi, ms, mi := -1, -1, -1, -1
	for s := range g.States {
		if !g.Trained(s) || (s == 0 && !trainSource) {
			continue
		}
		lo, hi := g.Offsets[s], g.Offsets[s+1]
		mean := 0.0
		for i := lo; i < hi; i++ {
			mean += probs[i] * cw[i]
		}
		for i := lo; i < hi; i++ {
			if probs[i] > 0 {
				if d := probs[i] * math.Abs(cw[i]-mean) / h; d > grad || gs < 0 {
					grad, gs, gi = d, s, i
				}
			} else if m := (cw[i] - mean) / h; m < margin {
				margin, ms, mi = m, s, i
			}
		}
	}
	name := func(s, i int) string {
		if s < 0 {
			return ""
		}
		return g.Name(s) + " -> " + g.Name(g.Next[i])
	}
	if ms < 0 {
		margin = 0
	}
	return grad, name(gs, gi), margin, name(ms, mi)
}
