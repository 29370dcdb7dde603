package trainers

import (
	"context"
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// dense is the learner of pretraining (Theorem 1): a bigram over every pair
// of states (the dense 2|E| x 2|E| parameter), zero logits, trained by
// cross-entropy on world-model pairs (s, a) with s uniform and a uniform
// over the valid next states of s. It has no hitting time (its policy puts
// mass on invalid transitions); it reports Theorem 1's quantities instead.
type dense struct {
	bigramStep
	g  *tasks.Graph
	st denseState
}

// denseState is what pretraining checkpoints besides its logits: the
// largest ratio to Theorem 1's bound over every step measured so far.
type denseState struct {
	MaxBoundRatio float64 `json:"max_bound_ratio"`
}

// newDense builds the pretraining learner, refusing a dense parameter over
// the graph's memory budget.
func newDense(t *Trainer) (*dense, error) {
	v := t.g.NumStates()
	budget := t.g.Config.Budget()
	// Measured at W=K=15, L=5 (7.46M dense entries): about 1.4 GB, some 190
	// bytes per entry with gorgonia's intermediates and the optimiser.
	const perEntry = 200
	if need := perEntry * float64(v) * float64(v); need > float64(budget) {
		return nil, fmt.Errorf("trainers: pretrain: the dense %d x %d parameter needs about %.3g GiB, over the budget of %.3g GiB (max_bytes): pretrain a smaller graph",
			v, v, need/(1<<30), float64(budget)/(1<<30))
	}
	model, err := nn.NewBigram(nn.BigramConfig{Vocab: v, Support: nn.DenseSupport(v)}, nil)
	if err != nil {
		return nil, err
	}
	d := &dense{bigramStep: bigramStep{t: t, model: model}, g: t.g}
	d.pairs = make([]float64, v*v)
	for s := range v {
		row := t.g.Row(s)
		for _, a := range row {
			d.pairs[s*v+a] = 1 / (float64(v) * float64(len(row)))
		}
	}
	d.in = newVec(model.Graph(), model.NumParams(), "constants")
	cost, err := model.WeightedLogLik(d.in.node) // sum_e -q(e) log pi(e)
	if err != nil {
		return nil, err
	}
	for k, e := range model.TrainableEntries() {
		d.in.data()[k] = -d.pairs[e]
	}
	return d, d.compile(cost)
}

func (d *dense) layout() string { return "dense-bigram" }

// measure fills the Theorem 1 metrics: the largest mass on invalid
// transitions and its ratio to the bound n_s/(m_s + t).
func (d *dense) measure(_ context.Context, row *Row) error {
	t := d.t
	v := d.g.NumStates()
	probs := d.model.Probs()
	tau := t.cfg.Optim.LR * float64(t.done) / float64(v)
	row.InvalidMass, row.BoundRatio = 0, 0
	for s := range v {
		valid := 0.0
		for _, a := range d.g.Row(s) {
			valid += probs[s*v+a]
		}
		invalid := math.Max(0, 1-valid)
		m := float64(len(d.g.Row(s)))
		bound := (float64(v) - m) / (m + tau)
		row.InvalidMass = math.Max(row.InvalidMass, invalid)
		row.BoundRatio = math.Max(row.BoundRatio, invalid/bound)
	}
	row.Objective = crossEntropy(d.pairs, probs)
	d.st.MaxBoundRatio = math.Max(d.st.MaxBoundRatio, row.BoundRatio)
	row.MaxBoundRatio = d.st.MaxBoundRatio
	return nil
}

func (d *dense) state() any { return &d.st }
