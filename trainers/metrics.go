package trainers

import (
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/eval"
)

// Row is one line of a run's metrics: the policy before the update of step
// Step.
type Row struct {
	Step int `json:"step"`
	// HittingTime is the exact H_f of the current policy (NaN for pretrain,
	// whose dense policy still puts mass on invalid transitions), or for a
	// transformer a Monte Carlo estimate with its 95% confidence
	// half-width HittingTimeCI95 and the share of rollouts that hit
	// within the evaluation horizon, MCSuccessRate (both 0 when exact).
	HittingTime     float64 `json:"hitting_time"`
	HittingTimeCI95 float64 `json:"hitting_time_ci95"`
	MCSuccessRate   float64 `json:"mc_success_rate"`
	// Objective is J = 1 - H_f for rlvr-exact (beta = 1), the cross-entropy
	// loss for the other trainers.
	Objective float64 `json:"objective"`
	// A, B, C, D are a_j, b_j, c_j, d_j averaged over depths and branches.
	A, B, C, D float64
	// Depths holds a_j..d_j per depth, averaged over the branches that
	// have that depth (Branch is 0).
	Depths []eval.ABCDRow `json:"-"`
	// InvalidMass (pretrain) is max_s of the mass on invalid transitions,
	// BoundRatio max_s of that mass over Theorem 1's bound n_s/(m_s + t),
	// t = lr * step / |states| the rescaled time (<= 1 when the theorem
	// holds; meaningful for sgd, the discretised gradient flow).
	InvalidMass float64 `json:"invalid_mass,omitempty"`
	BoundRatio  float64 `json:"bound_ratio,omitempty"`
	// Sampled trainers: transitions and rollouts sampled so far, and the
	// latest batch.
	Tokens, Rollouts int
	Batch            BatchStats
}

// measure computes the metrics of the current policy (and caches the exact
// analysis for the RLVR step that follows).
func (t *Trainer) measure() (Row, error) {
	row := Row{Step: t.done, HittingTime: math.NaN(), InvalidMass: math.NaN(), BoundRatio: math.NaN(),
		A: math.NaN(), B: math.NaN(), C: math.NaN(), D: math.NaN()}
	if t.cfg.Trainer == "pretrain" {
		row.InvalidMass, row.BoundRatio = 0, 0
		return t.measurePretrain(row), nil
	}
	if t.tf != nil {
		return t.measureTransformer()
	}
	probs := t.model.Probs()
	res, err := t.an.Analyze(probs)
	if err != nil {
		return row, fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	t.probs, t.res, t.resStep = probs, res, t.done
	row.HittingTime = res.HittingTime
	if math.IsNaN(row.HittingTime) || math.IsInf(row.HittingTime, 0) {
		return row, fmt.Errorf("trainers: step %d: hitting time is %v", t.done, row.HittingTime)
	}
	switch t.cfg.Trainer {
	case "rlvr-exact":
		row.Objective = 1 - res.HittingTime
	case "reinforce", "ppo":
		row.Objective = 1 - t.cfg.Beta*res.HittingTime // exact J with the length penalty, no horizon
		row.Tokens, row.Rollouts, row.Batch = t.smp.tokens, t.smp.rollouts, t.smp.batch
	default:
		for i, q := range t.pairs {
			if q > 0 {
				row.Objective -= q * math.Log(probs[i])
			}
		}
	}
	return row, nil
}

// fillABCD adds a_j..d_j per depth and their means to a row about to be
// written (the policy measured last).
func (t *Trainer) fillABCD(row *Row) {
	if t.cfg.Trainer == "pretrain" || t.tf != nil || t.probs == nil {
		return
	}
	row.Depths = depthMeans(eval.ABCDTable(t.g, t.probs))
	row.A, row.B, row.C, row.D = 0, 0, 0, 0
	var n float64
	for _, d := range row.Depths {
		row.A, row.B, row.C, row.D = row.A+d.A, row.B+d.B, row.C+d.C, row.D+d.D
		n++
	}
	row.A, row.B, row.C, row.D = row.A/n, row.B/n, row.C/n, row.D/n
}

// depthMeans averages an a/b/c/d table over branches, depth by depth.
func depthMeans(rows []eval.ABCDRow) []eval.ABCDRow {
	var out []eval.ABCDRow
	var count []float64
	for _, r := range rows {
		for len(out) < r.Depth {
			out = append(out, eval.ABCDRow{Depth: len(out) + 1})
			count = append(count, 0)
		}
		o := &out[r.Depth-1]
		o.A, o.B, o.C, o.D = o.A+r.A, o.B+r.B, o.C+r.C, o.D+r.D
		count[r.Depth-1]++
	}
	for i := range out {
		o := &out[i]
		o.A, o.B, o.C, o.D = o.A/count[i], o.B/count[i], o.C/count[i], o.D/count[i]
	}
	return out
}
