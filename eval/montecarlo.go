package eval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Sampler draws rollouts of a Markov (bigram) policy: from s0 -> f, a
// uniform target leaf, each step a draw from the current state's row, until
// the verifier sees the target or the horizon runs out.
type Sampler struct {
	g     *tasks.Graph
	probs []float64   // the policy (a copy), CSR order
	tab   *table      // compact copy for Step and the search agent
	alias *aliasTable // the rollouts' tables
}

// NewSampler checks the policy and copies it.
func NewSampler(g *tasks.Graph, probs []float64) (*Sampler, error) {
	if err := CheckPolicy(g, probs); err != nil {
		return nil, err
	}
	if g.W() > maxLeaves || len(g.Next) > math.MaxUint32/2 {
		return nil, fmt.Errorf("eval: sampler: %d branches and %d transitions: the alias tables hold at most %d branches and %d transitions", g.W(), len(g.Next), maxLeaves, math.MaxUint32/2)
	}
	probs = append([]float64(nil), probs...)
	return &Sampler{g: g, probs: probs, tab: newTable(g, probs), alias: newAliasTable(g, probs)}, nil
}

// Step returns the next state after s for a uniform variate u in [0, 1)
// (Draw).
func (sp *Sampler) Step(s int, u float64) int {
	return sp.g.Next[sp.tab.entry(int32(s), u)]
}

// MCResult summarises Monte Carlo rollouts.
type MCResult struct {
	N           int     `json:"mc_n"`
	Hits        int     `json:"mc_hits"`              // rollouts that hit within the horizon
	HittingTime float64 `json:"mc_hitting_time"`      // mean length of the rollouts that hit (all of them without a horizon)
	CI95        float64 `json:"mc_hitting_time_ci95"` // 1.96 standard errors of that mean
	SuccessRate float64 `json:"mc_success_rate"`      // fraction hitting within the horizon
	MeanLength  float64 `json:"mc_mean_length"`       // mean length of all rollouts, truncated at the horizon
}

// MonteCarlo runs n seeded rollouts with uniform targets, spread over the
// cores (rollout i uses its own random stream, so the result does not
// depend on the number of cores).
func (sp *Sampler) MonteCarlo(ctx context.Context, n, horizon int, seed uint64) (MCResult, error) {
	if n < 2 {
		return MCResult{}, fmt.Errorf("eval: mc=%d: want at least 2 rollouts", n)
	}
	return monteCarlo(ctx, n, seed, sp.g.W(), func(target int, rng *rand.Rand, w *scratchRollout) (int, bool, error) {
		var hit bool
		var err error
		w.buf, hit, err = sp.alias.rollout(ctx, w.buf[:0], target, horizon, rng)
		return len(w.buf), hit, err
	})
}

// scratchRollout is one worker's reusable rollout memory.
type scratchRollout struct {
	buf  []int32
	mark []uint32 // search agent: mark[s] == gen when state s is used
	gen  uint32
}

// rolloutFunc runs one rollout toward target and returns its length and
// whether it hit.
type rolloutFunc func(target int, rng *rand.Rand, w *scratchRollout) (int, bool, error)

// monteCarlo aggregates n rollouts run in parallel, rollout i seeded by
// (seed, i).
func monteCarlo(ctx context.Context, n int, seed uint64, w int, f rolloutFunc) (MCResult, error) {
	lens := make([]int, n)
	hits := make([]bool, n)
	err := eachRollout(ctx, n, seed, func(int, int) (*scratchRollout, error) { return &scratchRollout{}, nil }, func(i int, scratch *scratchRollout, rng *rand.Rand) error {
		var err error
		lens[i], hits[i], err = f(1+rng.IntN(w), rng, scratch)
		return err
	})
	if err != nil {
		return MCResult{}, err
	}
	return summarize(lens, hits), nil
}

// Summary is the Monte Carlo summary of a batch's rollouts (as MonteCarlo
// summarises its own): a batch of on-policy rollouts with uniform targets
// is a Monte Carlo measurement of the policy that drew it, within its
// horizon.
func (b *Batch) Summary() MCResult {
	lens := make([]int, len(b.Targets))
	for i := range lens {
		lens[i] = b.Len(i)
	}
	r := summarize(lens, b.Hit)
	if b.walk > 0 && r.Hits > 1 {
		r.CI95 = clusterCI95(lens, b.Hit, b.walk, r.HittingTime)
	}
	return r
}

// clusterCI95 is the 95% half-width of the mean length of the hits, mean,
// when the rollouts come in correlated groups of w (the walks of hindsight
// targets) and the groups are independent: the ratio estimator's
// linearised variance over the groups, sum_j (S_j - mean C_j)^2 / (J (J -
// 1) Cbar^2), S_j the group's sum of hit lengths and C_j its hits. With
// every rollout hit it is the interval of the J group means. Its quantile
// is Student's t with J - 1 degrees of freedom: a step's batch holds only
// ceil(rollouts / W) walks (9 for the transformer's 128 rollouts at
// W=15), where the normal's 1.96 would give an interval 15% too narrow.
func clusterCI95(lens []int, hits []bool, w int, mean float64) float64 {
	groups := len(lens) / w
	if groups < 2 {
		return math.Inf(1)
	}
	var ss, c float64
	for j := range groups {
		var s, cj float64
		for i := j * w; i < (j+1)*w; i++ {
			if hits[i] {
				s, cj = s+float64(lens[i]), cj+1
			}
		}
		ss += (s - mean*cj) * (s - mean*cj)
		c += cj
	}
	cbar := c / float64(groups)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(groups - 1)}.Quantile(0.975)
	return t * math.Sqrt(ss/(float64(groups)*float64(groups-1))) / cbar
}

// summarize is the Monte Carlo summary of rollouts of the given lengths,
// hitting or not.
func summarize(lens []int, hits []bool) MCResult {
	n := len(lens)
	var sum, sumSq, all float64
	nh := 0
	for i, l := range lens {
		all += float64(l)
		if hits[i] {
			nh++
			sum += float64(l)
			sumSq += float64(l) * float64(l)
		}
	}
	r := MCResult{N: n, Hits: nh, SuccessRate: float64(nh) / float64(n), MeanLength: all / float64(n)}
	if nh > 1 {
		mean := sum / float64(nh)
		variance := (sumSq - float64(nh)*mean*mean) / float64(nh-1)
		r.HittingTime = mean
		r.CI95 = 1.96 * math.Sqrt(math.Max(variance, 0)/float64(nh))
	}
	return r
}
