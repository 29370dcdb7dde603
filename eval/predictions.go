package eval

import "github.com/rlvr-backtrack/backtrack/tasks"

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
	if w, k, l, ok := g.Config.Homogeneous(); ok {
		p.H0 = H0(w, k, l)
	}
	return p
}
