package trainers

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// The table pass. With the table initialisation the transformer's logit of
// next token a after a prefix ending in x is B[x -> a] + LN(h) . U[a]: the
// bigram B plus a correction carried by the attention. The windows pass
// trains on a subsample of a batch's tokens (TrainTokens): at the paper's
// size one in a hundred, and B's gradient from so few tokens is noise that
// Adam turns into full steps, which walks the policy away from its start
// (the hitting time rose from 52k to 77k in 60 PPO steps where the bigram,
// learning from every token, fell). So in sampled RLVR B learns from every
// sampled token, as the bigram does, in a graph of its own (nn.TableBatch)
// whose logits are B plus the correction the sampler computed for each
// token, held constant: the correction is frozen at its sampling-time
// value during the pass, and so is every parameter but B (newPasses).
//
// The table's update in each minibatch of each epoch is a step on the
// trainer's loss over its tokens, as the windows pass's over its windows:
// for PPO the clipped surrogate sum_t A+_t min(r_t, 1+eps) + A-_t max(r_t,
// 1-eps), r_t = pi_t(a_t) / pi_old(a_t), pi_t at the current B with the
// correction held at its sampling-time value and pi_old the sampler's
// (so r_t = 1 at the first minibatch of the first epoch); for REINFORCE
// the policy gradient sum_t A_t log pi_t(a_t) / n.

// tableData is what the table pass reads of a batch, for one update.
type tableData struct {
	*batchTokens               // with the rows' starts
	b0           []float64     // B at sampling
	mini         []tableTokens // each minibatch's tokens
}

// tableTokens are the tokens of one minibatch the table pass trains on:
// every token at a trained state, or when they are more than the table's
// budget per minibatch (TableTokens / minibatches) a uniform random subset
// of that many, each weighted by the inverse sampling rate (scale), so
// that the expected gradient is the full one; seeded by the step and the
// minibatch, so a resumed run draws the same subsets.
type tableTokens struct {
	tokens []int32 // batch indices, increasing (a token's rollout: rolloutAt)
	scale  float64 // each token's weight: the inverse sampling rate
	// With hindsight targets (walks, eval.Batch.Walk), a walk's token is
	// in every rollout of the walk that is longer than its position, each
	// with its own target's advantage; the table pass trains it once, on
	// the sums of those terms (walkSums): its tokens are then those of
	// the walk's longest rollout in the minibatch, and sums holds, per
	// token, the positive and negative parts of the advantages (each
	// over its rollout's divisor) and the divisors' inverses, summed.
	sums *walkSums
}

// walkSums are, per token of a minibatch's table pass with hindsight
// targets, the sums over the rollouts holding it of its terms in the loss:
// pos and neg the positive and negative parts of adv / div (the clipped
// objective's A+ and A-; REINFORCE takes their sum), share the sum of
// 1 / div (the KL and entropy terms' weights).
type walkSums struct{ pos, neg, share []float64 }

// newTableData gathers the table pass's view of a batch whose rollouts
// are dealt into the minibatches mini; for a batch of walks, walks holds
// each minibatch's walks (walkSumsOf), whose tokens it trains.
func (l *transformer) newTableData(bt *batchTokens, mini [][]int, walks []walkWindows) *tableData {
	ls := l.tr.Learnables()
	tb := &tableData{batchTokens: bt, b0: slices.Clone(ls[len(ls)-1].Value().Data().([]float64))}
	for mb, rs := range mini {
		in := l.tableTokensOf(bt.ab, bt.states, rs, mb, len(mini), walks)
		tb.mini = append(tb.mini, in)
	}
	return tb
}

// subsampled keeps a uniform random subset of k of the tokens (and their
// sums, with walks), in order, each weighted by the inverse sampling rate.
func (in tableTokens) subsampled(k int, rng *rand.Rand) tableTokens {
	n := len(in.tokens)
	pick := rng.Perm(n)[:k]
	slices.Sort(pick)
	sub := tableTokens{tokens: make([]int32, k), scale: float64(n) / float64(k)}
	if in.sums != nil {
		sub.sums = &walkSums{pos: make([]float64, k), neg: make([]float64, k), share: make([]float64, k)}
	}
	for j, p := range pick {
		sub.tokens[j] = in.tokens[p]
		if in.sums != nil {
			sub.sums.pos[j], sub.sums.neg[j], sub.sums.share[j] = in.sums.pos[p], in.sums.neg[p], in.sums.share[p]
		}
	}
	return sub
}

// walkSumsOf is, for a minibatch's rollouts rs of a batch of walks, each
// walk's tokens at trained states once, from the longest of its rollouts
// in the minibatch (returned, one per walk, in order), with the sums of
// their terms over the walk's rollouts in the minibatch that hold them
// (walkSums). The sums are taken in rollout order, so they do not depend
// on the cores.
func (l *transformer) walkSumsOf(ab *eval.AgentBatch, states []int32, rs []int, adv, div []float64) (tableTokens, []int) {
	w := ab.Walk()
	var groups [][]int // the minibatch's rollouts by walk, in order
	for k, r := range rs {
		if k == 0 || r/w != rs[k-1]/w {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], r)
	}
	long := make([]int, len(groups)) // each walk's longest rollout in the minibatch
	at := make([]int, len(groups)+1)
	kernels.ParallelEach(len(groups), func(k int) {
		long[k] = groups[k][0]
		for _, r := range groups[k] {
			if ab.Len(r) > ab.Len(long[k]) {
				long[k] = r
			}
		}
		for t := ab.Starts[long[k]]; t < ab.Starts[long[k]+1]; t++ {
			if l.t.trained[states[t]] {
				at[k+1]++
			}
		}
	})
	for k := range groups {
		at[k+1] += at[k]
	}
	n := at[len(groups)]
	out := tableTokens{tokens: make([]int32, n), scale: 1, sums: &walkSums{pos: make([]float64, n), neg: make([]float64, n), share: make([]float64, n)}}
	kernels.ParallelEach(len(groups), func(k int) {
		lo := ab.Starts[long[k]]
		idx := make([]int, ab.Len(long[k])) // position in the walk -> table token, -1 when untrained
		j := at[k]
		for t := lo; t < ab.Starts[long[k]+1]; t++ {
			idx[t-lo] = -1
			if l.t.trained[states[t]] {
				out.tokens[j], idx[t-lo] = int32(t), j
				j++
			}
		}
		sm := out.sums
		for _, r := range groups[k] {
			for p := range ab.Len(r) {
				j := idx[p]
				if j < 0 {
					continue
				}
				a := adv[ab.Starts[r]+p] / div[r]
				if a > 0 {
					sm.pos[j] += a
				} else {
					sm.neg[j] += a
				}
				sm.share[j] += 1 / div[r]
			}
		}
	})
	return out, long
}

func (l *transformer) tableTokensOf(ab *eval.AgentBatch, states []int32, rs []int, mb, m int, walks []walkWindows) tableTokens {
	rng := func() *rand.Rand { return rand.New(rand.NewPCG(l.t.stepSeed()^0x13198a2e03707344, uint64(mb))) }
	if walks != nil { // each walk's tokens once, with their sums
		out := walks[mb].sums
		if k := l.opts.TableTokens / m; l.opts.TableTokens > 0 && len(out.tokens) > k {
			out = out.subsampled(k, rng())
		}
		return out
	}
	if len(l.tableIn) <= mb {
		l.tableIn = append(l.tableIn, make([]tableTokens, mb+1-len(l.tableIn))...)
	}
	// Each rollout's count of tokens at trained states, then each one's
	// tokens written where the counts before it end, rollouts on every core.
	at := make([]int, len(rs)+1)
	kernels.ParallelEach(len(rs), func(k int) {
		i := rs[k]
		for t := ab.Starts[i]; t < ab.Starts[i+1]; t++ {
			if l.t.trained[states[t]] {
				at[k+1]++
			}
		}
	})
	for k := range rs {
		at[k+1] += at[k]
	}
	out := tableTokens{tokens: kernels.Grow(l.tableIn[mb].tokens, at[len(rs)])}
	kernels.ParallelEach(len(rs), func(k int) {
		i, j := rs[k], at[k]
		for t := ab.Starts[i]; t < ab.Starts[i+1]; t++ {
			if l.t.trained[states[t]] {
				out.tokens[j] = int32(t)
				j++
			}
		}
	})
	l.tableIn[mb] = out // valid until the next update's
	out.scale = 1
	if k := l.opts.TableTokens / m; l.opts.TableTokens > 0 && len(out.tokens) > k {
		out = out.subsampled(k, rng())
	}
	return out
}

// trainTable takes one step of the table pass on minibatch mb's tokens
// (accumulateTable, then the table's solver group applies the sum).
func (l *transformer) trainTable(tb *tableData, mb int, adv, div []float64) error {
	if err := l.accumulateTable(tb, mb, adv, div); err != nil || len(tb.mini[mb].tokens) == 0 {
		return err
	}
	return l.applyTable()
}

// applyTable applies the table pass's summed gradient (after
// accumulateTable of a minibatch with tokens).
func (l *transformer) applyTable() error {
	start := time.Now()
	defer func() { l.tableTime += time.Since(start) }()
	if err := l.table.apply(); err != nil {
		return fmt.Errorf("trainers: step %d: table: %w", l.t.done, err)
	}
	return nil
}

// accumulateTable sums the gradient of the table pass on minibatch mb's
// tokens (none when it has none): the trainer's loss (lossOf) over them,
// each token's logits B's current values plus its correction (its
// sampled row minus B at sampling, b0) held constant, over fills of the
// table's graph. It reads B and no other parameter (update runs it beside
// the windows pass of the minibatch before).
func (l *transformer) accumulateTable(tb *tableData, mb int, adv, div []float64) error {
	in := tb.mini[mb]
	if len(in.tokens) == 0 {
		return nil
	}
	start := time.Now()
	defer func() { l.tableTime += time.Since(start) }()
	defer region("table pass").End()
	g, t, p, batch := l.t.g, l.t, l.table, l.tbl
	ab, states := tb.ab, tb.states
	chunk, _ := batch.Shape()
	l.oldLog = kernels.Grow(l.oldLog, chunk)
	old := l.oldLog // each token's log-probability at sampling, read from its row here
	for c := 0; c < len(in.tokens); c += chunk {
		cc := c
		toks := in.tokens[c:min(c+chunk, len(in.tokens))]
		inParts(len(toks), func(j0, j1 int) { // the rows are read from all over the batch: on every core
			r := rolloutAt(&ab.Batch, int(toks[j0]))
			for j := j0; j < j1; j++ {
				k := toks[j]
				for int(k) >= ab.Starts[r+1] {
					r++
				}
				s := int(states[k])
				lo, hi := g.Offsets[s], g.Offsets[s+1]
				row := ab.Rows[r][tb.rowStart[k]:][:hi-lo]
				old[j] = row[int(ab.Entries[k])-lo]
				off := batch.Set(j, lo, hi-lo, int(ab.Entries[k])-lo)
				for e := lo; e < hi; e++ {
					off[e-lo] = row[e-lo] - tb.b0[e]
				}
			}
		})
		if err := batch.SetLen(len(toks)); err != nil {
			return fmt.Errorf("trainers: step %d: table: %w", t.done, err)
		}
		c := p.begin()
		inParts(len(toks), func(j0, j1 int) {
			r := rolloutAt(&ab.Batch, int(toks[j0]))
			for j := j0; j < j1; j++ {
				for int(toks[j]) >= ab.Starts[r+1] {
					r++
				}
				if in.sums != nil {
					l.setSummed(c, j, int(toks[j]), in.scale, old[j], ab, in.sums, cc+j)
					continue
				}
				l.setSampled(c, j, r, int(toks[j]), in.scale, old[j], ab, adv, div)
			}
		})
		if _, err := p.accumulate(); err != nil {
			return fmt.Errorf("trainers: step %d: table: %w", t.done, err)
		}
	}
	return nil
}

// rolloutAt is the rollout of the batch's token t. A loop over increasing
// tokens (a minibatch's, a block of the batch) finds the first one's
// rollout here and the next ones by walking on (the table pass's tokens'
// rollouts, kept, were 4 bytes a sampled token).
func rolloutAt(b *eval.Batch, t int) int { return sort.SearchInts(b.Starts, t+1) - 1 }

// rowStarts is where each token's row starts in its rollout's Rows (see
// rowStartsInto), computed once per batch drawn into the buffers and kept
// in reused memory. (Kept by step, a batch drawn at the step of the last
// computation with as many tokens read the batch before's:
// TestRowStartsFollowTheDraw.)
func (l *transformer) rowStarts(ab *eval.AgentBatch, states []int32) []int32 {
	if l.rowStart.draw != l.draws || l.rowStart.batch != ab || len(l.rowStart.of) != len(states) {
		l.rowStart.of = rowStartsInto(l.rowStart.of, l.t.g, l.t.trained, ab, states)
		l.rowStart.draw, l.rowStart.batch = l.draws, ab
	}
	return l.rowStart.of
}

// rowStartsInto is where each token's row starts in its rollout's Rows:
// token t's row holds as many values as its state has valid next states
// when the state is trained, none otherwise (rowAgent); written into
// out's memory when it is large enough.
func rowStartsInto(out []int32, g *tasks.Graph, trained []bool, ab *eval.AgentBatch, states []int32) []int32 {
	out = kernels.Grow(out, len(states))
	kernels.ParallelEach(len(ab.Starts)-1, func(i int) {
		at := int32(0)
		for t := ab.Starts[i]; t < ab.Starts[i+1]; t++ {
			out[t] = at
			if s := states[t]; trained[s] {
				at += int32(g.Offsets[s+1] - g.Offsets[s])
			}
		}
	})
	return out
}

// inParts calls fn on GOMAXPROCS contiguous parts [lo, hi) of [0, n) in
// parallel and returns when all are done; fn must treat its items
// independently.
func inParts(n int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	if w <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range w {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(p*n/w, (p+1)*n/w)
	}
	wg.Wait()
}
