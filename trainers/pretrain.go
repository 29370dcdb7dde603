package trainers

import (
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// buildPretrain sets up Theorem 1: a bigram over every pair of states (the
// dense 2|E| x 2|E| parameter), zero logits, trained by cross-entropy on
// world-model pairs (s, a) with s uniform and a uniform over the valid next
// states of s.
func (t *Trainer) buildPretrain() error {
	v := t.g.NumStates()
	budget := t.g.Config.MaxBytes
	if budget == 0 {
		budget = tasks.DefaultMaxBytes
	}
	// Measured at W=K=15, L=5 (7.46M dense entries): about 1.4 GB, some 190
	// bytes per entry with gorgonia's intermediates and the optimiser.
	const perEntry = 200
	if need := perEntry * float64(v) * float64(v); need > float64(budget) {
		return fmt.Errorf("trainers: pretrain: the dense %d x %d parameter needs about %.3g GiB, over the budget of %.3g GiB (max_bytes): pretrain a smaller graph",
			v, v, need/(1<<30), float64(budget)/(1<<30))
	}
	model, err := nn.NewBigram(nn.BigramConfig{Vocab: v, Support: nn.DenseSupport(v)}, nil)
	if err != nil {
		return err
	}
	t.model = model
	t.pairs = make([]float64, v*v)
	for s := range v {
		row := t.g.Row(s)
		for _, a := range row {
			t.pairs[s*v+a] = 1 / (float64(v) * float64(len(row)))
		}
	}
	return nil
}

// measurePretrain fills the Theorem 1 metrics: the largest mass on invalid
// transitions and its ratio to the bound n_s/(m_s + t).
func (t *Trainer) measurePretrain(row Row) Row {
	v := t.g.NumStates()
	probs := t.model.Probs()
	tau := t.cfg.Optim.LR * float64(t.done) / float64(v)
	for s := range v {
		valid := 0.0
		for _, a := range t.g.Row(s) {
			valid += probs[s*v+a]
		}
		invalid := math.Max(0, 1-valid)
		m := float64(len(t.g.Row(s)))
		bound := (float64(v) - m) / (m + tau)
		row.InvalidMass = math.Max(row.InvalidMass, invalid)
		row.BoundRatio = math.Max(row.BoundRatio, invalid/bound)
	}
	for i, q := range t.pairs {
		if q > 0 {
			row.Objective -= q * math.Log(probs[i])
		}
	}
	return row
}
