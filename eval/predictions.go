package eval

import (
	"math"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Predictions are the paper's theoretical hitting times for one graph, and
// the exact optima of RLVR over the rows it trains.
type Predictions struct {
	// H0 is Appendix B's H_0, the pretrained policy's hitting time
	// (homogeneous graphs only; 0 otherwise).
	H0 float64 `json:"H0,omitempty"`
	// RLVRLimit is the exact hitting time of the converged backtracking
	// policy (a=b=c=d=1, uniform source row), RLVRLeading the paper's
	// leading term 4 sum_i k_i (4WK on homogeneous graphs).
	RLVRLimit   float64 `json:"rlvr_limit"`
	RLVRLeading float64 `json:"rlvr_limit_leading_4WK"`
	// RLVROptimum is the minimum of the exact hitting time over every row
	// RLVR trains in this project (every L+/R+/L-/R- row and the source row
	// s0 -> f; Optimum with the source trained), FirstBranch the branch its
	// source row enters (1-based; the lowest of equally good branches, so 1
	// on a homogeneous graph) and RLVROptimumEntry[i-1] its entry
	// probability c_{i,1}. It lies below RLVRLimit whenever entering one
	// branch first and sometimes turning back at a branch entry pays, as on
	// every homogeneous graph with W, K >= 2: exact RLVR from the symmetric
	// pretrained bigram keeps the source row uniform and does not reach it.
	// 0 if it could not be computed (it always can on a valid graph).
	RLVROptimum      float64   `json:"rlvr_optimum"`
	FirstBranch      int       `json:"rlvr_optimum_first_branch,omitempty"`
	RLVROptimumEntry []float64 `json:"rlvr_optimum_entry,omitempty"`
	// RLVROptimumFrozen is the same minimum with the source row uniform
	// (the paper's setting: only branch rows train), and
	// RLVROptimumFrozenEntry its entry probabilities; it equals RLVRLimit on
	// homogeneous graphs.
	RLVROptimumFrozen      float64   `json:"rlvr_optimum_frozen_source"`
	RLVROptimumFrozenEntry []float64 `json:"rlvr_optimum_frozen_source_entry,omitempty"`
	// RLVRBestEntry is the exact hitting time of the backtracking policy
	// (a=b=c=d=1) whose source row enters the best branch first, and
	// BestEntryBranch that branch (0 on homogeneous graphs, where the value
	// is RLVRLimit): what rlvr_optimum meant before the optimum over every
	// trained row replaced it.
	RLVRBestEntry   float64 `json:"rlvr_best_entry"`
	BestEntryBranch int     `json:"rlvr_best_entry_branch,omitempty"`
	// SFTLimit is the exact hitting time of SFT's limit (a=c=1, b and d
	// pretrained), from Appendix D's recursion.
	SFTLimit float64 `json:"sft_limit"`
}

// Predict evaluates the closed forms and the optima on graph g.
func Predict(g *tasks.Graph) Predictions {
	ks := depths(g)
	p := Predictions{
		RLVRLimit:   RLVRLimit(ks),
		RLVRLeading: 4 * float64(depthSum(ks)),
		SFTLimit:    SFTLimitHetero(g.Config.Shape()),
	}
	p.RLVRBestEntry, p.BestEntryBranch = p.RLVRLimit, 0
	if w, k, l, ok := g.Config.Homogeneous(); ok {
		p.H0 = H0(w, k, l)
	} else {
		p.RLVRBestEntry, p.BestEntryBranch = RLVRBestEntry(g)
	}
	if o, err := Optimum(g, true); err == nil {
		p.RLVROptimum, p.FirstBranch, p.RLVROptimumEntry = o.HittingTime, o.FirstBranch, o.Entry
	}
	if o, err := Optimum(g, false); err == nil {
		p.RLVROptimumFrozen, p.RLVROptimumFrozenEntry = o.HittingTime, o.Entry
	}
	return p
}

// RLVRBestEntry is the exact hitting time of the backtracking policy
// (a=b=c=d=1) whose source row enters branch j first, minimised over j, and
// that j. H_f is linear in the source row, so no mixture does better; but
// turning back at a branch entry can (Optimum).
func RLVRBestEntry(g *tasks.Graph) (float64, int) {
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
