package trainers

import (
	"context"

	"github.com/rlvr-backtrack/backtrack/eval"
)

// fresh measures the transformer's current policy on FinalRollouts
// rollouts (fewer when FinalTokens / the latest hitting time is fewer,
// never below min(200, FinalRollouts)) seeded by seed (estimator).
func (l *transformer) fresh(ctx context.Context, seed uint64) (eval.MCResult, error) {
	n := l.opts.FinalRollouts
	if l.opts.FinalTokens > 0 && l.st.MCStep >= 0 {
		n = min(n, max(min(200, n), int(float64(l.opts.FinalTokens)/max(l.latest(), 1))))
	}
	return eval.AgentMonteCarlo(ctx, l.t.g, l.newAgent(), n, l.mcCap, seed)
}

// adopt makes m the current step's measurement (estimator).
func (l *transformer) adopt(m eval.MCResult) { l.st.MC, l.st.MCStep = m, l.t.done }
