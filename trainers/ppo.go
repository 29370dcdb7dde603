package trainers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
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

// ppoObjective is PPO's clipped surrogate (Schulman et al. 2017) summed
// over items: sum_i A+_i min(r_i, 1+eps) + A-_i max(r_i, 1-eps), with
// r_i = exp(logp_i - oldLogp_i). min(r, c) = r - relu(r - c) and
// max(r, c) = r + relu(c - r) keep it in stock ops. Advantages arrive
// already divided by the number of tokens.
func ppoObjective(logp, oldLogp, advPos, advNeg *G.Node, eps float64) (obj *G.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			obj, err = nil, fmt.Errorf("trainers: ppo loss: %v", r)
		}
	}()
	hi := G.NewConstant(1+eps, G.WithName("1+eps"))
	lo := G.NewConstant(1-eps, G.WithName("1-eps"))
	r := G.Must(G.Exp(G.Must(G.Sub(logp, oldLogp))))                   // (P) ratio pi/pi_old
	upper := G.Must(G.Sub(r, G.Must(G.Rectify(G.Must(G.Sub(r, hi)))))) // (P) min(r, 1+eps)
	lower := G.Must(G.Add(r, G.Must(G.Rectify(G.Must(G.Sub(lo, r)))))) // (P) max(r, 1-eps)
	pos := G.Must(G.Mul(advPos, upper))                                // (P) . (P) -> ()
	neg := G.Must(G.Mul(advNeg, lower))                                // (P) . (P) -> ()
	return G.Add(pos, neg)
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
// forkReturns); fork[s] marks the fork-incoming states and is used only
// by it. states[i] is the state of token i, among nStates; targets[r] the
// target (1..w) of rollout r.
func tokenAdvantages(lens []int, hit []bool, states []int32, nStates int, targets []int, w int, beta float64, baseline string, fork []bool, normalize bool) []float64 {
	adv := returnsToGo(lens, hit, beta)
	n := len(adv)
	if n == 0 {
		return adv
	}
	if baseline == "fork" {
		forkReturns(adv, lens, states, fork, targets, w)
	}
	if baseline == "state" || baseline == "state-target" || baseline == "fork" {
		key := make([]int, n) // the baseline's group of each token
		k := 0
		for r, l := range lens {
			for range l {
				key[k] = int(states[k])
				if baseline != "state" {
					key[k] += nStates * (targets[r] - 1)
				}
				k++
			}
		}
		groups := nStates
		if baseline != "state" {
			groups *= w
		}
		sum, count := make([]float64, groups), make([]float64, groups)
		for i, g := range key {
			sum[g] += adv[i]
			count[g]++
		}
		for i, g := range key {
			adv[i] -= sum[g] / count[g]
		}
	} else {
		mean := 0.0
		for _, a := range adv {
			mean += a
		}
		mean /= float64(n)
		for i := range adv {
			adv[i] -= mean
		}
	}
	if normalize {
		scale(adv)
	}
	return adv
}

// forkReturns bootstraps the returns to go g (token by token, as from
// returnsToGo) at the fork. Every visit to a fork-incoming state renews the
// walk: what follows depends on the target and the time left, not on how
// the walk got there. So the return of a token before the rollout's next
// fork-incoming state is replaced by the reward up to that state plus the
// batch's mean return from fork-incoming states with the same target,
// V_F(x): a one-state critic per target, fitted on every excursion of the
// batch. Rewards after the return to the fork, the bulk of the return's
// variance (how many other branches the search tries before the target,
// whether the horizon cuts it), then no longer reach the tokens of an
// excursion, and the advantage of a move inside a branch is decided by
// that excursion: whether it hits the target and how long it takes. Tokens
// of an excursion that the rollout's end cuts keep their own returns. The
// bias is the one of any bootstrap: V_F(x) ignores the time already spent,
// so a longer excursion costs beta per step but not the horizon's share.
func forkReturns(g []float64, lens []int, states []int32, fork []bool, targets []int, w int) {
	sum, count := make([]float64, w), make([]float64, w)
	for r, k := range rolloutStarts(lens) {
		for t := k; t < k+lens[r]; t++ {
			if fork[states[t]] {
				sum[targets[r]-1] += g[t]
				count[targets[r]-1]++
			}
		}
	}
	for r, k := range rolloutStarts(lens) {
		x := targets[r] - 1
		if count[x] == 0 {
			continue
		}
		vf := sum[x] / count[x]
		next := math.NaN() // return at the next fork-incoming token
		for t := k + lens[r] - 1; t >= k; t-- {
			if fork[states[t]] {
				next = g[t]
				continue
			}
			if !math.IsNaN(next) {
				g[t] += vf - next
			}
		}
	}
}

// rolloutStarts lists the index of each rollout's first token.
func rolloutStarts(lens []int) []int {
	starts := make([]int, len(lens))
	k := 0
	for r, l := range lens {
		starts[r] = k
		k += l
	}
	return starts
}

// returnsToGo lists, token by token, each rollout's return to go
// 1{hit} - beta (T - t): the reward of the rest of the rollout.
func returnsToGo(lens []int, hit []bool, beta float64) []float64 {
	n := 0
	for _, l := range lens {
		n += l
	}
	g := make([]float64, 0, n)
	for i, l := range lens {
		h := 0.0
		if hit[i] {
			h = 1
		}
		for t := range l {
			g = append(g, h-beta*float64(l-t))
		}
	}
	return g
}

// normalize centres advantages and divides them by their standard deviation.
func normalize(adv []float64) {
	mean := 0.0
	for _, a := range adv {
		mean += a
	}
	mean /= float64(max(len(adv), 1))
	for i := range adv {
		adv[i] -= mean
	}
	scale(adv)
}

// scale divides advantages by their root mean square. Advantages whose
// root mean square is below 1e-9 are rounding noise, not signal (every
// rollout of a deterministic policy that hits gets the same return, and
// the baseline cancels it up to rounding): they are set to 0. Dividing
// them by their scale would turn the noise into unit advantages and walk
// the policy away from its optimum (the prompted transformer, at the
// golden path's 7 transitions, fell to missing a third of its targets).
func scale(adv []float64) {
	var sq float64
	for _, a := range adv {
		sq += a * a
	}
	std := math.Sqrt(sq / float64(max(len(adv), 1)))
	if std <= 1e-9 {
		clear(adv)
		return
	}
	for i := range adv {
		adv[i] /= std
	}
}
