package trainers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Trainer trains a bigram policy on one world graph. Every gradient comes
// from gorgonia's autodiff of a loss built in the model's graph; what
// changes between trainers is the loss and the constants fed into it.
type Trainer struct {
	cfg    Config
	g      *tasks.Graph
	model  *nn.Bigram
	solver nn.Solver
	step   *nn.Step
	in     vec // (P) loss constants: pair weights or RLVR advantages
	smp    *sampled
	tf     *learner // the transformer, when it is the model (transformer.go)
	an     *eval.Analyzer
	pairs  []float64 // cross-entropy pair weights, one per support entry
	limit  float64   // hitting time the run converges to (0: none)
	pcg    *rand.PCG
	rng    *rand.Rand
	done   int // optimiser steps taken

	// The policy and exact analysis measured at step resStep.
	probs   []float64
	res     *eval.Analysis
	resStep int

	// Supervised lists the backward states whose backward move SFT
	// supervises (Appendix F).
	Supervised []int
}

// New builds a trainer. init holds the starting logits, one per valid
// transition of g in CSR order (nil: the pretrained uniform world model);
// pretrain ignores it and starts from zero logits over every pair of
// states. teacher is the distillation teacher's transition table (distill
// only).
func New(cfg Config, g *tasks.Graph, init, teacher []float64) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, g: g, an: eval.NewAnalyzer(g)}
	t.pcg = rand.NewPCG(cfg.Seed, 0x6a09e667f3bcc909)
	t.rng = rand.New(t.pcg)
	pred := eval.Predict(g)
	var err error
	switch cfg.Trainer {
	case "pretrain":
		err = t.buildPretrain()
	case "sft":
		t.limit = pred.SFTLimit
		t.pairs, t.Supervised, err = SFTPairs(g, cfg.SupervisedBackward, t.rng)
		if err == nil && len(t.Supervised) > 0 {
			var r *eval.Analysis
			if r, err = t.an.Analyze(eval.PolicySFTLimitSupervised(g, t.Supervised)); err == nil {
				t.limit = r.HittingTime
			}
		}
	case "distill":
		if teacher == nil {
			return nil, fmt.Errorf("trainers: distill needs a teacher policy")
		}
		var r *eval.Analysis
		if r, err = t.an.Analyze(teacher); err != nil {
			return nil, fmt.Errorf("trainers: teacher: %w", err)
		}
		t.limit = r.HittingTime // the student converges to its teacher
		if cfg.DistillTraces > 0 {
			t.pairs, err = SampledTeacherPairs(g, teacher, cfg.DistillTraces, t.rng)
		} else {
			t.pairs, err = TeacherPairs(g, teacher)
		}
	case "rlvr-exact", "reinforce", "ppo":
		t.limit = pred.RLVROptimum
	}
	if err != nil {
		return nil, err
	}
	if t.model == nil {
		if t.model, err = graphBigram(g, init); err != nil {
			return nil, err
		}
	}
	if err := t.buildLoss(); err != nil {
		return nil, err
	}
	return t, nil
}

// graphBigram is the bigram over the graph's valid transitions: the world
// model's mask is its support, so invalid transitions have probability
// exactly 0. Fork-incoming and leaf-incoming rows are frozen (Section 4.1).
func graphBigram(g *tasks.Graph, init []float64) (*nn.Bigram, error) {
	frozen := make([]bool, g.NumStates())
	for s := range frozen {
		frozen[s] = !g.Trained(s)
	}
	cfg := nn.BigramConfig{Vocab: g.NumStates(), Support: support(g), Frozen: frozen}
	if init != nil && len(init) != len(g.Next) {
		return nil, fmt.Errorf("trainers: initial logits: %d values for %d valid transitions", len(init), len(g.Next))
	}
	return nn.NewBigram(cfg, init)
}

// support is the graph's valid transitions as the model's support: its
// entries are the graph's CSR entries.
func support(g *tasks.Graph) nn.Support { return nn.Support{Offsets: g.Offsets, Next: g.Next} }

// buildLoss adds the loss to the model's graph and compiles the step.
func (t *Trainer) buildLoss() error {
	if t.cfg.Trainer != "ppo" { // ppo's constants are its own (sampled.go)
		t.in = newVec(t.model.Graph(), t.model.NumParams(), "constants")
	}
	var cost *G.Node
	var err error
	switch t.cfg.Trainer {
	case "rlvr-exact":
		cost, err = t.model.ExpectedCost(t.in.node) // sum_e A(e) pi(e): grad = grad of H_f
	case "reinforce", "ppo":
		cost, err = t.buildSampled()
	default:
		cost, err = t.model.WeightedLogLik(t.in.node) // sum_e -q(e) log pi(e)
		w := t.in.data()
		for k, e := range t.model.TrainableEntries() {
			w[k] = -t.pairs[e]
		}
	}
	if err != nil {
		return err
	}
	if t.solver, err = nn.NewSolver(t.cfg.Optim); err != nil {
		return err
	}
	t.step, err = nn.NewStep(cost, t.model.Learnables(), t.solver)
	return err
}

// Model is the bigram being trained (nil when the model is a transformer).
func (t *Trainer) Model() *nn.Bigram { return t.model }

// Graph is the world graph.
func (t *Trainer) Graph() *tasks.Graph { return t.g }

// Steps is the number of optimiser steps taken.
func (t *Trainer) Steps() int { return t.done }

// Limit is the exact hitting time of the policy the run converges to: the
// converged backtracking policy with the best entry row (rlvr-exact,
// reinforce, ppo; eval.RLVROptimum), the teacher (distill), the SFT limit
// with its supervised backward states backtracking (sft); 0 for pretrain.
func (t *Trainer) Limit() float64 { return t.limit }

// Close releases the tape machine.
func (t *Trainer) Close() error { return t.step.Close() }

// Hooks are called by Run: Row with the metrics of step 0, every LogEvery
// steps and the last step; Step after each optimiser step with the number
// of steps taken (a place for checkpoints). Either may be nil.
type Hooks struct {
	Row  func(Row) error
	Step func(steps int) error
}

// ErrStalled reports a run stopped because its loss stopped improving (see
// Config.Patience).
var ErrStalled = errors.New("no progress")

// Run trains until the cap, convergence (Config.Until), a stall
// (Config.Patience) or cancellation of ctx. A canceled run returns ctx.Err()
// after its last complete step; the trainer stays consistent and can be
// checkpointed and resumed. A stalled run returns its last row and an error
// wrapping ErrStalled.
func (t *Trainer) Run(ctx context.Context, h Hooks) (Row, error) {
	best, bestStep := math.Inf(1), t.done
	for {
		row, err := t.measure()
		if err != nil {
			return row, err
		}
		if l := row.HittingTime; math.IsInf(best, 1) || l < best-1e-9*math.Abs(best) {
			best, bestStep = l, t.done
		}
		stalled := t.cfg.Trainer == "rlvr-exact" && t.cfg.Patience > 0 && t.done-bestStep >= t.cfg.Patience
		last := t.done >= t.cfg.Steps || t.converged(row) || stalled
		if t.done%t.cfg.LogEvery == 0 || last {
			t.fillABCD(&row)
		}
		if h.Row != nil && (t.done%t.cfg.LogEvery == 0 || last) {
			if err := h.Row(row); err != nil {
				return row, err
			}
		}
		if stalled {
			return row, fmt.Errorf("trainers: %w: the hitting time has not improved for %d steps (best %.10g at step %d, now %.10g); "+
				"with %s at lr %g this is usually a cycle of the discrete updates: try a smaller -lr or another -optimizer",
				ErrStalled, t.cfg.Patience, best, bestStep, row.HittingTime, t.cfg.Optim.Name, t.cfg.Optim.LR)
		}
		if last {
			return row, nil
		}
		if err := ctx.Err(); err != nil {
			return row, err
		}
		if err := t.Step(); err != nil {
			return row, err
		}
		if h.Step != nil {
			if err := h.Step(t.done); err != nil {
				return row, err
			}
		}
	}
}

// Converged reports whether a row meets the run's stop rule (Config.Until).
func (t *Trainer) Converged(r Row) bool { return t.converged(r) }

// converged reports the stop rule of Config.Until: within Until of the
// limit (for a transformer's RLVR: at most Until above it), or for pretraining a mass on invalid transitions below Until.
func (t *Trainer) converged(r Row) bool {
	if t.cfg.Trainer == "pretrain" {
		return t.cfg.Until > 0 && r.InvalidMass <= t.cfg.Until
	}
	if t.tf != nil && (t.cfg.Trainer == "reinforce" || t.cfg.Trainer == "ppo") {
		// A transformer remembers its rollout and can beat the bigram's
		// optimum (it turns back on re-entering a branch it has searched),
		// so only an estimate above the limit counts as unconverged.
		return t.cfg.Until > 0 && r.MCSuccessRate == 1 && r.HittingTime <= (1+t.cfg.Until)*t.limit
	}
	return t.cfg.Until > 0 && t.limit > 0 && math.Abs(r.HittingTime-t.limit) <= t.cfg.Until*t.limit
}

// Step takes one optimiser step (for reinforce and ppo: one iteration of
// sampling and updates).
func (t *Trainer) Step() error {
	if t.cfg.LRDecay == "linear" { // a function of the step alone: resumes exactly
		t.solver.SetLR(t.cfg.Optim.LR * (1 - float64(t.done)/float64(t.cfg.Steps)))
	}
	switch {
	case t.tf != nil && (t.cfg.Trainer == "reinforce" || t.cfg.Trainer == "ppo"):
		return t.transformerSampledStep()
	case t.tf != nil:
		return t.transformerCEStep()
	}
	switch t.cfg.Trainer {
	case "reinforce", "ppo":
		return t.sampledStep()
	case "rlvr-exact":
		if err := t.advantages(); err != nil {
			return err
		}
	}
	if err := t.runStep(t.in); err != nil {
		return err
	}
	t.done++
	return nil
}

// advantages fills the RLVR constants: for each trainable transition,
// A(s,a) = C(s,a) - sum_b pi(b|s) C(s,b) with C(s,a) = E_x[d_x(s) h_x(a)]
// (eval.CostWeights), so that the autodiff gradient of sum pi A is the
// exact dH_f/dTheta = -dJ/dTheta of Lemma 'policygrad' (Appendix B),
// E_x[d_x(s) pi(a|s) (h_x(a) - hbar_x(s))]. Differences below 1e-12 of the
// row's scale are rounding (e.g. between symmetric branches or multiedges)
// and are set to exactly 0: sign descent would otherwise turn them into
// full +-lr steps and break the symmetry the paper's analysis relies on.
func (t *Trainer) advantages() error {
	if t.res == nil || t.resStep != t.done {
		if _, err := t.measure(); err != nil {
			return err
		}
	}
	probs := t.probs
	c := t.res.CostWeights()
	out := t.in.data()
	entries := t.model.TrainableEntries()
	g := t.g
	k := 0
	for k < len(entries) {
		s := support(g).RowOf(entries[k])
		lo, hi := g.Offsets[s], g.Offsets[s+1]
		mean, scale := 0.0, 0.0
		for i := lo; i < hi; i++ {
			mean += probs[i] * c[i]
			scale = math.Max(scale, math.Abs(c[i]))
		}
		for i := lo; i < hi; i++ {
			a := c[i] - mean
			if math.Abs(a) <= 1e-12*scale {
				a = 0
			}
			out[k] = a
			k++
		}
	}
	return nil
}
