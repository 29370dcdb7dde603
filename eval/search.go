package eval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// The search agent of the Corollary (Section 4.4): the policy proposes next
// states as usual, but the agent refuses any directed edge state already
// used in this rollout; each refused proposal costs one step, as in the
// Corollary's proof ("Theta(L) rejected actions of going forwards"). The
// number of refusals before an accepted proposal is geometric in the
// probability of the unused states, so it is drawn in one go, and the
// accepted state is drawn among the unused ones in proportion to the
// policy.
//
// The paper does not say what the agent does at a dead end, where every
// next state the policy gives positive probability is used. Dead ends are
// common: the SFT policy, back at u_{j,l} from a wrong branch's leaf, goes
// forward over another multiedge with probability (L-1)/(L+1), and there
// its whole mass (a_j = 1) is on the connector it already used. Letting the
// policy move anyway re-enters used states and brings back the exponential
// search (W=5, L=5: 212, 1182, 8120, 55858, 401190 for K = 2..6). So at a
// dead end the agent refuses once (one step) and then moves to an unused
// next state chosen uniformly (one step), as a search that never revisits
// would; only when every next state is used does the policy move freely.

// SearchMonteCarlo runs n seeded search-agent rollouts with uniform
// targets (horizon counts steps, refusals included; <= 0: no limit).
func (sp *Sampler) SearchMonteCarlo(ctx context.Context, n, horizon int, seed uint64) (MCResult, error) {
	if n < 2 {
		return MCResult{}, fmt.Errorf("eval: mc=%d: want at least 2 rollouts", n)
	}
	return monteCarlo(ctx, n, seed, sp.g.W(), func(target int, rng *rand.Rand, w *scratchRollout) (int, bool, error) {
		return sp.tab.search(ctx, sp.probs, target, horizon, rng, w)
	})
}

// search runs one search-agent rollout, marking used states in w.
func (t *table) search(ctx context.Context, probs []float64, target, horizon int, rng *rand.Rand, w *scratchRollout) (steps int, hit bool, err error) {
	if horizon <= 0 {
		horizon = math.MaxInt
	}
	if len(w.mark) != len(t.head) {
		w.mark, w.gen = make([]uint32, len(t.head)), 0
	}
	w.gen++
	if w.gen == 0 { // wrapped: forget every old mark
		clear(w.mark)
		w.gen = 1
	}
	used := func(s int32) bool { return w.mark[s] == w.gen }
	leaf := t.leaf[target]
	s := int32(0)
	w.mark[s] = w.gen
	for n := 1; steps < horizon; n++ {
		if n%checkEvery == 0 && ctx.Err() != nil {
			return steps, false, ctx.Err()
		}
		lo, hi := t.offsets[s], t.offsets[s+1]
		free, last := 0.0, int32(-1)
		for e := lo; e < hi; e++ {
			if !used(t.next[e]) && probs[e] > 0 {
				free += probs[e]
				last = e
			}
		}
		if last < 0 { // dead end: refuse once, then force an unused state
			unused := 0
			for e := lo; e < hi; e++ {
				if !used(t.next[e]) {
					unused++
				}
			}
			var e int32
			if unused == 0 { // every next state used: the policy moves freely
				e = t.entry(s, rng.Float64())
				steps++
			} else {
				k := rng.IntN(unused)
				for e = lo; ; e++ {
					if !used(t.next[e]) {
						if k == 0 {
							break
						}
						k--
					}
				}
				steps += 2
			}
			s = t.next[e]
			w.mark[s] = w.gen
			if t.head[s] == leaf {
				return steps, true, nil
			}
			continue
		}
		if free < 1 {
			// Refusals before the first unused proposal: Geometric(free).
			steps += int(math.Floor(math.Log1p(-rng.Float64()) / math.Log1p(-free)))
			if steps >= horizon {
				return horizon, false, nil
			}
		}
		u, e := rng.Float64()*free, last
		for k := lo; k < last; k++ {
			if used(t.next[k]) || probs[k] == 0 {
				continue
			}
			if u < probs[k] {
				e = k
				break
			}
			u -= probs[k]
		}
		steps++
		s = t.next[e]
		w.mark[s] = w.gen
		if t.head[s] == leaf {
			return steps, true, nil
		}
	}
	return steps, false, nil
}
