package trainers

import (
	"fmt"
	"math"
	"sort"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/ops"
	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// The losses of sampled RLVR, built in the gorgonia graph over a vector of
// log-probabilities of "items". For the bigram an item is one trainable
// transition (s, a) and its constants sum the advantages of every sampled
// token that took it, so the graph does not grow with the batch; for a
// model whose probabilities depend on the whole prefix an item is one
// token. Both are exact: PPO's ratio pi/pi_old is the same for every token
// of an item, and
//
//	sum_t min(r A_t, clip(r, 1-eps, 1+eps) A_t)
//	  = A+ min(r, 1+eps) + A- max(r, 1-eps),
//
// with A+ (A-) the sum of the item's positive (negative) advantages.

// reinforceLoss is -(1/N) sum_t A_t log pi(a_t|s_t) with the baseline
// already in A: weights w = -A/N per item (REINFORCE, Sutton et al. 1999).
func reinforceLoss(logp, w *G.Node) (*G.Node, error) {
	return G.Mul(w, logp) // (P) . (P) -> ()
}

// clippedLoss adds to g minus PPO's clipped surrogate (Schulman et al.
// 2017) summed over n items,
//
//	sum_i A+_i min(r_i, 1+eps) + A-_i max(r_i, 1-eps),  r_i = exp(logp_i - oldLogp_i),
//
// as surrogate builds it (clippedOf, or a table pass's one op), and its
// constants: the items' positive and negative advantages (already divided
// by the number of tokens) and their log-probabilities under the policy
// that sampled them.
func clippedLoss(g *G.ExprGraph, n int, surrogate func(oldLogp, advPos, advNeg *G.Node) (*G.Node, error)) (cost *G.Node, advPos, advNeg, oldLog vec, err error) {
	advPos, advNeg, oldLog = newVec(g, n, "adv+"), newVec(g, n, "adv-"), newVec(g, n, "logp_old")
	obj, err := surrogate(oldLog.node, advPos.node, advNeg.node)
	if err != nil {
		return nil, advPos, advNeg, oldLog, fmt.Errorf("trainers: ppo loss: %w", err)
	}
	cost, err = G.Neg(obj)
	return cost, advPos, advNeg, oldLog, err
}

// clippedOf is the clipped surrogate over the items' log-probabilities
// logp with clip eps, built of the ops o says: ops.ClippedSurrogate, or
// its stock form stock.ClippedSurrogate.
func clippedOf(logp *G.Node, eps float64, o nn.Ops) func(oldLogp, advPos, advNeg *G.Node) (*G.Node, error) {
	surrogate := ops.ClippedSurrogate
	if o == nn.Stock {
		surrogate = stock.ClippedSurrogate
	}
	return func(oldLogp, advPos, advNeg *G.Node) (*G.Node, error) {
		return surrogate(logp, oldLogp, advPos, advNeg, eps)
	}
}

// addRegularizers adds PPO's optional terms to cost over the items' log
// probabilities logp: KLCoef times the visit-weighted KL to the reference
// refLogp (for the group-relative trainers its k3 estimate on the sampled
// tokens) and EntropyCoef times minus the entropy, both weighted by share.
func addRegularizers(cost, logp, refLogp, share *G.Node, cfg Config) (*G.Node, error) {
	kl, entropy := klPenalty, cfg.EntropyCoef
	if cfg.Trainer.Grouped() {
		kl, entropy = k3Penalty, 0 // TRL's GRPO has no entropy bonus
	}
	for _, term := range []struct {
		coef  float64
		build func() (*G.Node, error)
	}{
		{cfg.KLCoef, func() (*G.Node, error) { return kl(logp, refLogp, share) }},
		{entropy, func() (*G.Node, error) { return negEntropy(logp, share) }},
	} {
		if term.coef == 0 {
			continue
		}
		x, err := term.build()
		if err != nil {
			return nil, err
		}
		if x, err = G.Mul(G.NewConstant(term.coef), x); err != nil { // () * () -> ()
			return nil, err
		}
		if cost, err = G.Add(cost, x); err != nil { // () + () -> ()
			return nil, err
		}
	}
	return cost, nil
}

// klPenalty is sum_i w_i pi_i (log pi_i - log ref_i): with w_i the share of
// the batch's tokens at item i's state, the visit-weighted KL(pi || ref).
func klPenalty(logp, refLogp, w *G.Node) (*G.Node, error) {
	d, err := G.Sub(logp, refLogp) // (P)
	if err != nil {
		return nil, err
	}
	pi, err := G.Exp(logp) // (P)
	if err != nil {
		return nil, err
	}
	x, err := G.HadamardProd(pi, d) // (P)
	if err != nil {
		return nil, err
	}
	return G.Mul(w, x) // (P) . (P) -> ()
}

// k3Penalty is sum_i w_i (exp(q_i - p_i) - (q_i - p_i) - 1), with p the
// items' log-probabilities and q the reference's: the k3 estimator of
// KL(pi || ref) (Schulman 2020, "Approximating KL divergence"; TRL's
// per_token_kl) on sampled tokens, w_i summing its tokens' weights. It is
// >= 0, and unbiased for the KL when the tokens are drawn from pi.
func k3Penalty(logp, refLogp, w *G.Node) (*G.Node, error) {
	d, err := G.Sub(refLogp, logp) // (P) q - p
	if err != nil {
		return nil, err
	}
	e, err := G.Exp(d) // (P)
	if err != nil {
		return nil, err
	}
	x, err := G.Sub(e, d) // (P)
	if err != nil {
		return nil, err
	}
	if x, err = G.Sub(x, G.NewConstant(1.0)); err != nil { // (P) - () -> (P)
		return nil, err
	}
	return G.Mul(w, x) // (P) . (P) -> ()
}

// negEntropy is sum_i w_i pi_i log pi_i, minus the visit-weighted entropy.
func negEntropy(logp, w *G.Node) (*G.Node, error) {
	pi, err := G.Exp(logp) // (P)
	if err != nil {
		return nil, err
	}
	x, err := G.HadamardProd(pi, logp) // (P)
	if err != nil {
		return nil, err
	}
	return G.Mul(w, x) // (P) . (P) -> ()
}

// tokenAdvantages returns, token by token, the return to go
// G_t = 1{hit} - beta (T - t) minus a baseline, divided by the standard
// deviation over the batch when normalize is set. The baseline is the
// batch's mean return ("batch"), the mean return of the batch's tokens at
// the same state ("state": an item's summed advantage is then
// n(s,a) (mean G(s,a) - mean G(s)), a Monte Carlo advantage), or at the same
// state in rollouts with the same target ("state-target": the trainer knows
// each rollout's target though the policy does not, and the expected return
// from a state depends mostly on whether its branch is the target; like a
// critic given privileged information, it leaves the gradient unbiased).
// "fork" is "state-target" on returns bootstrapped at the fork (see
// targetAdvantages); fork[s] marks the fork-incoming states and is used only
// by it. states[i] is the state of token i, among nStates; targets[r] the
// target (1..w) of rollout r. The advantages are written into dst's
// memory when it is large enough.
//
// The work is spread over the cores by rollout, and the sums by target
// (a group of the target baselines holds one target's tokens), each in
// rollout order, so the result does not depend on the number of cores.
func tokenAdvantages(lens []int, hit []bool, states []int32, nStates int, targets []int, w int, beta float64, baseline string, fork []bool, normalize bool, dst []float64) []float64 {
	adv, s := tokenAdvantagesScale(lens, hit, states, nStates, targets, w, beta, baseline, fork, nil, normalize, dst)
	if s != 1 {
		scaleAll(adv, s)
	}
	return adv
}

// tokenAdvantagesScale is tokenAdvantages with the normalisation's scale
// returned instead of applied where it can be: token t's advantage is
// adv[t] * scale, computed where it is read, as tokenAdvantages's
// adv[t] *= scale computes it, bit for bit (a pass over a paper-size
// batch's tokens for the scale alone was a thirtieth of a bigram PPO
// step). forkAt, when not nil, lists rollout r's fork-incoming tokens
// (eval.Marked.At), which fork marks; nil: targetAdvantages finds them.
func tokenAdvantagesScale(lens []int, hit []bool, states []int32, nStates int, targets []int, w int, beta float64, baseline string, fork []bool, forkAt func(r int) []int32, normalize bool, dst []float64) ([]float64, float64) {
	if baseline == "state-target" || baseline == "fork" {
		if baseline != "fork" {
			fork, forkAt = nil, nil
		}
		return targetAdvantages(lens, hit, states, nStates, targets, w, beta, fork, forkAt, normalize, dst)
	}
	adv := returnsToGoInto(dst, lens, hit, beta)
	if len(adv) == 0 {
		return adv, 1
	}
	if baseline == "state" {
		sum, count := make([]float64, nStates), make([]float64, nStates)
		for k, a := range adv {
			sum[states[k]] += a
			count[states[k]]++
		}
		for s, c := range count {
			if c > 0 {
				sum[s] /= c
			}
		}
		for k := range adv {
			adv[k] -= sum[states[k]]
		}
	} else {
		mean := parallelSum(len(adv), sumOf(adv)) / float64(len(adv))
		kernels.ParallelFor(len(adv), tokenBlock, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				adv[k] -= mean
			}
		})
	}
	if normalize {
		scale(adv)
	}
	return adv, 1
}

// targetAdvantages is tokenAdvantagesScale for the baselines "state-target"
// and, with fork set, "fork".
//
// The fork baseline bootstraps the returns to go at the fork. Every visit
// to a fork-incoming state renews the walk: what follows depends on the
// target and the time left, not on how the walk got there. So the return
// of a token before the rollout's next fork-incoming state is replaced by
// the reward up to that state plus the batch's mean return from
// fork-incoming states with the same target, V_F(x): a one-state critic
// per target, fitted on every excursion of the batch. Rewards after the
// return to the fork, the bulk of the return's variance (how many other
// branches the search tries before the target, whether the horizon cuts
// it), then no longer reach the tokens of an excursion, and the advantage
// of a move inside a branch is decided by that excursion: whether it hits
// the target and how long it takes. Tokens of an excursion that the
// rollout's end cuts keep their own returns. The bias is the one of any
// bootstrap: V_F(x) ignores the time already spent, so a longer excursion
// costs beta per step but not the horizon's share.
//
// It takes three passes over the tokens where the steps one after another
// (returnsToGo, the bootstrap, the means, scale) took seven: at the
// paper's size a batch's advantages are tens of megabytes, past the
// caches, and those passes were two fifths of a bigram PPO run's time.
//   - The fork values V_F(x) (fork set), each fork-incoming token's return
//     to go computed where it is read.
//   - Per target, its rollouts in order: each rollout's returns to go,
//     bootstrapped, written back to front, then added to its (state,
//     target) sums front to back while the rollout is still in cache.
//   - By fixed blocks of tokens: the baseline subtracted and, to
//     normalise, the block's sum of squares (scale's blocks).
//
// Every value is computed by the same operations in the same order as in
// those steps, so the result is theirs bit for bit
// (TestTargetAdvantagesMatchSteps).
func targetAdvantages(lens []int, hit []bool, states []int32, nStates int, targets []int, w int, beta float64, fork []bool, forkAt func(r int) []int32, normalize bool, dst []float64) ([]float64, float64) {
	starts, n := rolloutStarts(lens)
	adv := kernels.Grow(dst, n)
	if n == 0 {
		return adv, 1
	}
	byTarget := rolloutsByTarget(targets, w)
	reward := func(r int) float64 {
		if hit[r] {
			return 1
		}
		return 0
	}
	vf := make([]float64, w)              // NaN: no fork-incoming token, or no fork baseline
	kernels.ParallelEach(w, func(x int) { // targets of unequal tokens: each core takes the next
		vf[x] = math.NaN()
		if fork == nil {
			return
		}
		sum, count := 0.0, 0.0
		for _, r := range byTarget[x] {
			h, l := reward(r), lens[r]
			if forkAt != nil {
				for _, t := range forkAt(r) {
					sum += h - beta*float64(l-int(t))
					count++
				}
				continue
			}
			for t, s := range states[starts[r] : starts[r]+l] {
				if fork[s] {
					sum += h - beta*float64(l-t)
					count++
				}
			}
		}
		vf[x] = sum / count
	})
	// means holds each target's (state sum, count) pairs, then the means
	// in the sums' places.
	means := make([]float64, 2*w*nStates)
	kernels.ParallelEach(w, func(x int) {
		sc, v := means[2*x*nStates:2*(x+1)*nStates], vf[x]
		for _, r := range byTarget[x] {
			h, l := reward(r), lens[r]
			g, st := adv[starts[r]:starts[r]+l], states[starts[r]:starts[r]+l]
			if forkAt != nil {
				rolloutReturnsAt(g, forkAt(r), h, beta, v)
			} else {
				rolloutReturns(g, st, fork, h, beta, v)
			}
			for t, s := range st[:len(g)] {
				sums := sc[2*s : 2*s+2 : 2*s+2]
				sums[0] += g[t]
				sums[1]++
			}
		}
		for s := 0; s < nStates; s++ {
			if c := sc[2*s+1]; c > 0 {
				sc[2*s] /= c // the group's mean
			}
		}
	})
	// parallelSum's blocks: each subtracts its tokens' baselines and, to
	// normalise, returns its sum of squares.
	sq := parallelSum(n, func(k0, k1 int) float64 {
		r := sort.SearchInts(starts, k0+1) - 1 // the last rollout starting at or before k0
		for k := k0; k < k1; r++ {
			m := means[2*(targets[r]-1)*nStates:]
			for end := min(k1, starts[r]+lens[r]); k < end; k++ {
				adv[k] -= m[2*states[k]]
			}
		}
		if !normalize {
			return 0
		}
		return kernels.SumSquares(adv[k0:k1])
	})
	if !normalize {
		return adv, 1
	}
	return adv, scaleOf(adv, sq)
}

// tokenBlock is the number of tokens a parallel pass gives one goroutine
// at a time, and a parallel sum adds serially.
const tokenBlock = 1 << 16

// parallelSum is the sum over k < n of what sum(lo, hi) returns for the
// tokens [lo, hi): fixed blocks of tokenBlock summed in parallel, then the
// block sums in order, so the result does not depend on the number of
// cores.
func parallelSum(n int, sum func(lo, hi int) float64) float64 {
	blocks := make([]float64, (n+tokenBlock-1)/tokenBlock)
	kernels.ParallelFor(len(blocks), 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			blocks[b] = sum(b*tokenBlock, min(n, (b+1)*tokenBlock))
		}
	})
	total := 0.0
	for _, s := range blocks {
		total += s
	}
	return total
}

// sumOf is parallelSum's block sum of x.
func sumOf(x []float64) func(lo, hi int) float64 {
	return func(lo, hi int) float64 {
		s := 0.0
		for _, v := range x[lo:hi] {
			s += v
		}
		return s
	}
}

// rolloutsByTarget lists each target's rollouts (targets 1..w), in order.
func rolloutsByTarget(targets []int, w int) [][]int {
	by := make([][]int, w)
	for r, x := range targets {
		by[x-1] = append(by[x-1], r)
	}
	return by
}

// rolloutStarts lists the index of each rollout's first token, and the
// tokens of all of them.
func rolloutStarts(lens []int) (starts []int, total int) {
	starts = make([]int, len(lens))
	for r, l := range lens {
		starts[r] = total
		total += l
	}
	return starts, total
}

// returnsToGo lists, token by token, each rollout's return to go
// 1{hit} - beta (T - t), T its length.
func returnsToGo(lens []int, hit []bool, beta float64) []float64 {
	return returnsToGoInto(nil, lens, hit, beta)
}

// returnsToGoInto is returnsToGo written into dst's memory when it is
// large enough, rollouts in parallel.
func returnsToGoInto(dst []float64, lens []int, hit []bool, beta float64) []float64 {
	starts, n := rolloutStarts(lens)
	g := kernels.Grow(dst, n)
	kernels.ParallelFor(len(lens), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			h := 0.0
			if hit[i] {
				h = 1
			}
			l, k := lens[i], starts[i]
			for t := range l {
				g[k+t] = h - beta*float64(l-t)
			}
		}
	})
	return g
}

// normalize centres advantages and divides them by their standard deviation.
func normalize(adv []float64) {
	mean := parallelSum(len(adv), sumOf(adv)) / float64(max(len(adv), 1))
	kernels.ParallelFor(len(adv), tokenBlock, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			adv[k] -= mean
		}
	})
	scale(adv)
}

// rolloutReturns writes one rollout's returns to go h - beta (T - t) into
// g (T = len(g), h its reward), bootstrapped at the fork with V_F = v
// unless v is NaN (targetAdvantages): back to front, as forkReturns did
// over the returns to go.
func rolloutReturns(g []float64, st []int32, fork []bool, h, beta, v float64) {
	l := len(g)
	if math.IsNaN(v) {
		for t := range g {
			g[t] = h - beta*float64(l-t)
		}
		return
	}
	st = st[:l]
	next := math.NaN() // return at the next fork-incoming token
	for t := l - 1; t >= 0; t-- {
		g[t] = h - beta*float64(l-t)
		if fork[st[t]] {
			next = g[t]
			continue
		}
		if !math.IsNaN(next) {
			g[t] += v - next
		}
	}
}

// rolloutReturnsAt is rolloutReturns given the positions of the
// rollout's fork-incoming tokens, in order (at), instead of its states:
// the same returns, bit for bit.
func rolloutReturnsAt(g []float64, at []int32, h, beta, v float64) {
	l := len(g)
	if math.IsNaN(v) {
		for t := range g {
			g[t] = h - beta*float64(l-t)
		}
		return
	}
	// Back to front, one stretch between fork-incoming tokens at a time (no
	// test at every token): the stretch after the last one takes no
	// bootstrap; each earlier one adds v - next, next the return at the
	// fork-incoming token that ends it, which takes none itself.
	hi, next := l, math.NaN()
	for j := len(at) - 1; j >= -1; j-- {
		lo := 0
		if j >= 0 {
			lo = int(at[j]) + 1
		}
		if j == len(at)-1 {
			for t := hi - 1; t >= lo; t-- {
				g[t] = h - beta*float64(l-t)
			}
		} else {
			for t := hi - 1; t >= lo; t-- {
				g[t] = h - beta*float64(l-t)
				g[t] += v - next
			}
		}
		if j >= 0 {
			a := int(at[j])
			g[a] = h - beta*float64(l-a)
			next, hi = g[a], a
		}
	}
}

// scale divides advantages by their root mean square. Advantages whose
// root mean square is below 1e-9 are rounding noise, not signal (every
// rollout of a deterministic policy that hits gets the same return, and
// the baseline cancels it up to rounding): they are set to 0. Dividing
// them by their scale would turn the noise into unit advantages and walk
// the policy away from its optimum (the prompted transformer, at the
// golden path's 7 transitions, fell to missing a third of its targets).
func scale(adv []float64) {
	scaleBy(adv, parallelSum(len(adv), func(lo, hi int) float64 { return kernels.SumSquares(adv[lo:hi]) }))
}

// scaleBy is scale given the advantages' sum of squares sq.
func scaleBy(adv []float64, sq float64) { scaleAll(adv, scaleOf(adv, sq)) }

// scaleOf is the factor scale multiplies the advantages by, given their
// sum of squares sq: 1 / their root mean square, or, when that is below
// 1e-9, 1 after setting them to 0.
func scaleOf(adv []float64, sq float64) float64 {
	std := math.Sqrt(sq / float64(max(len(adv), 1)))
	if std <= 1e-9 {
		clear(adv)
		return 1
	}
	return 1 / std
}

// scaleAll multiplies the advantages by s, on every core.
func scaleAll(adv []float64, s float64) {
	if s == 1 {
		return
	}
	kernels.ParallelFor(len(adv), tokenBlock, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			adv[k] *= s
		}
	})
}
