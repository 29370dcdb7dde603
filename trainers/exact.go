package trainers

import (
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// Baseline "exact": every token's advantage from the exact values of a
// Markov chain, in place of returns and a baseline estimated from the
// batch.
//
// With V_x(s) = 1 - beta h_x(s), h_x(s) the expected transitions from s
// until target x (eval.Analysis.H), the one-step advantage of the
// transition s -> s' is
//
//	A = r + V_x(s') - V_x(s) = beta (h_x(s) - h_x(s') - 1),
//
// r = -beta a step and 1 more on the hit, V_x = 0 after it (h_x of the
// hitting state counts as 0); a rollout cut by the horizon takes h_x of
// the state it ended in. For the bigram the chain is the policy's own, so
// A is the advantage of the transition under the untruncated objective
// 1 - beta h, exactly: the batch decides only which transitions are
// counted and how often. Its mean over the policy's moves from s is 0
// (h_x(s) = 1 + sum_a pi(a|s) h_x(a): TestExactValuesBellman), and a
// rollout's advantages add up to beta (h_x(start) - T), T its length,
// whose mean over rollouts is 0 (TestExactAdvantages). For the
// transformer the chain is the bigram its table B defines (valueAnalysis):
// the transformer's own policy at U = 0, an approximation of it once the
// attention moves it.
//
// At the paper's size the batch's gradient with these advantages is much
// nearer the exact gradient than with the fork baseline's (docs/speed.md,
// "The advantages' noise"): the fork baseline's noise comes mostly from
// the returns, the rest from which states a batch visits.

// valuer is a learner that can give the exact analysis of the chain
// baseline "exact" values its tokens by.
type valuer interface {
	valueAnalysis() (*eval.Analysis, error)
}

// exactValues fills h (grown to W x states) with h_x(s) of res, target x
// (1..W) in row x-1.
func exactValues(h []float64, res *eval.Analysis, w, n int) []float64 {
	h = kernels.Grow(h, w*n)
	kernels.ParallelEach(w, func(i int) {
		row := h[i*n : (i+1)*n]
		for s := range row {
			row[s] = res.H(i+1, s)
		}
	})
	return h
}

// exactAdvantages writes into dst's memory (when large enough) each
// token's advantage beta (h_x(s) - h_x(s') - 1): states[k] is token k's
// state, last[r] the state rollout r ended in, h holds exactValues.
// Rollouts run in parallel; each token's value depends on its own states
// only, so the result does not depend on the number of cores.
func exactAdvantages(lens []int, hit []bool, states, last []int32, targets []int, h []float64, n int, beta float64, dst []float64) []float64 {
	starts, total := rolloutStarts(lens)
	adv := kernels.Grow(dst, total)
	kernels.ParallelFor(len(lens), 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			hx := h[(targets[r]-1)*n : targets[r]*n]
			l, k := lens[r], starts[r]
			if l == 0 {
				continue
			}
			st, a := states[k:k+l], adv[k:k+l]
			for t := 0; t < l-1; t++ {
				a[t] = beta * (hx[st[t]] - hx[st[t+1]] - 1)
			}
			end := 0.0 // the hitting state's
			if !hit[r] {
				end = hx[last[r]]
			}
			a[l-1] = beta * (hx[st[l-1]] - end - 1)
		}
	})
	return adv
}
