package trainers

import (
	"math"
	"math/rand/v2"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// Group-relative sampled RLVR: GRPO (Shao et al. 2024, DeepSeekMath), RLOO
// (Ahmadian et al. 2024, after Kool et al. 2019) and Dr. GRPO (Liu et al.
// 2025, "Understanding R1-Zero-Like Training"), as Hugging Face TRL's
// GRPOTrainer and RLOOTrainer define them. Here a prompt is a target: a
// group is GroupSize rollouts toward one target, drawn per group. Every
// rollout i has the sequence reward r_i = 1{hit} - beta |y_i|, and every
// token of it the rollout's advantage A_i:
//
//	grpo:    A_i = (r_i - mean_g r) / (std_g r + 1e-4)   TRL: scale_rewards, torch's unbiased std
//	rloo:    A_i = r_i - (sum_g r - r_i) / (G - 1)       the leave-one-out mean of the others
//	dr-grpo: A_i = r_i - mean_g r                        TRL: scale_rewards=False
//
// The update is PPO's clipped ratio objective (ppo.go) over Epochs passes of
// Minibatches, with the per-token terms aggregated by Config.LossAgg (TRL's
// loss_type), and with KLCoef > 0 the k3 estimate of KL(pi || pi_start) on
// every sampled token, exp(q - p) - (q - p) - 1 with p, q the policy's and
// the start's log-probabilities (Schulman 2020; TRL's per_token_kl).
//
// There is no per-state baseline: every token of a rollout gets the same
// advantage, whatever it did, so the estimator ignores the walk's
// structure that the fork baseline exploits (sampled.go).

// grpoEps is TRL's 1e-4 added to the group's standard deviation.
const grpoEps = 1e-4

// groupTargets draws one uniform target per group of g rollouts (n a
// multiple of g) from a stream seeded by the step's seed.
func groupTargets(n, g, w int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x8c5f3a1e2d4b6079))
	out := make([]int, n)
	for i := 0; i < n; i += g {
		x := 1 + rng.IntN(w)
		for j := i; j < i+g; j++ {
			out[j] = x
		}
	}
	return out
}

// sequenceRewards is each rollout's reward 1{hit} - beta |y|.
func sequenceRewards(lens []int, hit []bool, beta float64) []float64 {
	r := make([]float64, len(lens))
	for i, l := range lens {
		if hit[i] {
			r[i] = 1
		}
		r[i] -= beta * float64(l)
	}
	return r
}

// groupAdvantages returns each rollout's advantage under trainer k from
// the rewards r of consecutive groups of g rollouts, and the number of
// groups whose rewards are all equal (no signal: every advantage 0).
func groupAdvantages(k Kind, r []float64, g int) (adv []float64, flat int) {
	adv = make([]float64, len(r))
	for s := 0; s < len(r); s += g {
		grp := r[s : s+g]
		sum := 0.0
		for _, x := range grp {
			sum += x
		}
		mean := sum / float64(g)
		sq := 0.0
		spread := false
		for _, x := range grp {
			sq += (x - mean) * (x - mean)
			spread = spread || x != grp[0]
		}
		if !spread {
			flat++
		}
		std := math.Sqrt(sq / float64(g-1))
		for j, x := range grp {
			switch k {
			case GRPO:
				adv[s+j] = (x - mean) / (std + grpoEps)
			case RLOO:
				adv[s+j] = x - (sum-x)/float64(g-1)
			default:
				adv[s+j] = x - mean
			}
			if !spread { // exactly 0, not rounding noise
				adv[s+j] = 0
			}
		}
	}
	return adv, flat
}

// perToken repeats each rollout's value over its tokens, rollouts in
// parallel.
func perToken(v []float64, lens []int) []float64 {
	starts, n := rolloutStarts(lens)
	out := make([]float64, n)
	kernels.ParallelFor(len(lens), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			toks := out[starts[i] : starts[i]+lens[i]]
			for t := range toks {
				toks[t] = v[i]
			}
		}
	})
	return out
}

// minibatchOf is the minibatch of rollout i among m: rollouts are dealt in
// turn, so every minibatch holds about the same number.
func minibatchOf(i, m int) int { return i % m }

// lossDivs says what each token's term of the loss is divided by: one
// value per rollout (lossDivisors), which both learners read by the
// token's rollout. (Spread over the tokens it was one more pass over a
// batch of millions of tokens, a tenth of a paper-size bigram PPO step,
// and 8 bytes a token of the transformer's memory.)
type lossDivs struct {
	rollout []float64 // rollout i's tokens are divided by rollout[i]
	lens    []int
}

// lossDivisors sets d to what the terms of the loss of rollouts of
// lengths lens dealt into m minibatches (minibatchOf) are divided by, per
// rollout: the minibatch's token count under "token" aggregation (and for
// reinforce and ppo), the rollout's length times the minibatch's rollouts
// under "sequence", and the minibatch's rollouts times the horizon under
// "constant" (TRL's dr_grpo: B x max_completion_length).
func (d *lossDivs) lossDivisors(agg string, lens []int, m, horizon int) {
	tokens, rollouts := make([]float64, m), make([]float64, m)
	for i, l := range lens {
		tokens[minibatchOf(i, m)] += float64(l)
		rollouts[minibatchOf(i, m)]++
	}
	d.lens, d.rollout = lens, kernels.Grow(d.rollout, len(lens))
	for i, l := range lens {
		j := minibatchOf(i, m)
		v := tokens[j]
		switch agg {
		case "sequence":
			v = float64(l) * rollouts[j]
		case "constant":
			v = rollouts[j] * float64(horizon)
		}
		d.rollout[i] = v
	}
}
