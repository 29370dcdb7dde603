package trainers

import (
	"context"
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/eval"
)

// estimator is a learner whose hitting time is a Monte Carlo estimate (the
// transformer: it is not Markov). Its periodic estimates screen for the
// stop rule; the decision and the final value are measured afresh.
type estimator interface {
	// fresh measures the current policy with a decision's precision
	// (TransformerOptions.FinalRollouts) on rollouts seeded by seed, a
	// stream no other measurement draws from, and changes nothing. A run
	// on walks with hindsight targets measures on walks unless
	// independent: its final value is measured on independent rollouts,
	// as every other run's.
	fresh(ctx context.Context, seed uint64, independent bool) (eval.MCResult, error)
	// recheck measures the current policy again on rollouts seeded by
	// seed (a stream of their own), at a periodic measurement's precision
	// (EvalRollouts) when precise, else at its latest row's, and changes
	// nothing but the count of measured tokens.
	recheck(ctx context.Context, seed uint64, precise bool) (eval.MCResult, error)
	// measuredAt is the step the latest measurement was taken at: rows
	// in between repeat it.
	measuredAt() int
	// adopt makes m the measurement of the current step: the rows' value
	// and the horizon's unit until the next.
	adopt(m eval.MCResult)
}

// Seeds of the fresh measurements, apart from the periodic ones
// (transformer.measure) and from each other.
const (
	confirmSeed = 0x2545f4914f6cdd1d
	finalSeed   = 0x6c8e9cf570932bd5
	bestSeed    = 0x3c6ef372fe94f82b
)

// confirm decides the stop rule on a fresh measurement when a periodic
// estimate passes it: a run that tested a noisy estimate every few steps
// would otherwise stop on the first lucky draw. The fresh measurement is
// adopted as the step's row either way (it is the more precise of the
// two), so the row that stops the run is the one that decided it.
func (t *Trainer) confirm(ctx context.Context) (Row, error) {
	defer region("confirmation").End()
	e, ok := t.l.(estimator)
	if !ok {
		return Row{}, fmt.Errorf("trainers: %s has no Monte Carlo estimate to confirm", t.l.layout())
	}
	m, err := e.fresh(ctx, t.cfg.Seed^confirmSeed^uint64(t.done+1)*0x9e3779b97f4a7c15, false)
	if err != nil {
		return Row{}, fmt.Errorf("trainers: step %d: confirmation: %w", t.done, err)
	}
	e.adopt(m)
	return t.measure(ctx)
}

// Final is a run's final hitting time: for a Markov learner the exact
// value of its last policy; for a Monte Carlo learner an estimate measured
// afresh, after the run stopped, on Rollouts rollouts that played no part
// in any stop decision, so that no stop rule selected it.
type Final struct {
	Step        int
	HittingTime float64
	// CI95 is the estimate's 95% half-width and SuccessRate the share of
	// its rollouts that hit within the evaluation horizon (below 1 the
	// estimate is a lower bound and has no interval); 0 and 1 when exact.
	CI95        float64
	SuccessRate float64
	Rollouts    int
	Estimated   bool
}

// Final measures the final hitting time of the current policy (see Final):
// the last step's, or the best row's when the run stopped for lack of
// progress and ended with those parameters (Final.Step says which).
func (t *Trainer) Final(ctx context.Context) (Final, error) {
	step := t.done
	if t.endedAt >= 0 {
		step = t.endedAt
	}
	if e, ok := t.l.(estimator); ok {
		m, err := e.fresh(ctx, t.cfg.Seed^finalSeed, true)
		if err != nil {
			return Final{}, fmt.Errorf("trainers: final measurement: %w", err)
		}
		f := Final{Step: step, HittingTime: m.HittingTime, CI95: m.CI95, SuccessRate: m.SuccessRate, Rollouts: m.N, Estimated: true}
		if m.SuccessRate < 1 {
			f.HittingTime, f.CI95 = m.MeanLength, math.NaN()
		}
		return f, nil
	}
	row, err := t.measure(ctx)
	if err != nil {
		return Final{}, err
	}
	return Final{Step: step, HittingTime: row.HittingTime, SuccessRate: 1}, nil
}
