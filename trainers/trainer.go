package trainers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

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
	pred  eval.Predictions
	// trained[s] is whether state s's row is trained: not the rows the
	// paper fixes (fork-incoming, leaf-incoming) nor, unless
	// Config.TrainSource, the source row.
	trained []bool
	stop    Stop // why Run returned
	// stepSeconds is the wall time of the last step this process took
	// (NaN before any).
	stepSeconds float64

	// Supervised lists the backward states whose backward move SFT
	// supervises (Appendix F).
	Supervised []int
}

// New builds a trainer of s.Model for cfg on graph g; cfg is used as it is
// (start from Defaults), its fields checked (Config.Validate).
func New(cfg Config, g *tasks.Graph, s Setup) (*Trainer, error) {
	if s.Model == "" {
		s.Model = BigramModel
	}
	if err := cfg.Validate(s.Model); err != nil {
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
	// The source row is trained only where train_source applies (Fields):
	// sft's golden paths and pretraining's world-model pairs are uniform
	// over the branch entries there.
	source := cfg.TrainSource && trainsSource(cfg.Trainer)
	t := &Trainer{cfg: cfg, model: s.Model, g: g, an: eval.NewAnalyzer(g), pred: eval.Predict(g, source), stepSeconds: math.NaN()}
	t.trained = trainedRows(g, source)
	if err := t.checkTraces(s.Teacher); err != nil {
		return nil, err
	}
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
// the exact optimum of the setting (eval.Optimum: over every row it
// trains) for the RL trainers, the teacher's for distill, the SFT limit
// with its supervised backward states backtracking for sft, none for
// pretrain.
func (t *Trainer) limitOf(teacher []float64) (float64, error) {
	k := t.cfg.Trainer
	switch {
	case k.RL():
		if t.pred.RLVROptimum <= 0 {
			return 0, fmt.Errorf("trainers: no exact optimum for graph %s", t.g.Config.Name())
		}
		return t.pred.RLVROptimum, nil
	case k == SFT && len(t.Supervised) > 0:
		r, err := t.an.Analyze(eval.PolicySFTLimitSupervised(t.g, t.Supervised))
		if err != nil {
			return 0, err
		}
		return r.HittingTime, nil
	case k == SFT:
		return t.pred.SFTLimit, nil
	case k.UsesTeacher():
		r, err := t.an.Analyze(teacher)
		if err != nil {
			return 0, fmt.Errorf("trainers: teacher: %w", err)
		}
		return r.HittingTime, nil
	}
	return 0, nil
}

// traceBytes is about the memory a sampled teacher trace takes per
// transition while the traces are drawn (its entry, log-probability and
// token, and the learner's copy).
const traceBytes = 24

// checkTraces refuses, before any is drawn, distill_traces whose traces
// would not fit the graph's memory budget: about DistillTraces times the
// teacher's hitting time transitions, drawn before the first step.
func (t *Trainer) checkTraces(teacher []float64) error {
	n := t.cfg.DistillTraces
	if !t.cfg.Trainer.UsesTeacher() || n == 0 || teacher == nil {
		return nil
	}
	r, err := t.an.Analyze(teacher)
	if err != nil {
		return fmt.Errorf("trainers: teacher: %w", err)
	}
	budget := float64(t.g.Config.Budget())
	if need := float64(n) * r.HittingTime * traceBytes; need > budget {
		return fmt.Errorf("trainers: distill_traces %d: about %.3g teacher transitions (%d traces of %.4g on average) need about %.3g GiB, over the budget of %.3g GiB (max_bytes): lower -distill-traces (0: the teacher's exact distribution)",
			n, float64(n)*r.HittingTime, n, r.HittingTime, need/(1<<30), budget/(1<<30))
	}
	return nil
}

// trainedRows marks the rows a run trains: not the rows the paper fixes
// (fork-incoming, leaf-incoming) nor, unless source, the source row.
func trainedRows(g *tasks.Graph, source bool) []bool {
	trained := make([]bool, g.NumStates())
	for s := range trained {
		trained[s] = g.Trained(s) && (s != 0 || source)
	}
	return trained
}

// Config is the resolved configuration.
func (t *Trainer) Config() Config { return t.cfg }

// Predictions are the paper's predictions on the graph and the exact
// optimum of the run's setting (eval.Predict).
func (t *Trainer) Predictions() eval.Predictions { return t.pred }

// Trained reports whether state s's row is trained in this run.
func (t *Trainer) Trained(s int) bool { return t.trained[s] }

// Stop says why a run ended.
type Stop string

// The reasons Run returns for.
const (
	StopSteps       Stop = "steps"       // the step cap
	StopTokens      Stop = "tokens"      // the sampled-token cap (Config.MaxTokens)
	StopUntil       Stop = "until"       // within Config.Until of the limit
	StopOptimum     Stop = "optimum"     // no progress, at the exact optimum (within optimumTol)
	StopStationary  Stop = "stationary"  // no progress, at a stationary point above the optimum
	StopStall       Stop = "stall"       // no progress elsewhere: ErrStalled
	StopInterrupted Stop = "interrupted" // the context was canceled
	// StopMemory: the next batch of rollouts would not fit the memory
	// budget (the graph's max_bytes; Trainer.batchBytes): the policy's
	// hitting time, the horizon's unit, has grown that far.
	StopMemory Stop = "memory"
)

// Stop is why the last Run returned ("" before any).
func (t *Trainer) Stop() Stop { return t.stop }

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
// Config.Patience) away from the optimum of its setting.
var ErrStalled = errors.New("no progress")

// optimumTol is how close (relative) to the exact optimum a run that stops
// improving counts as having reached it: sign descent at a fixed step
// oscillates around an interior optimum (a branch entry's c_{i,1} < 1)
// within about this of its value.
const optimumTol = 1e-6

// Run trains until the cap, convergence (Config.Until), a stall
// (Config.Patience) or cancellation of ctx. A canceled run returns ctx.Err()
// after its last complete step; the trainer stays consistent and can be
// checkpointed and resumed. A stalled run returns its last row and an error
// wrapping ErrStalled.
func (t *Trainer) Run(ctx context.Context, h Hooks) (Row, error) {
	best, bestStep := math.Inf(1), t.done
	for {
		row, err := t.measure(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.stop = StopInterrupted
			}
			return row, err
		}
		if l := row.HittingTime; math.IsInf(best, 1) || l < best-1e-9*math.Abs(best) {
			best, bestStep = l, t.done
		}
		stalled := t.cfg.Trainer.Stalls() && t.cfg.Patience > 0 && t.done-bestStep >= t.cfg.Patience
		need, err := t.batchBytes(ctx)
		if err != nil {
			return row, err
		}
		overBudget := need > float64(t.g.Config.Budget())
		last := t.done >= t.cfg.Steps || t.converged(row) || stalled || t.spent() || overBudget
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
			switch t.stop = t.stallReason(best); t.stop {
			case StopOptimum, StopStationary:
				return row, nil
			}
			return row, fmt.Errorf("trainers: %w: the hitting time has not improved for %d steps (best %.10g at step %d, now %.10g); "+
				"with %s at lr %g this is usually a cycle of the discrete updates: try a smaller -lr or another -optimizer",
				ErrStalled, t.cfg.Patience, best, bestStep, row.HittingTime, t.cfg.Optim.Name, t.cfg.Optim.LR)
		}
		if last {
			switch {
			case t.converged(row):
				t.stop = StopUntil
			case t.spent() && t.done < t.cfg.Steps:
				t.stop = StopTokens
			case overBudget && t.done < t.cfg.Steps:
				t.stop = StopMemory
			default:
				t.stop = StopSteps
			}
			return row, nil
		}
		if err := ctx.Err(); err != nil {
			t.stop = StopInterrupted
			return row, err
		}
		if err := t.Step(ctx); err != nil {
			if ctx.Err() != nil {
				t.stop = StopInterrupted
			}
			return row, err
		}
		if h.Step != nil {
			if err := h.Step(t.done); err != nil {
				return row, err
			}
		}
	}
}

// batchBytes is about the memory the next sampled batch would take (0 for
// a trainer that samples nothing): its rollouts end at their target, after
// about the latest hitting time on average, or at the horizon (a multiple
// of it), so each is counted at min(horizon, 2 x the hitting time) (long
// tails, and a hitting time that may have risen since it was measured),
// at the learner's bytes per transition. A run whose policy diverges
// (GRPO at the paper's size climbs from 5e4 to 1e6 in 50 steps) would
// otherwise grow its batches until the machine runs out of memory.
func (t *Trainer) batchBytes(ctx context.Context) (float64, error) {
	if !t.cfg.Trainer.Sampled() {
		return 0, nil
	}
	est, err := t.l.estimate(ctx)
	if err != nil {
		return 0, err
	}
	horizon := math.Ceil(t.cfg.HorizonFactor * est)
	return float64(t.cfg.Rollouts) * math.Min(horizon, 2*est) * t.l.transitionBytes(), nil
}

// stallReason classifies a run that stopped improving: at the exact
// optimum of its setting (its best hitting time within optimumTol of it),
// at a stationary point above it (the exact gradient over every trained
// logit below stationaryTol relative to H_f: the symmetric point that
// exact RLVR keeps when the source row is trained is one), or a stall.
func (t *Trainer) stallReason(best float64) Stop {
	if t.limit > 0 && best <= t.limit*(1+optimumTol) {
		return StopOptimum
	}
	if c, ok := t.l.(certifier); ok {
		if cert, err := c.certify(); err == nil && cert.Gradient <= stationaryTol {
			return StopStationary
		}
	}
	return StopStall
}

// stationaryTol bounds the relative gradient of a stationary point.
const stationaryTol = 1e-6

// certifier is a learner with an exact first-order certificate of its
// current policy (a Markov policy).
type certifier interface {
	certify() (*eval.Certificate, error)
}

// Done reports whether the run has nothing left to do: the step cap is
// reached or the current policy meets the stop rule.
func (t *Trainer) Done(ctx context.Context) (bool, error) {
	if t.done >= t.cfg.Steps || t.spent() {
		return true, nil
	}
	row, err := t.measure(ctx)
	if err != nil {
		return false, err
	}
	return t.converged(row), nil
}

// spent reports whether a sampled trainer has used its token budget
// (Config.MaxTokens).
func (t *Trainer) spent() bool {
	return t.smp != nil && t.cfg.MaxTokens > 0 && t.smp.tokens >= t.cfg.MaxTokens
}

// Converged reports whether a row meets the run's stop rule (Config.Until).
func (t *Trainer) Converged(r Row) bool { return t.converged(r) }

// converged is the stop rule of Config.Until: within Until of the limit,
// or for pretraining a mass on invalid transitions below Until. A Monte
// Carlo estimate (a transformer) counts once every evaluation rollout hits
// and its whole 95% interval lies at most Until above the limit, so a
// lucky estimate does not stop the run; there is no lower bound: a policy
// that remembers its rollout can beat the bigram's optimum (it turns back
// on re-entering a branch it has searched).
func (t *Trainer) converged(r Row) bool {
	until := t.cfg.Until
	switch {
	case t.stop == StopOptimum:
		return true
	case until == 0:
		return false
	case t.cfg.Trainer.Dense():
		return r.InvalidMass <= until
	case t.limit <= 0:
		return false
	case r.Estimated:
		return r.MCSuccessRate == 1 && r.HittingTime+r.HittingTimeCI95 <= (1+until)*t.limit
	}
	return math.Abs(r.HittingTime-t.limit) <= until*t.limit
}

// Step takes one optimiser step (for reinforce and ppo: one iteration of
// sampling and updates). A canceled ctx stops the sampling and the
// measurements it needs, before any update, and changes nothing; the
// updates themselves always complete, so the trainer stays consistent.
func (t *Trainer) Step(ctx context.Context) error {
	start := time.Now()
	if t.cfg.LRDecay == "linear" {
		t.l.solver().SetLR(t.lr())
	}
	var err error
	switch k := t.cfg.Trainer; {
	case k.Sampled():
		err = t.sampledStep(ctx)
	case k.Exact():
		err = t.l.(exactStepper).exactStep()
	default:
		err = t.l.crossEntropyStep(ctx)
	}
	if err != nil {
		return err
	}
	t.done++
	t.stepSeconds = time.Since(start).Seconds()
	return nil
}

// lr is the learning rate of the next step: the optimiser's, or under
// "linear" decay a function of the step alone (so a run resumes exactly).
func (t *Trainer) lr() float64 {
	if t.cfg.LRDecay == "linear" {
		return t.cfg.Optim.LR * (1 - float64(t.done)/float64(t.cfg.Steps))
	}
	return t.cfg.Optim.LR
}

// stepSeed seeds the current step's sampling: rollout i of step k draws
// from its own stream, so a batch depends on (seed, k) only and a resumed
// run samples exactly the same batches.
func (t *Trainer) stepSeed() uint64 { return t.cfg.Seed ^ (uint64(t.done+1) * 0x9e3779b97f4a7c15) }
