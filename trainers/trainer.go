package trainers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
)

// Trainer trains one model on one world graph. Every loss is built in the
// model's graph and differentiated by gorgonia's autodiff (through the
// hand-written backwards of the fused ops, see nn/ops); what changes
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
	stop    Stop     // why Run returned
	prog    progress // the best row so far, patience and halvings
	// best holds the parameters of the best row (with Config.Patience):
	// a run that stops for lack of progress ends with them.
	best []checkpoints.Tensor
	// endedAt is the step whose parameters the run ended with: the best
	// row's when it stopped for lack of progress (-1: the last step's).
	endedAt int
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
	t := &Trainer{cfg: cfg, model: s.Model, g: g, an: eval.NewAnalyzer(g), pred: eval.Predict(g, source), stepSeconds: math.NaN(), endedAt: -1}
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
	if err := checkRoles(t.l, cfg.Trainer); err != nil {
		t.l.close()
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

// Run trains until the step cap, the token budget, the stop rule
// (Config.Until), the end of its patience (Config.Patience) or the
// cancellation of ctx. A canceled run returns ctx.Err() after its last
// complete step; the trainer stays consistent and can be checkpointed and
// resumed. An exact RLVR run that stalls returns its last row and an error
// wrapping ErrStalled.
func (t *Trainer) Run(ctx context.Context, h Hooks) (Row, error) {
	for {
		row, err := t.measure(ctx)
		confirmed := false
		if err == nil && row.Estimated && t.converged(row) {
			row, err = t.confirm(ctx)
			confirmed = true
		}
		exhausted := false
		if err == nil {
			exhausted, err = t.trackConfirmed(ctx, row, confirmed)
		}
		if err != nil {
			if ctx.Err() != nil {
				t.stop = StopInterrupted
			}
			return row, err
		}
		row.LR = t.lr() // after a halving
		need, err := t.batchBytes(ctx)
		if err != nil {
			return row, err
		}
		overBudget := need > float64(t.g.Config.Budget())
		last := t.done >= t.cfg.Steps || t.converged(row) || exhausted || t.spent() || overBudget
		logged := t.done%t.cfg.LogEvery == 0 || last
		if a, ok := t.l.(abcdReporter); ok && logged {
			a.abcd(&row)
		}
		if logged {
			if err := t.smp.resolveBatch(&row); err != nil { // nil for a trainer that samples nothing
				return row, err
			}
		}
		if err := t.checkRow(&row); err != nil { // before the row is logged or the step checkpointed
			if ctx.Err() != nil { // the state is whole: a resume stops here again
				t.stop = StopInterrupted
				return row, ctx.Err()
			}
			return row, err
		}
		if h.Row != nil && logged {
			if err := h.Row(row); err != nil {
				return row, err
			}
		}
		if last {
			switch {
			case t.converged(row):
				t.stop = StopUntil
			case exhausted:
				t.stop = t.noProgress()
				if row, err = t.endAtBest(ctx, row); err != nil {
					return row, err
				}
			case t.spent() && t.done < t.cfg.Steps:
				t.stop = StopTokens
			case overBudget && t.done < t.cfg.Steps:
				t.stop = StopMemory
				if row, err = t.endAtBest(ctx, row); err != nil { // it diverged: back to where it was best
					return row, err
				}
			default:
				t.stop = StopSteps
			}
			if t.stop == StopStall {
				step, best, _ := t.Best()
				return row, fmt.Errorf("trainers: %w: the hitting time has not improved for %d steps (best %.10g at step %d, now %.10g); "+
					"with %s at lr %g this is usually a cycle of the discrete updates: try a smaller -lr, -lr-decay plateau or another -optimizer",
					ErrStalled, t.cfg.Patience, best, step, row.HittingTime, t.cfg.Optim.Name, t.lr())
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
	est, err := t.sampled().estimate(ctx)
	if err != nil {
		return 0, err
	}
	horizon := math.Ceil(t.cfg.HorizonFactor * est)
	n := t.cfg.stepRollouts(est)
	if w := t.g.W(); t.cfg.hindsight() { // whole walks, one rollout per target each
		n = (n + w - 1) / w * w
	}
	return float64(n) * math.Min(horizon, 2*est) * t.sampled().transitionBytes(), nil
}

// Step takes one optimiser step (for reinforce and ppo: one iteration of
// sampling and updates). A canceled ctx stops the sampling and the
// measurements it needs, before any update, and changes nothing; the
// updates themselves always complete, so the trainer stays consistent.
func (t *Trainer) Step(ctx context.Context) error {
	start := time.Now()
	if t.cfg.LRDecay != "" {
		t.l.solver().SetLR(t.lr())
	}
	var err error
	switch k := t.cfg.Trainer; {
	case k.Sampled():
		if err = t.sampledStep(ctx); err == nil {
			err = checkBatch(t.done, &t.smp.batch) // before the Step hook can checkpoint it
		}
	case k.Exact():
		err = t.l.(exactStepper).exactStep()
	default:
		err = t.l.(crossEntropyStepper).crossEntropyStep(ctx)
	}
	if err != nil {
		return err
	}
	t.done++
	t.stepSeconds = time.Since(start).Seconds()
	return nil
}

// lr is the learning rate of the next step: the optimiser's; under
// "linear" decay a function of the step alone, under "plateau" of the
// halvings so far (checkpointed), so a run resumes exactly.
func (t *Trainer) lr() float64 {
	switch t.cfg.LRDecay {
	case "linear":
		return t.cfg.Optim.LR * (1 - float64(t.done)/float64(t.cfg.Steps))
	case "plateau":
		return math.Ldexp(t.cfg.Optim.LR, -t.prog.Halvings)
	}
	return t.cfg.Optim.LR
}

// stepSeed seeds the current step's sampling: rollout i of step k draws
// from its own stream, so a batch depends on (seed, k) only and a resumed
// run samples exactly the same batches.
func (t *Trainer) stepSeed() uint64 { return t.cfg.Seed ^ (uint64(t.done+1) * 0x9e3779b97f4a7c15) }
