package trainers

import (
	"fmt"
	"math"
)

// NonFinite reports a quantity of a run that became NaN or infinite: an
// objective, a gradient's norm, a reward. Run returns it before the row
// that holds it is logged and Checkpoint before it is written, so the last
// checkpoint written holds the last good state.
type NonFinite struct {
	Step     int    // the row's step, or the step whose update made it
	Quantity string // the metrics column: objective, grad_norm, ...
	Value    float64
}

func (e *NonFinite) Error() string {
	return fmt.Sprintf("trainers: step %d: %s is %v", e.Step, e.Quantity, e.Value)
}

// quantity is one named float of a row or a batch's statistics.
type quantity struct {
	name  string
	value float64
}

// quantities are the batch statistics' floats under their metrics column
// names. None applies only to some runs: each is finite in a good run.
func (b *BatchStats) quantities() []quantity {
	return []quantity{
		{"success_rate", b.SuccessRate}, {"mean_length", b.MeanLength}, {"approx_kl", b.ApproxKL}, {"clip_frac", b.ClipFrac},
		{"flat_groups", b.FlatGroups}, {"entropy", b.Entropy}, {"reward_mean", b.RewardMean}, {"reward_std", b.RewardStd},
		{"reward_min", b.RewardMin}, {"reward_max", b.RewardMax}, {"truncated", b.Truncated}, {"grad_norm", b.GradNorm},
		{"value_loss", b.ValueLoss}, {"explained_variance", b.ExplainedVariance},
	}
}

// quantities are the row's own floats (not its batch's) under their
// metrics column names. NaN marks one that does not apply (Row).
func (r *Row) quantities() []quantity {
	return []quantity{
		{"hitting_time", r.HittingTime}, {"hitting_time_ci95", r.HittingTimeCI95}, {"mc_success_rate", r.MCSuccessRate},
		{"objective", r.Objective}, {"a", r.A}, {"b", r.B}, {"c", r.C}, {"d", r.D}, {"invalid_mass", r.InvalidMass},
		{"bound_ratio", r.BoundRatio}, {"max_bound_ratio", r.MaxBoundRatio}, {"lr", r.LR},
	}
}

// checkBatch refuses batch statistics with a NaN or infinite value; step
// is the step whose update they describe.
func checkBatch(step int, b *BatchStats) error {
	for _, q := range b.quantities() {
		if math.IsNaN(q.value) || math.IsInf(q.value, 0) {
			return &NonFinite{Step: step, Quantity: q.name, Value: q.value}
		}
	}
	return nil
}

// checkRow refuses a row with an infinite value (NaN marks what does not
// apply, the hitting time measure checks), or with batch statistics that
// checkBatch refuses.
func (t *Trainer) checkRow(r *Row) error {
	for _, q := range r.quantities() {
		if math.IsInf(q.value, 0) {
			return &NonFinite{Step: r.Step, Quantity: q.name, Value: q.value}
		}
	}
	if t.smp == nil {
		return nil
	}
	return checkBatch(r.Step, &r.Batch)
}
