package trainers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
)

// Trainer trains one model on one world graph. Every gradient comes from
// gorgonia's autodiff of a loss built in the model's graph; what changes
// between trainers is the loss and the constants fed into it, and between
// models the learner behind it (learner.go). The loop, the stop rules, the
// seeds and the checkpointed state are the same for every model.
type Trainer struct {
	cfg   Config
	model Model
	g     *tasks.Graph
	l     learner
	an    *eval.Analyzer
	limit float64 // hitting time the run converges to (0: none)
	pcg   *rand.PCG
	rng   *rand.Rand
	done  int      // optimiser steps taken
	smp   *sampled // reinforce and ppo: counters, critic, fork states

	// Supervised lists the backward states whose backward move SFT
	// supervises (Appendix F).
	Supervised []int
}

// New builds a trainer of s.Model for cfg on graph g. Fields of cfg left
// unset are resolved first (Config.Resolve).
func New(cfg Config, g *tasks.Graph, s Setup) (*Trainer, error) {
	if s.Model == "" {
		s.Model = BigramModel
	}
	cfg = cfg.Resolve(s.Model)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := s.Model.Check(cfg, s); err != nil {
		return nil, err
	}
	if cfg.Trainer.UsesTeacher() && s.Teacher == nil {
		return nil, fmt.Errorf("trainers: distill needs a teacher policy")
	}
	if s.Init != nil && len(s.Init) != len(g.Next) {
		return nil, fmt.Errorf("trainers: initial logits: %d values for %d valid transitions", len(s.Init), len(g.Next))
	}
	t := &Trainer{cfg: cfg, model: s.Model, g: g, an: eval.NewAnalyzer(g)}
	t.pcg = rand.NewPCG(cfg.Seed, 0x6a09e667f3bcc909)
	t.rng = rand.New(t.pcg)
	if cfg.Trainer.Sampled() {
		t.smp = newSampled(g, cfg)
	}
	var err error
	if t.l, err = models[s.Model].build(t, s); err != nil {
		return nil, err
	}
	if t.limit, err = t.limitOf(s.Teacher); err != nil {
		t.l.close()
		return nil, err
	}
	return t, nil
}

// limitOf is the exact hitting time of the policy the run converges to:
// the RLVR optimum (eval.RLVROptimum) for the RL trainers, the teacher's
// for distill, the SFT limit with its supervised backward states
// backtracking for sft, none for pretrain.
func (t *Trainer) limitOf(teacher []float64) (float64, error) {
	k := t.cfg.Trainer
	switch {
	case k.RL():
		return eval.Predict(t.g).RLVROptimum, nil
	case k == SFT && len(t.Supervised) > 0:
		r, err := t.an.Analyze(eval.PolicySFTLimitSupervised(t.g, t.Supervised))
		if err != nil {
			return 0, err
		}
		return r.HittingTime, nil
	case k == SFT:
		return eval.Predict(t.g).SFTLimit, nil
	case k.UsesTeacher():
		r, err := t.an.Analyze(teacher)
		if err != nil {
			return 0, fmt.Errorf("trainers: teacher: %w", err)
		}
		return r.HittingTime, nil
	}
	return 0, nil
}

// Config is the resolved configuration.
func (t *Trainer) Config() Config { return t.cfg }

// Model is the model being trained.
func (t *Trainer) Model() Model { return t.model }

// Graph is the world graph.
func (t *Trainer) Graph() *tasks.Graph { return t.g }

// Steps is the number of optimiser steps taken.
func (t *Trainer) Steps() int { return t.done }

// Limit is the exact hitting time of the policy the run converges to (see
// limitOf); 0 for pretrain.
func (t *Trainer) Limit() float64 { return t.limit }

// Vocab is the model's token vocabulary: the graph's, with the model's
// rows marked (tokenizer.Vocab.ForModel).
func (t *Trainer) Vocab() *tokenizer.Vocab { return t.l.vocab() }

// Close releases the learner's tape machine.
func (t *Trainer) Close() error { return t.l.close() }

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
		stalled := t.cfg.Trainer.Stalls() && t.cfg.Patience > 0 && t.done-bestStep >= t.cfg.Patience
		last := t.done >= t.cfg.Steps || t.converged(row) || stalled
		logged := t.done%t.cfg.LogEvery == 0 || last
		if logged {
			t.l.abcd(&row)
		}
		if h.Row != nil && logged {
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

// converged is the stop rule of Config.Until: within Until of the limit,
// or for pretraining a mass on invalid transitions below Until. A Monte
// Carlo estimate (a transformer) counts once every evaluation rollout hits
// and it is at most Until above the limit: a policy that remembers its
// rollout can beat the bigram's optimum (it turns back on re-entering a
// branch it has searched).
func (t *Trainer) converged(r Row) bool {
	until := t.cfg.Until
	switch {
	case until == 0:
		return false
	case t.cfg.Trainer.Dense():
		return r.InvalidMass <= until
	case t.limit <= 0:
		return false
	case r.Estimated:
		return r.MCSuccessRate == 1 && r.HittingTime <= (1+until)*t.limit
	}
	return math.Abs(r.HittingTime-t.limit) <= until*t.limit
}

// Step takes one optimiser step (for reinforce and ppo: one iteration of
// sampling and updates).
func (t *Trainer) Step() error {
	if t.cfg.LRDecay == "linear" { // a function of the step alone: resumes exactly
		t.l.solver().SetLR(t.cfg.Optim.LR * (1 - float64(t.done)/float64(t.cfg.Steps)))
	}
	var err error
	switch k := t.cfg.Trainer; {
	case k.Sampled():
		err = t.sampledStep()
	case k.Exact():
		err = t.l.(exactStepper).exactStep()
	default:
		err = t.l.crossEntropyStep()
	}
	if err != nil {
		return err
	}
	t.done++
	return nil
}

// stepSeed seeds the current step's sampling: rollout i of step k draws
// from its own stream, so a batch depends on (seed, k) only and a resumed
// run samples exactly the same batches.
func (t *Trainer) stepSeed() uint64 { return t.cfg.Seed ^ (uint64(t.done+1) * 0x9e3779b97f4a7c15) }
