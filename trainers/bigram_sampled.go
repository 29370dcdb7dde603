package trainers

import (
	"context"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// The bigram's sampled RLVR: a bigram's log-probability of a token
// depends on its transition only, so a batch's loss constants are summed
// per transition before they enter the graph, whose size does not grow with
// the batch (see ppo.go).

// buildSampled adds the reinforce or ppo loss to the model's graph.
func (b *bigram) buildSampled() (*G.Node, error) {
	cfg, model := b.t.cfg, b.model
	p := model.NumParams()
	b.paramOf = make([]int32, len(b.g.Next))
	for i := range b.paramOf {
		b.paramOf[i] = -1
	}
	for k, e := range model.TrainableEntries() {
		b.paramOf[e] = int32(k)
	}
	logp := model.LogProbs()
	if !cfg.Trainer.Clipped() {
		return reinforceLoss(logp, b.in.node)
	}
	g := model.Graph()
	cost, advPos, advNeg, oldLog, err := clippedLoss(g, p, clippedOf(logp, cfg.Clip, nn.Fused))
	if err != nil {
		return nil, err
	}
	b.advPos, b.advNeg, b.oldLog = advPos, advNeg, oldLog
	if cfg.KLCoef > 0 || cfg.EntropyCoef > 0 {
		b.share, b.refLog = newVec(g, p, "state_share"), newVec(g, p, "logp_ref")
		probs := model.Probs()
		for k, e := range model.TrainableEntries() {
			b.refLog.data()[k] = math.Log(probs[e])
		}
	}
	return addRegularizers(cost, logp, b.refLog.node, b.share.node, cfg)
}

// transitionBytes: each transition's entry and log-probability (1.5
// words) and the trainer's six per-token words.
func (b *bigram) transitionBytes() float64 { return 8 * (1.5 + 6) }

// rollouts samples the current table with eval's Markov sampler; the
// log-probabilities are the table's (update reads them from it).
func (b *bigram) rollouts(ctx context.Context, n, horizon int, seed uint64, targets []int) (*eval.AgentBatch, error) {
	if err := b.current(); err != nil {
		return nil, err
	}
	sp, err := eval.NewSampler(b.g, b.probs)
	if err != nil {
		return nil, err
	}
	batch, err := b.buf.Rollouts(ctx, sp, n, targets, horizon, seed)
	if err != nil {
		return nil, err
	}
	return &eval.AgentBatch{Batch: *batch}, nil
}

// walks samples the current table's walks with hindsight targets.
func (b *bigram) walks(ctx context.Context, n, horizon int, seed uint64) (*eval.AgentBatch, error) {
	if err := b.current(); err != nil {
		return nil, err
	}
	sp, err := eval.NewSampler(b.g, b.probs)
	if err != nil {
		return nil, err
	}
	batch, err := b.buf.Walks(ctx, sp, n, horizon, seed)
	if err != nil {
		return nil, err
	}
	return &eval.AgentBatch{Batch: *batch}, nil
}

// update is the REINFORCE update or the clipped objective's epochs over
// minibatches.
func (b *bigram) update(batch *eval.AgentBatch, states []int32, adv *advantages, div *lossDivs) (ratioStats, error) {
	cfg, probs := b.t.cfg, b.probs
	if !cfg.Trainer.Clipped() {
		w := b.in.data()
		clear(w)
		for r, d := range div.rollout {
			for i := batch.Starts[r]; i < batch.Starts[r+1]; i++ {
				if k := b.paramOf[batch.Entries[i]]; k >= 0 {
					w[k] -= adv.at(i) / d
				}
			}
		}
		err := b.runStep(b.in)
		return ratioStats{trained: batch.Tokens(), gradNorm: b.step.GradNorm()}, err
	}
	old := b.oldLog.data()
	for k, e := range b.model.TrainableEntries() {
		old[k] = math.Log(probs[e])
	}
	mini, tokens := b.minibatches(&batch.Batch, adv, div, states)
	epochs, _ := cfg.Trainer.epochs(cfg)
	for range epochs {
		for _, m := range mini {
			copy(b.advPos.data(), m.pos)
			copy(b.advNeg.data(), m.neg)
			if b.share.node != nil {
				copy(b.share.data(), m.share)
			}
			if err := b.runStep(b.advPos, b.advNeg, b.oldLog, b.share, b.refLog); err != nil {
				return ratioStats{}, err
			}
		}
	}
	// PPO's approximate KL and clip fraction over the batch's tokens after
	// the updates: a token's ratio is its transition's.
	now := b.model.Probs()
	rs := ratioStats{trained: epochs * batch.Tokens(), gradNorm: b.step.GradNorm()}
	for k, e := range b.model.TrainableEntries() {
		if tokens[k] > 0 {
			rs.addN(now[e]/math.Exp(old[k]), cfg.Clip, tokens[k])
		}
	}
	return rs, nil
}

// entropy averages the sampling table's row entropies over the batch's
// tokens in trained rows: the rows' entropies now, the pass over the
// tokens when the returned function is called.
func (b *bigram) entropy(batch *eval.AgentBatch, states []int32) func() float64 {
	h := make([]float64, b.g.NumStates())
	for s := range h {
		for _, p := range b.probs[b.g.Offsets[s]:b.g.Offsets[s+1]] {
			if p > 0 {
				h[s] -= p * math.Log(p)
			}
		}
	}
	trained := b.t.trained
	for s := range h { // -1 marks the states that are not trained
		if !trained[s] {
			h[s] = -1
		}
	}
	return func() float64 { return tokenMean(h, states) }
}

// tokenMean averages h[s] over the tokens' states s with h[s] >= 0, in
// one pass: each block's sum and count, added in block order.
func tokenMean(h []float64, states []int32) float64 {
	blocks := (len(states) + tokenBlock - 1) / tokenBlock
	sums, counts := make([]float64, blocks), make([]int, blocks)
	kernels.ParallelFor(blocks, 1, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			sum, n := 0.0, 0
			for _, s := range states[k*tokenBlock : min(len(states), (k+1)*tokenBlock)] {
				if v := h[s]; v >= 0 {
					sum += v
					n++
				}
			}
			sums[k], counts[k] = sum, n
		}
	})
	sum, n := 0.0, 0
	for k := range sums {
		sum, n = sum+sums[k], n+counts[k]
	}
	return sum / float64(max(n, 1))
}

// sumAdvantages adds a rollout's tokens (their CSR entries, advantages
// before their scale, and loss divisor d) to acc, which holds each
// parameter's sums side by side: acc[3k] the positive advantages (times
// scale) over d, acc[3k+1] the negative ones, acc[3k+2] the tokens (one
// cache line a token where three arrays took three). A token whose entry
// is not a parameter is skipped. Both sums take each token's value, one as
// 0: no branch to mispredict. The split is max(a, 0) and min(a, 0) bit for
// bit (+0 and -0 included) by the sign bit, a mask and two ANDs: Go's
// float max and min take a dozen instructions each to order their zeros
// and NaNs (TestSumAdvantagesSplitsSigns). It is not inlined: in the
// minibatch's closure the compiler reloaded every slice, and the loop's
// index, from the stack on every token.
//
//go:noinline
func sumAdvantages(acc []float64, paramOf, entries []int32, adv []float64, scale, d float64) {
	adv = adv[:len(entries)]
	for t, e := range entries {
		k := int(paramOf[e])
		if k < 0 {
			continue
		}
		a, sums := adv[t]*scale/d, acc[3*k:3*k+3:3*k+3]
		if a != a { // NaN: max and min give it to both sums
			sums[0], sums[1], sums[2] = sums[0]+a, sums[1]+a, sums[2]+1
			continue
		}
		b := math.Float64bits(a)
		neg := uint64(int64(b) >> 63)             // all ones when the sign is set (-0 too)
		sums[0] += math.Float64frombits(b &^ neg) // max(a, 0): a, or +0
		sums[1] += math.Float64frombits(b & neg)  // min(a, 0): a, or +0
		sums[2]++
	}
}

// minibatch holds one minibatch's aggregated loss constants.
type minibatch struct{ pos, neg, share []float64 }

// minibatches splits the batch (minibatchOf) and sums each minibatch's
// advantages per parameter, each divided by its token's divisor, and
// counts the batch's tokens per parameter. The KL
// and entropy shares are the minibatch's tokens per state over its token
// count (ppo's exact KL), or for the group-relative trainers' k3 estimate
// the sum of 1/divisor over the item's tokens.
func (b *bigram) minibatches(batch *eval.Batch, adv *advantages, div *lossDivs, states []int32) ([]minibatch, []float64) {
	p := b.model.NumParams()
	m := b.t.cfg.Minibatches
	out := make([]minibatch, m)
	counts := make([][]float64, m) // tokens per state, for the KL/entropy shares
	tokens := make([][]float64, m) // tokens per parameter
	n := make([]float64, m)
	k3 := b.t.cfg.Trainer.Grouped() && b.share.node != nil
	for j := range out {
		out[j] = minibatch{pos: make([]float64, p), neg: make([]float64, p)}
		counts[j], tokens[j] = make([]float64, b.g.NumStates()), make([]float64, p)
		if k3 {
			out[j].share = make([]float64, p)
		}
	}
	for i := range batch.Targets {
		n[minibatchOf(i, m)] += float64(batch.Len(i))
	}
	kernels.ParallelFor(m, 1, func(lo, hi int) { // one minibatch per core
		var acc []float64
		for j := lo; j < hi; j++ {
			o, count, tok := out[j], counts[j], tokens[j]
			acc = kernels.Grow(acc, 3*p)
			clear(acc)
			for i := j; i < len(batch.Targets); i += m { // minibatchOf(i, m) == j
				d, t0, t1 := div.rollout[i], batch.Starts[i], batch.Starts[i+1]
				sumAdvantages(acc, b.paramOf, batch.Entries[t0:t1], adv.v[t0:t1], adv.scale, d)
				if b.share.node == nil && !k3 {
					continue
				}
				for t := t0; t < t1; t++ {
					k := b.paramOf[batch.Entries[t]]
					if k < 0 {
						continue
					}
					if b.share.node != nil {
						count[states[t]]++
					}
					if k3 {
						o.share[k] += 1 / d
					}
				}
			}
			for k := range p {
				o.pos[k], o.neg[k], tok[k] = acc[3*k], acc[3*k+1], acc[3*k+2]
			}
		}
	})
	if b.share.node != nil && !k3 {
		for j := range out {
			out[j].share = make([]float64, p)
			for k, e := range b.model.TrainableEntries() {
				out[j].share[k] = counts[j][support(b.g).RowOf(e)] / n[j]
			}
		}
	}
	for j := 1; j < m; j++ {
		kernels.AddTo(tokens[0], tokens[j])
	}
	return out, tokens[0]
}
