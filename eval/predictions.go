package eval

import (
	"encoding/json"
	"math"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Predictions are the paper's theoretical hitting times for one graph, and
// the exact optimum of RLVR over the rows it trains in one setting: the
// source row s0 -> f trained, or kept uniform like the fork-incoming rows.
type Predictions struct {
	// H0 is Appendix B's H_0, the pretrained policy's hitting time
	// (homogeneous graphs only; 0 otherwise).
	H0 float64 `json:"H0,omitempty"`
	// RLVRLimit is the exact hitting time of the converged backtracking
	// policy (a=b=c=d=1, uniform source row), RLVRLeading the paper's
	// leading term 4 sum_i k_i (4WK on homogeneous graphs).
	RLVRLimit   float64 `json:"rlvr_limit"`
	RLVRLeading float64 `json:"rlvr_limit_leading_4WK"`
	// TrainSource is the setting of the optimum below.
	TrainSource bool `json:"train_source"`
	// RLVROptimum is the minimum of the exact hitting time over every row
	// the setting trains (every L+/R+/L-/R- row, and the source row when
	// TrainSource; Optimum). The policy that attains it enters the branches
	// with RLVROptimumSource (uniform when the source is frozen; else all
	// on FirstBranch, 1-based) and goes on at each branch entry with
	// RLVROptimumEntry[i-1] = c_{i,1}, every other desired probability 1.
	// RLVROptimumCertificate is its first-order certificate over every
	// trained logit, and Certified whether it holds (to 1e-9 of H_f).
	// With the source trained it lies below RLVRLimit on every homogeneous
	// graph with W, K >= 2 (enter one branch first, sometimes turn back at
	// its entry), a point exact RLVR from the symmetric pretrained bigram
	// does not reach; with it frozen it equals RLVRLimit there. 0 if it
	// could not be computed (it always can on a valid graph).
	RLVROptimum            float64      `json:"rlvr_optimum"`
	RLVROptimumSource      []float64    `json:"rlvr_optimum_source,omitempty"`
	RLVROptimumEntry       []float64    `json:"rlvr_optimum_entry,omitempty"`
	FirstBranch            int          `json:"rlvr_optimum_first_branch,omitempty"`
	RLVROptimumCertificate *Certificate `json:"rlvr_optimum_certificate,omitempty"`
	Certified              bool         `json:"rlvr_optimum_certified"`
	// RLVROptimumSourceTrained and RLVROptimumSourceFrozen are the optima
	// of both settings, for reference.
	RLVROptimumSourceTrained float64 `json:"rlvr_optimum_source_trained"`
	RLVROptimumSourceFrozen  float64 `json:"rlvr_optimum_source_frozen"`
	// RLVRBestEntry is the exact hitting time of the backtracking policy
	// (a=b=c=d=1) whose source row enters the best branch first, and
	// BestEntryBranch that branch (0 on homogeneous graphs, where the value
	// is RLVRLimit): the best a source-trained RLVR can do without turning
	// back at a branch entry.
	RLVRBestEntry   float64 `json:"rlvr_best_entry"`
	BestEntryBranch int     `json:"rlvr_best_entry_branch,omitempty"`
	// SFTLimit is the exact hitting time of SFT's limit (a=c=1, b and d
	// pretrained), from Appendix D's recursion.
	SFTLimit float64 `json:"sft_limit"`
}

// MarshalJSON writes the predictions with SFTLimit null when it overflows
// float64 (it grows like ((L+1)^2/L)^K: +Inf from K of about 360 at L=5),
// as JSON has no infinity.
func (p Predictions) MarshalJSON() ([]byte, error) {
	type plain Predictions // without this method
	var sft *float64
	if !math.IsInf(p.SFTLimit, 0) && !math.IsNaN(p.SFTLimit) {
		sft = &p.SFTLimit
	}
	return json.Marshal(struct {
		plain
		SFTLimit *float64 `json:"sft_limit"` // the shallower field: it replaces plain's
	}{plain(p), sft})
}

// Predict evaluates the closed forms on graph g and the optimum of the
// setting trainSource (and the other setting's value).
func Predict(g *tasks.Graph, trainSource bool) Predictions {
	ks := depths(g)
	p := Predictions{
		RLVRLimit:   RLVRLimit(ks),
		RLVRLeading: 4 * float64(depthSum(ks)),
		SFTLimit:    SFTLimitHetero(g.Config.Shape()),
		TrainSource: trainSource,
	}
	p.RLVRBestEntry, p.BestEntryBranch = p.RLVRLimit, 0
	if w, k, l, ok := g.Config.Homogeneous(); ok {
		p.H0 = H0(w, k, l)
	} else {
		p.RLVRBestEntry, p.BestEntryBranch = RLVRBestEntry(g)
	}
	for _, src := range []bool{true, false} {
		o, err := Optimum(g, src)
		if err != nil {
			continue
		}
		if src {
			p.RLVROptimumSourceTrained = o.HittingTime
		} else {
			p.RLVROptimumSourceFrozen = o.HittingTime
		}
		if src == trainSource {
			p.RLVROptimum, p.RLVROptimumSource, p.RLVROptimumEntry, p.FirstBranch = o.HittingTime, o.Source, o.Entry, o.FirstBranch
			p.RLVROptimumCertificate, p.Certified = o.Certificate, o.Certificate.Holds(1e-9)
		}
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
