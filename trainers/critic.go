package trainers

import "math"

// critic is a tabular value function V(s, x) over states and targets for
// sampled RLVR. The policy never sees the target, but the trainer knows
// each rollout's; a critic given that privileged information still leaves
// the policy gradient unbiased when used in GAE with lambda = 1, and with
// lambda < 1 trades a little bias for far less variance. Each step moves
// V towards the batch's mean return from (s, x) at rate Rate (the first
// visit sets it).
type critic struct {
	v      []float64 // V[(x-1) n + s]; NaN until (s, x) is first seen
	n      int
	rate   float64
	lambda float64
}

func newCritic(nStates, w int, rate, lambda float64) *critic {
	c := &critic{v: make([]float64, nStates*w), n: nStates, rate: rate, lambda: lambda}
	for i := range c.v {
		c.v[i] = math.NaN()
	}
	return c
}

// advantages returns GAE(lambda) advantages for every token of a batch
// with the critic as it stands (unseen pairs valued by the batch's own
// returns), then fits the critic to the batch's returns. Rewards: -beta per
// transition, +1 on the transition that hits; a rollout cut by the horizon
// bootstraps from V of its last state. It writes the critic's value loss
// and explained variance on the batch, before the fit, into st.
func (c *critic) advantages(lens []int, hit []bool, states []int32, last []int32, targets []int, beta float64, st *BatchStats) []float64 {
	n := len(states)
	returns := returnsToGo(lens, hit, beta)
	// Batch means of the returns per (s, x): the fit, and the value of
	// pairs the critic has not seen yet.
	sum, count := make([]float64, len(c.v)), make([]float64, len(c.v))
	k := 0
	for r, l := range lens {
		for range l {
			key := (targets[r]-1)*c.n + int(states[k])
			sum[key] += returns[k]
			count[key]++
			k++
		}
	}
	value := func(key int) float64 {
		if v := c.v[key]; !math.IsNaN(v) {
			return v
		}
		if count[key] > 0 {
			return sum[key] / count[key]
		}
		return 0
	}
	st.ValueLoss, st.ExplainedVariance = c.fit(lens, states, targets, returns, value)
	adv := make([]float64, n)
	start := 0
	for r, l := range lens {
		base := (targets[r] - 1) * c.n
		next, gae := 0.0, 0.0 // V after the rollout: 0 at the target, bootstrapped otherwise
		if !hit[r] && l > 0 {
			next = value(base + int(last[r]))
		}
		for t := l - 1; t >= 0; t-- {
			reward := -beta
			if hit[r] && t == l-1 {
				reward++
			}
			v := value(base + int(states[start+t]))
			delta := reward + next - v
			gae = delta + c.lambda*gae
			adv[start+t] = gae
			next = v
		}
		start += l
	}
	for key, m := range count {
		if m == 0 {
			continue
		}
		mean := sum[key] / m
		if math.IsNaN(c.v[key]) {
			c.v[key] = mean
		} else {
			c.v[key] += c.rate * (mean - c.v[key])
		}
	}
	return adv
}

// fit is the mean of (V - G)^2 over the batch's tokens, V the critic's
// values (value) and G their returns to go, and the explained variance
// 1 - Var(G - V)/Var(G) (0 when G does not vary).
func (c *critic) fit(lens []int, states []int32, targets []int, returns []float64, value func(int) float64) (loss, explained float64) {
	var sumG, sumG2, sumD, sumD2 float64
	k := 0
	for r, l := range lens {
		for range l {
			g := returns[k]
			d := g - value((targets[r]-1)*c.n+int(states[k]))
			sumG, sumG2, sumD, sumD2 = sumG+g, sumG2+g*g, sumD+d, sumD2+d*d
			k++
		}
	}
	if k == 0 {
		return 0, 0
	}
	n := float64(k)
	varG, varD := sumG2/n-(sumG/n)*(sumG/n), sumD2/n-(sumD/n)*(sumD/n)
	if varG <= 0 {
		return sumD2 / n, 0
	}
	return sumD2 / n, 1 - varD/varG
}
