package eval

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Sampler draws rollouts of a Markov (bigram) policy: from s0 -> f, a
// uniform target leaf, each step a draw from the current state's row, until
// the verifier sees the target or the horizon runs out.
type Sampler struct {
	g   *tasks.Graph
	cum []float64 // per-row cumulative probabilities, CSR order
}

// NewSampler checks the policy and prepares cumulative rows.
func NewSampler(g *tasks.Graph, probs []float64) (*Sampler, error) {
	if err := CheckPolicy(g, probs); err != nil {
		return nil, err
	}
	cum := make([]float64, len(probs))
	for s := range g.States {
		acc, last := 0.0, g.Offsets[s]
		for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
			acc += probs[i]
			cum[i] = acc
			if probs[i] > 0 {
				last = i
			}
		}
		// Rounding can never fall off the row, nor onto a zero-probability state.
		for i := last; i < g.Offsets[s+1]; i++ {
			cum[i] = math.Inf(1)
		}
	}
	return &Sampler{g: g, cum: cum}, nil
}

// Step returns the next state after s for a uniform variate u in [0, 1).
func (sp *Sampler) Step(s int, u float64) int {
	lo, hi := sp.g.Offsets[s], sp.g.Offsets[s+1]
	for i := lo; i < hi; i++ {
		if u < sp.cum[i] {
			return sp.g.Next[i]
		}
	}
	return sp.g.Next[hi-1]
}

// Rollout runs one rollout toward target t (1-based) and returns the number
// of transitions taken and whether the target was hit within the horizon
// (horizon <= 0: no limit).
func (sp *Sampler) Rollout(t int, horizon int, rng *rand.Rand) (steps int, hit bool) {
	s := 0
	for horizon <= 0 || steps < horizon {
		s = sp.Step(s, rng.Float64())
		steps++
		if sp.g.Hits(s, t) {
			return steps, true
		}
	}
	return steps, false
}

// MCResult summarises Monte Carlo rollouts.
type MCResult struct {
	N           int     `json:"n"`
	HittingTime float64 `json:"mc_hitting_time"`      // mean rollout length of the hits (all rollouts when no horizon)
	CI95        float64 `json:"mc_hitting_time_ci95"` // 1.96 standard errors
	SuccessRate float64 `json:"mc_success_rate"`      // fraction hitting within the horizon
	MeanLength  float64 `json:"mc_mean_length"`       // mean length of all rollouts, truncated at the horizon
}

// MonteCarlo runs n seeded rollouts with uniform targets.
func (sp *Sampler) MonteCarlo(n, horizon int, seed uint64) (MCResult, error) {
	if n < 2 {
		return MCResult{}, fmt.Errorf("eval: mc=%d: want at least 2 rollouts", n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	var sum, sumSq, all float64
	hits := 0
	W := sp.g.W()
	for range n {
		steps, hit := sp.Rollout(1+rng.IntN(W), horizon, rng)
		all += float64(steps)
		if hit {
			hits++
			sum += float64(steps)
			sumSq += float64(steps) * float64(steps)
		}
	}
	r := MCResult{N: n, SuccessRate: float64(hits) / float64(n), MeanLength: all / float64(n)}
	if hits > 1 {
		mean := sum / float64(hits)
		variance := (sumSq - float64(hits)*mean*mean) / float64(hits-1)
		r.HittingTime = mean
		r.CI95 = 1.96 * math.Sqrt(math.Max(variance, 0)/float64(hits))
	}
	return r, nil
}
