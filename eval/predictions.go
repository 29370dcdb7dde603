package eval

import (
	"math"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Predictions are the paper's theoretical hitting times for one graph.
type Predictions struct {
	// H0 is Appendix B's H_0, the pretrained policy's hitting time
	// (homogeneous graphs only; 0 otherwise).
	H0 float64 `json:"H0,omitempty"`
	// RLVRLimit is the exact hitting time of the converged backtracking
	// policy (a=b=c=d=1), RLVRLeading the paper's leading term 4 sum_i k_i
	// (4WK on homogeneous graphs).
	RLVRLimit   float64 `json:"rlvr_limit"`
	RLVRLeading float64 `json:"rlvr_limit_leading_4WK"`
	// RLVROptimum is what RLVR converges to when the source row s0 -> f
	// learns too (only the fork-incoming rows are fixed): the backtracking
	// policy entering first the branch that minimises the hitting time, the
	// shallowest. It equals RLVRLimit on homogeneous graphs, where every
	// branch is alike and the source row stays uniform.
	RLVROptimum float64 `json:"rlvr_optimum"`
	// FirstBranch is the branch the optimum enters first (1-based; 0 when
	// every branch is alike).
	FirstBranch int `json:"rlvr_optimum_first_branch,omitempty"`
	// SFTLimit is the exact hitting time of SFT's limit (a=c=1, b and d
	// pretrained), from Appendix D's recursion.
	SFTLimit float64 `json:"sft_limit"`
}

// Predict evaluates the closed forms on graph g.
func Predict(g *tasks.Graph) Predictions {
	ks := make([]int, g.W())
	sum := 0
	for i, b := range g.Branches {
		ks[i] = b.Depth()
		sum += ks[i]
	}
	p := Predictions{
		RLVRLimit:   RLVRLimit(ks),
		RLVRLeading: 4 * float64(sum),
		SFTLimit:    SFTLimitHetero(g.Config.Shape()),
	}
	p.RLVROptimum, p.FirstBranch = p.RLVRLimit, 0
	if w, k, l, ok := g.Config.Homogeneous(); ok {
		p.H0 = H0(w, k, l)
	} else {
		p.RLVROptimum, p.FirstBranch = RLVROptimum(g)
	}
	return p
}

// RLVROptimum is the exact hitting time of the backtracking policy
// (a=b=c=d=1) whose source row enters branch j first, minimised over j, and
// that j. H_f is linear in the source row, so no mixture does better.
func RLVROptimum(g *tasks.Graph) (float64, int) {
	best, arg := math.Inf(1), 0
	an := NewAnalyzer(g)
	p := PolicyRLVRLimit(g)
	src := p[g.Offsets[0]:g.Offsets[1]]
	for j := range src {
		clear(src)
		src[j] = 1
		r, err := an.Analyze(p)
		if err == nil && r.HittingTime < best {
			best, arg = r.HittingTime, j+1
		}
	}
	return best, arg
}
