package trainers

import (
	"context"
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
)

// estimate is the hitting time the current step's horizon is taken from:
// the latest Monte Carlo hitting time when every evaluation rollout hit,
// and otherwise the mean length with the misses counted at the evaluation
// horizon: a lower bound (for a row measured afresh because its batch
// missed, the batch's bound, Bound). The mean over hits alone would be biased low: a
// policy that hits one target in 2K+1 steps and loops otherwise would get
// a horizon too short for any rollout to find the other targets, and no
// signal to learn them. It is fixed at a step's first call (a measurement
// taken on the step's own rollouts must not change their horizon); before
// any measurement of a sampled trainer it is the starting bigram's exact
// hitting time, which the transformer equals at step 0.
func (l *transformer) estimate(ctx context.Context) (float64, error) {
	t := l.t
	if l.st.EstStep == t.done {
		return l.st.Est, nil
	}
	switch {
	case l.st.MCStep >= 0 && l.st.Bound > 0:
		l.st.Est = l.st.Bound
	case l.st.MCStep >= 0:
		l.st.Est = l.latest()
	case t.cfg.Trainer.Sampled() && t.done == 0:
		l.st.Est = l.startH
	default:
		var row Row
		if err := l.measure(ctx, &row); err != nil {
			return math.NaN(), err
		}
		l.st.Est = l.latest()
	}
	l.st.EstStep = t.done
	return l.st.Est, nil
}

// evalRollouts is the number of rollouts of the next measurement
// (TransformerOptions.EvalTokens): fewer when the latest hitting time is
// long, never below min(200, EvalRollouts).
func (l *transformer) evalRollouts() int {
	n := l.opts.EvalRollouts
	if l.opts.EvalTokens > 0 && l.st.MCStep >= 0 {
		n = min(n, max(min(200, n), int(float64(l.opts.EvalTokens)/max(l.latest(), 1))))
	} else if l.opts.EvalTokens > 0 {
		n = min(n, max(min(200, n), int(float64(l.opts.EvalTokens)/max(float64(l.mcCap)/50, 1))))
	}
	return n
}

// latest is the latest measurement's hitting time (see estimate).
func (l *transformer) latest() float64 {
	if l.st.MC.SuccessRate == 1 {
		return l.st.MC.HittingTime
	}
	return l.st.MC.MeanLength
}

// measure is a Monte Carlo hitting time with its 95% confidence interval,
// and the success rate within the horizon (when some rollouts miss, the
// row holds the lower bound of estimate and no interval), taken at step
// 0, every LogEvery steps and at the step cap; rows in between repeat the
// latest.
//
// A sampled trainer measures on the step's own batch of rollouts
// (onBatch), which its update then trains on: on-policy rollouts of the
// current parameters, an unbiased measurement whenever they all hit. A
// batch whose interval comes near the stop rule's band is followed by a
// measurement of EvalRollouts fresh rollouts (within EvalTokens), the
// precision the rule's screen needs; a batch with misses, a bound and no
// estimate, by one on a tenth of the rollouts the rows in between train
// on (the horizon still comes from the batch's bound: estimate, Bound,
// so training does not depend on it); the stop decision and the final
// value are measured afresh on rollouts of their own (Trainer.confirm,
// Trainer.Final). At the paper's size the fresh periodic measurements had
// cost about half as many sampled tokens as training.
func (l *transformer) measure(ctx context.Context, row *Row) error {
	t, cfg := l.t, l.t.cfg
	if l.st.MCStep < 0 || (l.st.MCStep != t.done && (t.done%cfg.LogEvery == 0 || t.done >= cfg.Steps)) {
		mc, ok, err := l.onBatch(ctx)
		bound := 0.0 // the batch's lower bound, where the horizon comes from
		switch {
		case err == nil && !ok && mc.N > 0 && mc.SuccessRate < 1:
			bound = mc.MeanLength
			// A bound, not an estimate, and not near the band: a tenth
			// of the rollouts the rows in between train on, enough to
			// rank the row (a new best beats the best by its whole
			// interval), at a tenth of training's tokens.
			mc, err = l.monteCarlo(ctx, min(l.evalRollouts(), max(100, cfg.LogEvery*mc.N/10)), l.freshSeed(), false)
		case err == nil && !ok:
			mc, err = l.freshMeasure(ctx)
		}
		if err != nil {
			return fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		l.st.MC, l.st.MCStep, l.st.Bound = mc, t.done, bound
	}
	ci := l.st.MC.CI95
	if l.st.MC.SuccessRate < 1 {
		ci = math.NaN()
	}
	row.HittingTime, row.HittingTimeCI95, row.MCSuccessRate, row.Estimated = l.latest(), ci, l.st.MC.SuccessRate, true
	row.MeasuredTokens = l.st.Measured
	if cfg.Trainer.CrossEntropy() && t.done > 0 {
		row.Objective = l.st.Loss
	}
	return nil
}

// onBatch measures a sampled trainer on the current step's batch of
// rollouts, drawn now (and kept for the step's update, rollouts). It
// reports false when the measurement must be fresh instead: not a
// sampled trainer, a batch over the memory budget (Trainer.batchBytes
// stops the run), or a batch whose interval is near the stop rule's band
// (every rollout hit and its mean less two half-widths within until of
// the limit).
func (l *transformer) onBatch(ctx context.Context) (eval.MCResult, bool, error) {
	t, cfg := l.t, l.t.cfg
	if !cfg.Trainer.Sampled() {
		return eval.MCResult{}, false, nil
	}
	if need, err := t.batchBytes(ctx); err != nil || need > float64(t.g.Config.Budget()) {
		return eval.MCResult{}, false, err
	}
	b, _, err := t.drawBatch(ctx)
	if err != nil {
		return eval.MCResult{}, false, err
	}
	mc := b.Summary()
	if w := b.Walk(); w > 0 && len(b.Targets) < 2*w {
		// One walk's rollouts are correlated: their interval is taken
		// over walks, and one walk gives none.
		return mc, false, nil
	}
	if mc.SuccessRate < 1 {
		// Some rollouts missed at the step's horizon: the batch gives only
		// a lower bound, with no interval, and a row must be an estimate
		// (the best row is chosen among rows; a bound below the hitting
		// time would win).
		return mc, false, nil
	}
	near := cfg.Until > 0 && t.limit > 0 && mc.HittingTime-2*mc.CI95 <= (1+cfg.Until)*t.limit
	return mc, !near, nil
}

// freshMeasure is a Monte Carlo measurement on EvalRollouts fresh
// rollouts (evalRollouts), seeded by the step.
func (l *transformer) freshMeasure(ctx context.Context) (eval.MCResult, error) {
	return l.monteCarlo(ctx, l.evalRollouts(), l.freshSeed(), false)
}

// freshSeed seeds a fresh measurement by the step.
func (l *transformer) freshSeed() uint64 {
	return l.t.cfg.Seed ^ 0x1f83d9abfb41bd6b ^ uint64(l.t.done)*0x9e3779b97f4a7c15
}

// monteCarlo measures the current policy on n fresh rollouts seeded by
// seed and counts the tokens it draws (transformerState.Measured). A run
// that trains on walks with hindsight targets (Config.Hindsight) measures
// on walks too, unless independent: n rollouts in ceil(n / W) walks, at a
// fraction of the tokens, with the interval taken over walks
// (eval.AgentWalkMonteCarlo). The token bounds (EvalTokens, FinalTokens)
// turn into rollouts at an independent rollout's cost, so on walks they
// allow fewer rollouts than their tokens would pay for.
func (l *transformer) monteCarlo(ctx context.Context, n int, seed uint64, independent bool) (eval.MCResult, error) {
	if l.t.cfg.hindsight() && !independent {
		mc, tokens, err := eval.AgentWalkMonteCarlo(ctx, l.t.g, l.newAgent(), n, l.mcCap, seed)
		if err == nil {
			l.st.Measured += tokens
		}
		return mc, err
	}
	mc, err := eval.AgentMonteCarlo(ctx, l.t.g, l.newAgent(), n, l.mcCap, seed)
	if err == nil {
		l.st.Measured += int(math.Round(mc.MeanLength * float64(mc.N)))
	}
	return mc, err
}

// tensors are the transformer's parameters, one named tensor each, in
// Learnables order.
func (l *transformer) tensors() []checkpoints.Tensor {
	var out []checkpoints.Tensor
	vals := l.tr.ParamValues()
	for i, p := range l.tr.Learnables() {
		out = append(out, checkpoints.Tensor{Name: p.Name(), Shape: append([]int(nil), p.Shape()...), Data: vals[i]})
	}
	return out
}

// setTensors restores the parameters, checking each one's name and shape.
func (l *transformer) setTensors(ck *checkpoints.Checkpoint) error {
	var vals [][]float64
	for _, p := range l.tr.Learnables() {
		d, err := ck.Tensor(p.Name(), p.Shape().TotalSize())
		if err != nil {
			return err
		}
		vals = append(vals, d)
	}
	l.drawn = drawKey{} // a batch drawn before is another policy's
	return l.tr.SetParamValues(vals)
}
