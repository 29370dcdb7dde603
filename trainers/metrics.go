package trainers

import (
	"context"
	"math"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Row is one line of a run's metrics: the policy before the update of step
// Step. Quantities that do not apply to the trainer or model are NaN.
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
	// Estimated is set when HittingTime is a Monte Carlo estimate.
	Estimated bool `json:"estimated"`
	// Objective is J = 1 - H_f for rlvr-exact (beta = 1), 1 - beta H_f for
	// the sampled trainers, the cross-entropy loss for the other trainers.
	Objective float64 `json:"objective"`
	// A, B, C, D are a, b, c, d along the policy's own paths, as the paper
	// means them: each state's desired probability weighted by its expected
	// visits (eval.Analysis.VisitABCD), pooled over depths and branches; a
	// multiedge copy the policy never enters weighs nothing. Depths holds
	// them per depth (Branch 0; NaN at a depth never visited).
	A, B, C, D float64
	Depths     []eval.ABCDRow `json:"-"`
	// Copies holds the plain means over every copy, visited or not:
	// per depth over branches and copies, and its mean over depths.
	Copies     eval.ABCDRow   `json:"-"`
	CopyDepths []eval.ABCDRow `json:"-"`
	// InvalidMass (pretrain) is max_s of the mass on invalid transitions,
	// BoundRatio max_s of that mass over Theorem 1's bound n_s/(m_s + t),
	// t = lr * step / |states| the rescaled time (<= 1 when the theorem
	// holds; meaningful for sgd, the discretised gradient flow).
	InvalidMass float64 `json:"invalid_mass,omitempty"`
	BoundRatio  float64 `json:"bound_ratio,omitempty"`
	// MaxBoundRatio is the largest BoundRatio of every step so far, logged
	// or not (pretrain).
	MaxBoundRatio float64 `json:"max_bound_ratio,omitempty"`
	// Sampled trainers: transitions and rollouts sampled so far, tokens
	// trained so far (summed over epochs; see ratioStats.trained), and the
	// latest batch.
	Tokens, Rollouts, TrainedTokens int
	// MeasuredTokens are the tokens sampled so far by fresh Monte Carlo
	// measurements (periodic ones, stop decisions), beside Tokens.
	MeasuredTokens int
	Batch          BatchStats
	// LR is the learning rate of the next step (Config.LRDecay), and
	// StepSeconds the wall time of the last step this process took (NaN
	// at the first row and at the first row after a resume).
	LR          float64
	StepSeconds float64
}

// measure computes the metrics of the current policy.
func (t *Trainer) measure(ctx context.Context) (Row, error) {
	defer region("measurement").End()
	nan := math.NaN()
	row := Row{Step: t.done, HittingTime: nan, Objective: nan, InvalidMass: nan, BoundRatio: nan, MaxBoundRatio: nan, A: nan, B: nan, C: nan, D: nan,
		LR: t.lr(), StepSeconds: t.stepSeconds}
	if err := t.l.measure(ctx, &row); err != nil {
		return row, err
	}
	if h := row.HittingTime; !t.cfg.Trainer.Dense() && (math.IsNaN(h) || math.IsInf(h, 0)) {
		return row, &NonFinite{Step: t.done, Quantity: "hitting_time", Value: h}
	}
	switch k := t.cfg.Trainer; {
	case k.Exact():
		row.Objective = 1 - row.HittingTime
	case k.Sampled():
		est, err := t.sampled().estimate(ctx)
		if err != nil {
			return row, err
		}
		row.Objective = 1 - t.cfg.Beta*est // J with the length penalty, no horizon
		row.Tokens, row.Rollouts, row.TrainedTokens, row.Batch = t.smp.tokens, t.smp.rollouts, t.smp.trained, t.smp.batch
	}
	return row, nil
}

// setABCD puts a/b/c/d into a row: the visit-weighted depths and mean of
// an exact analysis, and the per-copy table of the policy probs.
func setABCD(row *Row, r *eval.Analysis, g *tasks.Graph, probs []float64) {
	var mean eval.ABCDRow
	_, row.Depths, mean = r.VisitABCD()
	row.A, row.B, row.C, row.D = mean.A, mean.B, mean.C, mean.D
	row.CopyDepths, row.Copies = eval.PerCopyMeans(eval.ABCDTable(g, probs))
}
