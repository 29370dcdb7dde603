package trainers

import (
	"context"

	"github.com/rlvr-backtrack/backtrack/eval"
)

// fresh measures the transformer's current policy on FinalRollouts
// rollouts (fewer when FinalTokens / the latest hitting time is fewer,
// never below min(200, FinalRollouts)) seeded by seed (estimator): on
// walks when the run trains on them (monteCarlo), on independent
// rollouts when independent.
func (l *transformer) fresh(ctx context.Context, seed uint64, independent bool) (eval.MCResult, error) {
	n := l.opts.FinalRollouts
	if l.opts.FinalTokens > 0 && l.st.MCStep >= 0 {
		n = min(n, max(min(200, n), int(float64(l.opts.FinalTokens)/max(l.latest(), 1))))
	}
	return l.monteCarlo(ctx, n, seed, independent)
}

// recheck measures the current policy on evalRollouts fresh rollouts when
// precise, else on as many as its latest row had, at least 100 and at most
// evalRollouts (estimator).
func (l *transformer) recheck(ctx context.Context, seed uint64, precise bool) (eval.MCResult, error) {
	n := l.evalRollouts()
	if !precise {
		n = min(n, max(100, l.st.MC.N))
	}
	return l.monteCarlo(ctx, n, seed, false)
}

// measuredAt is the step of the latest measurement (estimator).
func (l *transformer) measuredAt() int { return l.st.MCStep }

// adopt makes m the current step's measurement (estimator).
func (l *transformer) adopt(m eval.MCResult) { l.st.MC, l.st.MCStep = m, l.t.done }
