package trainers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
)

// Stop says why a run ended.
type Stop string

// The reasons Run returns for.
const (
	StopSteps  Stop = "steps"  // the step cap
	StopTokens Stop = "tokens" // the sampled-token cap (Config.MaxTokens)
	StopUntil  Stop = "until"  // within Config.Until of the limit
	// StopOptimum, StopStationary, StopStall and StopPlateau: no new best
	// for Config.Patience steps (with every halving of lr_decay plateau
	// spent): at the exact optimum of the setting (within optimumTol; an
	// exact learner only: noProgress), at
	// a stationary point above it, for exact RLVR anywhere else
	// (ErrStalled), and for the other trainers anywhere else.
	StopOptimum     Stop = "optimum"
	StopStationary  Stop = "stationary"
	StopStall       Stop = "stall"
	StopPlateau     Stop = "plateau"
	StopInterrupted Stop = "interrupted" // the context was canceled
	// StopMemory: the next batch of rollouts would not fit the memory
	// budget (the graph's max_bytes; Trainer.batchBytes): the policy's
	// hitting time, the horizon's unit, has grown that far.
	StopMemory Stop = "memory"
)

// ErrStalled reports an exact RLVR run stopped because its hitting time
// stopped improving (see Config.Patience) away from the optimum of its
// setting.
var ErrStalled = errors.New("no progress")

// optimumTol is how close (relative) to the exact optimum a run that stops
// improving counts as having reached it: sign descent at a fixed step
// oscillates around an interior optimum (a branch entry's c_{i,1} < 1)
// within about this of its value.
const optimumTol = 1e-6

// improveTol is the relative decrease of the best distance (progress.Best)
// that counts as progress: a rounding error is none.
const improveTol = 1e-9

// progress is a run's record of its best metrics row, the clock of its
// patience and the halvings of lr_decay plateau. It is checkpointed, so
// a resumed run stops and decays where the uninterrupted one would.
type progress struct {
	// Measured is set once a row has been tracked.
	Measured bool `json:"measured"`
	// Best is the best distance so far (distance), at step BestStep, where
	// the hitting time was BestHitting with Monte Carlo half-width
	// BestCI95 (0 when exact; NaN, null in JSON, for a Monte Carlo row
	// that is a lower bound: some rollouts missed, so it has no interval).
	Best        float64  `json:"best"`
	BestStep    int      `json:"best_step"`
	BestHitting nullable `json:"best_hitting_time"`
	BestCI95    nullable `json:"best_ci95"`
	// Since is the step patience counts from: the best's, or the last
	// halving's when that came later.
	Since int `json:"since"`
	// Halvings is the number of times lr_decay plateau has halved the
	// rate.
	Halvings int `json:"halvings"`
	// Far is set when a Monte Carlo learner ran out of its far patience
	// (farPatience): no new best for that long, never near its limit.
	Far bool `json:"far,omitempty"`
	// Source says what the best is (empty in checkpoints made before it
	// was recorded).
	Source BestSource `json:"best_source,omitempty"`
}

// BestSource says what a run's best is: a metrics row kept as it was, or
// for a Monte Carlo learner (trackConfirmed) the first row, the stop
// rule's confirmation, or the second measurement, on fresh rollouts, of
// a periodic row that beat the best.
type BestSource string

// The sources of a best.
const (
	BestRow          BestSource = "row"
	BestFirst        BestSource = "first row"
	BestConfirmation BestSource = "confirmation"
	BestRecheck      BestSource = "second measurement"
)

// distance is how far a row is from where the trainer is going (lower is
// better): the hitting time for the RL trainers (a transformer may go
// below the bigram's optimum), the distance to the limit for sft and
// distill (SFT raises the hitting time toward its limit), the largest mass
// on invalid transitions for pretraining.
func (t *Trainer) distance(r Row) float64 {
	switch k := t.cfg.Trainer; {
	case k.Dense():
		return r.InvalidMass
	case k.RL() || t.limit <= 0:
		return r.HittingTime
	}
	return math.Abs(r.HittingTime - t.limit)
}

// track records row in the run's progress and reports whether the run has
// run out of patience: Config.Patience steps without a new best and, under
// lr_decay plateau, every halving spent (a halving restarts the clock). A
// new best is a better distance, or for a Monte Carlo row one better by
// more than its 95% half-width: once a transformer's estimates only
// fluctuate, its patience runs out instead of waiting for lucky draws.
func (t *Trainer) track(row Row) bool { return t.record(row, t.newBest(row), BestRow) }

// newBest reports whether row beats the best so far (see track).
func (t *Trainer) newBest(row Row) bool {
	p := &t.prog
	ci := 0.0 // a Monte Carlo row is a new best when its whole interval is
	if row.Estimated && !math.IsNaN(row.HittingTimeCI95) {
		ci = row.HittingTimeCI95 // below the best: noise is no progress
	}
	return !p.Measured || t.distance(row)+ci < p.Best-improveTol*math.Abs(p.Best)
}

// trackConfirmed is track for Run: a periodic Monte Carlo row that would
// be a new best (after the first) is measured again on fresh rollouts
// (estimator.recheck), and the best becomes that measurement, kept only
// when it too beats the best. The best row was the lowest of many noisy
// estimates: at the paper's size (transformer PPO at 1e-3, until 0, seed
// 2) a row of 798 ± 145 at step 530 became the best, no later row's
// interval could beat it, and the run ended on its plateau with step
// 530's parameters, 1006 ± 19 afresh. A row measured afresh already
// (fresh: the stop rule's confirmation) is its own confirmation (and,
// unlike a recheck, is kept for an RL trainer even when some of its
// rollouts missed, as any row was before). At most nearFactor times the
// limit, where an RL run settles and its best parameters are the ones it
// ends with, the second measurement has a periodic measurement's
// precision (EvalRollouts): always for sft and distill, which rise toward
// their limit from below; above that, its row's (about a tenth of the
// tokens trained on between rows), where the best only clocks the far
// patience. A run resumed from a checkpoint taken right after a tracked
// row tracks that row again and may measure it again: the same decisions,
// its measured tokens counted twice.
func (t *Trainer) trackConfirmed(ctx context.Context, row Row, fresh bool) (bool, error) {
	best := t.newBest(row)
	e, ok := t.l.(estimator)
	if !best || !ok || fresh || !row.Estimated || !t.prog.Measured {
		src := BestRow
		switch {
		case ok && row.Estimated && !t.prog.Measured:
			src = BestFirst
		case ok && fresh:
			src = BestConfirmation
		}
		return t.record(row, best, src), nil
	}
	if e.measuredAt() != t.done { // a row repeated between measurements
		return t.record(row, false, ""), nil // was measured again, or was the best
	}
	precise := t.limit <= 0 || row.HittingTime <= nearFactor*t.limit
	m, err := e.recheck(ctx, t.cfg.Seed^bestSeed^uint64(t.done+1)*0x9e3779b97f4a7c15, precise)
	if err != nil {
		return false, fmt.Errorf("trainers: step %d: a new best measured again: %w", t.done, err)
	}
	c := Row{HittingTime: m.HittingTime, HittingTimeCI95: m.CI95, MCSuccessRate: m.SuccessRate, Estimated: true}
	if m.SuccessRate < 1 { // some rollouts missed: a lower bound, as a row's (transformer.measure)
		if t.cfg.Trainer.RL() { // a bound below the best shows no lower hitting time
			return t.record(row, false, ""), nil
		}
		// SFT and distillation rise toward their limit: a bound is where
		// the row's was (their rows miss at the Monte Carlo horizon, 50
		// times the start's hitting time, on the way to an SFT limit
		// above it), and it counts as a row's bound does.
		c.HittingTime, c.HittingTimeCI95 = m.MeanLength, math.NaN()
	}
	if d := t.distance(c); d >= t.prog.Best {
		return t.record(row, false, ""), nil
	}
	return t.record(c, true, BestRecheck), nil
}

// record is track with the new-best test decided (best): row holds the
// values a new best keeps, and src says what it is.
func (t *Trainer) record(row Row, best bool, src BestSource) bool {
	p := &t.prog
	if best {
		bestCI := 0.0 // exact
		if row.Estimated {
			bestCI = row.HittingTimeCI95 // NaN for a lower bound
		}
		*p = progress{Measured: true, Best: t.distance(row), BestStep: t.done, BestHitting: nullable(row.HittingTime), BestCI95: nullable(bestCI), Since: t.done, Halvings: p.Halvings, Source: src}
		if c, ok := t.l.(tensorCopier); ok && t.cfg.Patience > 0 {
			t.best = c.copyTensors(t.best)
		} else if t.cfg.Patience > 0 {
			t.best = copyTensors(t.best[:0], t.l.tensors())
		}
		return false
	}
	if row.Estimated && !t.near() {
		p.Since = t.done // far from its target, a noisy learner keeps its rate
		p.Far = t.cfg.Patience > 0 && t.done-p.BestStep >= farPatience*t.cfg.Patience
		return p.Far
	}
	if t.cfg.Patience == 0 || t.done-p.Since < t.cfg.Patience {
		return false
	}
	if t.cfg.LRDecay == "plateau" && p.Halvings < t.cfg.Halvings {
		p.Halvings++
		p.Since = t.done
		return false
	}
	return true
}

// farPatience is how many times Config.Patience steps a Monte Carlo
// learner that never came near its limit (see near) runs without a new
// best before it stops, keeping its rate: a run that has stopped
// improving far from its limit ends by itself instead of running its
// 20,000 default steps, while the paper-size PPO's early rise of about a
// hundred steps above its start is well inside it.
const farPatience = 5

// nearFactor is how close to its limit a Monte Carlo learner's best must
// be before its patience counts: within a factor nearFactor on the side it
// comes from.
const nearFactor = 2

// near reports whether a Monte Carlo learner's best row is within
// nearFactor of the limit (for RL, at most nearFactor times it; always,
// when the limit is unknown). Far from it,
// an estimate of a few hundred rollouts cannot resolve the progress of a
// hundred steps, and at the paper's size the transformer's hitting time
// first rises above its start for about a hundred steps (50k to 57k and
// back): with patience counted from step 0, PPO's rate was halved at
// steps 120 and 360 while it was still above 20k, and after 2G sampled
// tokens it was at 20.7k and 10.5k (seeds 1 and 2) where the constant
// rate had reached 1.6k at 1.6G. Halving is for settling at the target;
// a run that never comes near it ends after farPatience times its
// patience without a new best, on its step or token budget, or on the
// memory guard if it diverges.
func (t *Trainer) near() bool {
	h := float64(t.prog.BestHitting)
	if t.limit <= 0 || math.IsNaN(h) || t.cfg.Trainer.Dense() {
		return true
	}
	if t.cfg.Trainer.RL() { // below the bigram's optimum is progress
		return h <= nearFactor*t.limit
	}
	return h <= nearFactor*t.limit && h >= t.limit/nearFactor
}

// exhausted reports whether the run's patience is spent as of its last
// tracked row (see track).
func (t *Trainer) exhausted() bool {
	p := t.prog
	return p.Far || p.Measured && t.cfg.Patience > 0 && t.done-p.Since >= t.cfg.Patience &&
		(t.cfg.LRDecay != "plateau" || p.Halvings >= t.cfg.Halvings)
}

// copyTensors copies ts into dst's memory where it fits.
func copyTensors(dst, ts []checkpoints.Tensor) []checkpoints.Tensor {
	for i, x := range ts {
		if i < cap(dst) && cap(dst[:i+1][i].Data) >= len(x.Data) {
			dst = dst[:i+1]
			dst[i].Name, dst[i].Shape = x.Name, x.Shape
			dst[i].Data = append(dst[i].Data[:0], x.Data...)
			continue
		}
		dst = append(dst[:i], checkpoints.Tensor{Name: x.Name, Shape: x.Shape, Data: append([]float64(nil), x.Data...)})
	}
	return dst
}

// bestPrefix names the best parameters' tensors in a checkpoint.
const bestPrefix = "best/"

// restoreBest puts back the parameters of the best row: a run that stops
// for lack of progress ends with them (early stopping that keeps the best
// weights), not with wherever the noise of its last steps left it.
func (t *Trainer) restoreBest() error {
	if len(t.best) == 0 {
		return nil
	}
	return t.l.setTensors(&checkpoints.Checkpoint{Kind: t.l.layout(), Tensors: t.best})
}

// endAtBest restores the best row's parameters (restoreBest) and returns
// the row of the restored policy: measured again when exact, the stop's
// row for a Monte Carlo learner (whose final value Final measures afresh).
func (t *Trainer) endAtBest(ctx context.Context, row Row) (Row, error) {
	if len(t.best) == 0 || t.prog.BestStep == t.done {
		return row, nil
	}
	if err := t.restoreBest(); err != nil {
		return row, fmt.Errorf("trainers: restore the best parameters: %w", err)
	}
	t.endedAt = t.prog.BestStep
	if row.Estimated {
		return row, nil
	}
	r, err := t.measure(ctx)
	if err != nil {
		return row, err
	}
	if a, ok := t.l.(abcdReporter); ok {
		a.abcd(&r)
	}
	return r, nil
}

// Best is the run's best metrics row so far: its step, hitting time and,
// for a Monte Carlo learner, its 95% half-width (0 when exact; NaN when
// the row is a lower bound, some of its rollouts having missed). A Monte
// Carlo best is the second measurement, on fresh rollouts, of the last
// row whose whole interval beat the best before it (trackConfirmed): the
// row itself was picked for being low. The run's final value
// (Trainer.Final) is measured afresh again.
func (t *Trainer) Best() (step int, hitting, ci95 float64) {
	if !t.prog.Measured {
		return 0, math.NaN(), math.NaN()
	}
	return t.prog.BestStep, float64(t.prog.BestHitting), float64(t.prog.BestCI95)
}

// BestSource says what the best is (empty before any, and for a run
// resumed from a checkpoint that did not record it).
func (t *Trainer) BestSource() BestSource { return t.prog.Source }

// noProgress classifies a run that ran out of patience: at the exact
// optimum of its setting (its best hitting time within optimumTol of it;
// only for an exact learner: a Monte Carlo best row is the lowest of many
// noisy estimates, and the transformer's at the paper's size were 738-815
// against a limit of 899 where its fresh finals were 922-952),
// at a stationary point above it (the exact gradient over every trained
// logit below stationaryTol relative to H_f: the symmetric point that
// exact RLVR keeps when the source row is trained is one), for exact RLVR
// anywhere else a stall, for the other trainers a plateau.
func (t *Trainer) noProgress() Stop {
	c, exact := t.l.(certifier)
	if exact && t.cfg.Trainer.RL() && t.limit > 0 && float64(t.prog.BestHitting) <= t.limit*(1+optimumTol) {
		return StopOptimum
	}
	if exact && t.cfg.Trainer.RL() {
		if cert, err := c.certify(); err == nil && cert.Gradient <= stationaryTol {
			return StopStationary
		}
	}
	if t.cfg.Trainer.Stalls() {
		return StopStall
	}
	return StopPlateau
}

// stationaryTol bounds the relative gradient of a stationary point.
const stationaryTol = 1e-6

// certifier is a learner with an exact first-order certificate of its
// current policy (a Markov policy).
type certifier interface {
	certify() (*eval.Certificate, error)
}

// Done reports whether the run has nothing left to do: the step cap or
// the token budget is reached, its patience is spent, or the current
// policy meets the stop rule.
func (t *Trainer) Done(ctx context.Context) (bool, error) {
	if t.done >= t.cfg.Steps || t.spent() || t.exhausted() {
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
// and its whole 95% interval lies at most Until above the limit; for the
// RL trainers there is no lower bound (a policy that remembers its rollout
// can beat the bigram's optimum: it turns back on re-entering a branch it
// has searched), for sft and distill the interval lies within Until of
// the limit on both sides. Run decides on a confirmation measured afresh when a
// periodic estimate passes (confirm), so a lucky estimate does not stop
// the run.
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
	case r.Estimated && t.cfg.Trainer.RL():
		return r.MCSuccessRate == 1 && r.HittingTime+r.HittingTimeCI95 <= (1+until)*t.limit
	case r.Estimated: // sft and distill go to their limit from either side
		return r.MCSuccessRate == 1 && r.HittingTime+r.HittingTimeCI95 <= (1+until)*t.limit && r.HittingTime-r.HittingTimeCI95 >= (1-until)*t.limit
	}
	return math.Abs(r.HittingTime-t.limit) <= until*t.limit
}

// nullable is a float64 that JSON writes as null when NaN (pretraining's
// hitting time) and reads back.
type nullable float64

func (x nullable) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(x))
}

func (x *nullable) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*x = nullable(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(x))
}
