package trainers

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// The table pass. With the table initialisation the transformer's logit of
// next token a after a prefix ending in x is B[x -> a] + LN(h) . U[a]: the
// bigram B plus a correction carried by the attention. The windows graph
// trains on a subsample of a batch's tokens (TrainTokens): at the paper's
// size one in a hundred, and B's gradient from so few tokens is noise that
// Adam turns into full steps, which walks the policy away from its start
// (the hitting time rose from 52k to 77k in 60 PPO steps where the bigram,
// learning from every token, fell). So in sampled RLVR B learns from every
// sampled token, as the bigram does, in a graph of its own (nn.TableBatch)
// whose logits are B plus the correction the sampler computed for each
// token (constants), and the windows graph trains every other parameter.
//
// The table's update in each minibatch of each epoch is the policy
// gradient sum_t A_t grad log pi_t(a_t) / n at the current B, the
// correction held at its sampling-time value: PPO's surrogate at ratio 1,
// without its clipping (rarely active at the table's small rate; the
// windows graph keeps PPO's clipped surrogate for the rest).

// tableChunk is the table pass's tokens per fill of its graph.
const tableChunk = 1 << 15

// table is the table pass's graph: a TableBatch over B's values in a
// graph of its own, built once, the loss sum_t w_t log pi_t(a_t) over its
// tokens, and its Step on the table's solver group.
type table struct {
	batch *nn.TableBatch
	w     vec // (Capacity) the tokens' weights
	step  *nn.Step
	// each minibatch's tokens (tableTokensOf), reused from update to
	// update: at the paper's size they hold millions of tokens
	mini []tableTokens
}

// newTable builds the table pass's graph.
func (l *transformer) newTable() (*table, error) {
	ls := l.tr.Learnables()
	b := ls[len(ls)-1] // B, last
	gr := G.NewGraph()
	tb := G.NewVector(gr, G.Float64, G.WithShape(b.Shape()[0]), G.WithName("B"), G.WithValue(b.Value())) // shares B's values
	width := 0
	for s, ok := range l.t.trained {
		if ok {
			width = max(width, len(l.t.g.Row(s)))
		}
	}
	batch, err := nn.NewTableBatch(tb, tableChunk, width, nn.Fused)
	if err != nil {
		return nil, err
	}
	w := newVec(gr, tableChunk, "table_weights")
	cost, err := G.Mul(w.node, batch.Taken()) // (N) . (N) -> ()
	if err != nil {
		return nil, err
	}
	step, err := nn.NewStep(cost, G.Nodes{tb}, l.solv.(*solvers.Groups).Solver(1))
	if err != nil {
		return nil, err
	}
	return &table{batch: batch, w: w, step: step}, nil
}

// tableTokens are the tokens of one minibatch the table pass trains on:
// every token at a trained state, or when they are more than the table's
// budget per minibatch (TableTokens / minibatches) a uniform random subset
// of that many, each weighted by the inverse sampling rate (scale), so
// that the expected gradient is the full one; seeded by the step and the
// minibatch, so a resumed run draws the same subsets.
type tableTokens struct {
	tokens   []int   // batch indices, in batch order
	rollouts []int32 // each token's rollout
	scale    float64 // each token's weight: the inverse sampling rate
}

func (l *transformer) tableTokensOf(ab *eval.AgentBatch, states []int32, rs []int, mb, m int) tableTokens {
	tb := l.table
	if len(tb.mini) <= mb {
		tb.mini = append(tb.mini, make([]tableTokens, mb+1-len(tb.mini))...)
	}
	out := tableTokens{tokens: tb.mini[mb].tokens[:0], rollouts: tb.mini[mb].rollouts[:0]}
	for _, i := range rs {
		for t := ab.Starts[i]; t < ab.Starts[i+1]; t++ {
			if l.t.trained[states[t]] {
				out.tokens, out.rollouts = append(out.tokens, t), append(out.rollouts, int32(i))
			}
		}
	}
	tb.mini[mb] = out // valid until the next update's
	out.scale = 1
	if k := l.opts.TableTokens / m; l.opts.TableTokens > 0 && len(out.tokens) > k {
		rng := rand.New(rand.NewPCG(l.t.stepSeed()^0x13198a2e03707344, uint64(mb)))
		pick := rng.Perm(len(out.tokens))[:k]
		slices.Sort(pick)
		sub := tableTokens{tokens: make([]int, k), rollouts: make([]int32, k), scale: float64(len(out.tokens)) / float64(k)}
		for j, p := range pick {
			sub.tokens[j], sub.rollouts[j] = out.tokens[p], out.rollouts[p]
		}
		out = sub
	}
	return out
}

// tableStep takes one step of the table pass on a minibatch's tokens: the
// weighted log-likelihood sum_t w_t log pi(token t), w_t = -A_t scale / div_t,
// at B's current values with each token's correction (its sampled row
// minus B at sampling, b0; rowStart[t] is where token t's row starts in
// its rollout's ab.Rows) held constant, summed over fills of the table's graph and
// applied by the table's solver.
func (l *transformer) tableStep(tb *table, ab *eval.AgentBatch, states []int32, rowStart []int, b0 []float64, in tableTokens, adv, div []float64) error {
	if len(in.tokens) == 0 {
		return nil
	}
	g, t := l.t.g, l.t
	for c := 0; c < len(in.tokens); c += tableChunk {
		toks, rolls := in.tokens[c:min(c+tableChunk, len(in.tokens))], in.rollouts[c:]
		w := tb.w.data()
		clear(w)
		inParts(len(toks), func(j0, j1 int) { // the rows are read from all over the batch: on every core
			for j := j0; j < j1; j++ {
				k := toks[j]
				s := int(states[k])
				lo, hi := g.Offsets[s], g.Offsets[s+1]
				row := ab.Rows[rolls[j]][rowStart[k]:][:hi-lo]
				off := tb.batch.Set(j, lo, hi-lo, int(ab.Entries[k])-lo)
				for e := lo; e < hi; e++ {
					off[e-lo] = row[e-lo] - b0[e]
				}
				w[j] = -adv[k] * in.scale / div[k]
			}
		})
		if err := tb.batch.SetLen(len(toks)); err != nil {
			return fmt.Errorf("trainers: step %d: table: %w", t.done, err)
		}
		if err := G.Let(tb.w.node, tb.w.val); err != nil {
			return fmt.Errorf("trainers: step %d: table: %w", t.done, err)
		}
		if _, err := tb.step.Accumulate(); err != nil { // refuses NaN losses and gradients
			return fmt.Errorf("trainers: step %d: table: %w", t.done, err)
		}
	}
	if err := tb.step.Apply(); err != nil {
		return fmt.Errorf("trainers: step %d: table: %w", t.done, err)
	}
	return nil
}

// rowStarts is where each token's row starts in its rollout's Rows: token
// t's row holds as many values as its state has valid next states when the
// state is trained, none otherwise (rowAgent).
func rowStarts(g *tasks.Graph, trained []bool, ab *eval.AgentBatch, states []int32) []int {
	out := make([]int, len(states))
	for i := range len(ab.Starts) - 1 {
		at := 0
		for t := ab.Starts[i]; t < ab.Starts[i+1]; t++ {
			out[t] = at
			if s := states[t]; trained[s] {
				at += g.Offsets[s+1] - g.Offsets[s]
			}
		}
	}
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
