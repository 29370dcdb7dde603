package trainers

import (
	"context"
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
)

// estimate is the latest Monte Carlo hitting time when every evaluation
// rollout hit, and otherwise the mean length with the misses counted at the
// evaluation horizon: a lower bound. The mean over hits alone would be
// biased low: a policy that hits one target in 2K+1 steps and loops
// otherwise would get a horizon too short for any rollout to find the
// other targets, and no signal to learn them.
func (l *transformer) estimate(ctx context.Context) (float64, error) {
	if l.st.MCStep < 0 { // no measurement yet
		var row Row
		if err := l.measure(ctx, &row); err != nil {
			return math.NaN(), err
		}
	}
	return l.latest(), nil
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
// and the success rate within 50x the starting bigram's hitting time (when
// some rollouts miss, the row holds the lower bound of estimate and no
// interval), taken at step 0, every LogEvery steps and at the step cap;
// rows in between repeat the latest.
func (l *transformer) measure(ctx context.Context, row *Row) error {
	t, cfg := l.t, l.t.cfg
	if l.st.MCStep < 0 || (l.st.MCStep != t.done && (t.done%cfg.LogEvery == 0 || t.done >= cfg.Steps)) {
		mc, err := eval.AgentMonteCarlo(ctx, t.g, l.newAgent(), l.evalRollouts(), l.mcCap, cfg.Seed^0x1f83d9abfb41bd6b^uint64(t.done)*0x9e3779b97f4a7c15)
		if err != nil {
			return fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		l.st.MC, l.st.MCStep = mc, t.done
	}
	ci := l.st.MC.CI95
	if l.st.MC.SuccessRate < 1 {
		ci = math.NaN()
	}
	row.HittingTime, row.HittingTimeCI95, row.MCSuccessRate, row.Estimated = l.latest(), ci, l.st.MC.SuccessRate, true
	if cfg.Trainer.CrossEntropy() && t.done > 0 {
		row.Objective = l.st.Loss
	}
	return nil
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
	return l.tr.SetParamValues(vals)
}
