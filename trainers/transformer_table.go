package trainers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
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
// sampled token, as the bigram does, in a graph of its own (nn.TableLoss)
// whose logits are B plus the correction the sampler computed for each
// token (constants), and the windows graph trains every other parameter.
//
// The table's update in each minibatch of each epoch is the policy
// gradient sum_t A_t grad log pi_t(a_t) / n at the current B, the
// correction held at its sampling-time value: PPO's surrogate at ratio 1,
// without its clipping (rarely active at the table's small rate; the
// windows graph keeps PPO's clipped surrogate for the rest).

// rowAgent is an agent that also reports the row of log-probabilities it
// drew from (eval.RowAgent): the table pass needs every token's row.
type rowAgent struct {
	*agent
	row []float64
}

func (a *rowAgent) Next(s int, rng *rand.Rand) (int, float64, error) {
	g := a.l.t.g
	e, lp, err := a.agent.Next(s, rng)
	if err != nil {
		return e, lp, err
	}
	a.row = a.row[:0]
	if a.l.t.trained[s] {
		a.row = append(a.row, a.agent.logp...)
	} else {
		for _, p := range a.l.ref[g.Offsets[s]:g.Offsets[s+1]] {
			a.row = append(a.row, math.Log(p))
		}
	}
	return e, lp, err
}

// LastRow is the row of the last transition.
func (a *rowAgent) LastRow() []float64 { return a.row }

// newRowAgent makes row-reporting agents on one snapshot (see newAgent).
func (l *transformer) newRowAgent() func() (eval.Agent, error) {
	snap := l.tr.Snapshot()
	return func() (eval.Agent, error) { return &rowAgent{agent: &agent{l: l, s: snap.Sampler()}}, nil }
}

// tableChunk is the table pass's tokens per fill of its graph.
const tableChunk = 1 << 15

// table is the table pass's graph: a TableLoss over B's values in a graph
// of its own, built once, and its Step on the table's solver group.
type table struct {
	loss *nn.TableLoss
	step *nn.Step
	// scratch for one fill
	entries, rows, taken []int
	offsets, w           []float64
}

// newTable builds the table pass's graph for the learner's graph: the
// slots of a fill are the largest row of a trained state.
func (l *transformer) newTable() (*table, error) {
	g := l.t.g
	slots := 1
	for s := range g.NumStates() {
		if l.t.trained[s] {
			slots = max(slots, g.Offsets[s+1]-g.Offsets[s])
		}
	}
	ls := l.tr.Learnables()
	b := ls[len(ls)-1] // B, last
	gr := G.NewGraph()
	tb := G.NewVector(gr, G.Float64, G.WithShape(b.Shape()[0]), G.WithName("B"), G.WithValue(b.Value())) // shares B's values
	loss, err := nn.NewTableLoss(tb, tableChunk, slots)
	if err != nil {
		return nil, err
	}
	step, err := nn.NewStep(loss.Cost, G.Nodes{tb}, l.solv.(*nn.GroupSolver).Group(1))
	if err != nil {
		return nil, err
	}
	return &table{loss: loss, step: step}, nil
}

// tableTokens are the tokens of one minibatch the table pass trains on:
// every token at a trained state, or when they are more than the table's
// budget per minibatch (TableTokens / minibatches) a uniform random subset
// of that many, each weighted by the inverse sampling rate (scale), so
// that the expected gradient is the full one; seeded by the step and the
// minibatch, so a resumed run draws the same subsets.
type tableTokens struct {
	tokens []int   // batch indices, in batch order
	scale  float64 // each token's weight: the inverse sampling rate
}

func (l *transformer) tableTokensOf(ab *eval.AgentBatch, states []int32, rs []int, mb, m int) tableTokens {
	var toks []int
	for _, i := range rs {
		for t := ab.Starts[i]; t < ab.Starts[i+1]; t++ {
			if l.t.trained[states[t]] {
				toks = append(toks, t)
			}
		}
	}
	out := tableTokens{tokens: toks, scale: 1}
	if k := l.opts.TableTokens / m; l.opts.TableTokens > 0 && len(toks) > k {
		rng := rand.New(rand.NewPCG(l.t.stepSeed()^0x13198a2e03707344, uint64(mb)))
		pick := rng.Perm(len(toks))[:k]
		slices.Sort(pick)
		for j, p := range pick {
			pick[j] = toks[p]
		}
		out = tableTokens{tokens: pick, scale: float64(len(toks)) / float64(k)}
	}
	return out
}

// tableStep takes one step of the table pass on a minibatch's tokens: the
// weighted log-likelihood sum_t w_t log pi(token t), w_t = -A_t scale / n,
// at B's current values with each token's correction (its sampled row
// minus B at sampling, b0; rowStart[t] is where token t's row starts in
// ab.Rows) held constant, summed over fills of the table's graph and
// applied by the table's solver.
func (l *transformer) tableStep(tb *table, ab *eval.AgentBatch, states []int32, rowStart []int, b0 []float64, in tableTokens, adv []float64, n float64) error {
	if len(in.tokens) == 0 {
		return nil
	}
	g, t := l.t.g, l.t
	for c := 0; c < len(in.tokens); c += tableChunk {
		tb.entries, tb.offsets, tb.rows = tb.entries[:0], tb.offsets[:0], append(tb.rows[:0], 0)
		tb.taken, tb.w = tb.taken[:0], tb.w[:0]
		for _, k := range in.tokens[c:min(c+tableChunk, len(in.tokens))] {
			s := int(states[k])
			lo, hi := g.Offsets[s], g.Offsets[s+1]
			row := ab.Rows[rowStart[k]:rowStart[k+1]]
			for e := lo; e < hi; e++ {
				tb.entries = append(tb.entries, e)
				tb.offsets = append(tb.offsets, row[e-lo]-b0[e])
			}
			tb.rows = append(tb.rows, len(tb.entries))
			tb.taken = append(tb.taken, int(ab.Entries[k])-lo)
			tb.w = append(tb.w, -adv[k]*in.scale/n)
		}
		if err := tb.loss.Fill(tb.entries, tb.rows, tb.taken, tb.offsets, tb.w); err != nil {
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

// rowStarts is where each token's row starts in a batch's Rows: token t's
// row holds as many values as its state has valid next states.
func rowStarts(g *tasks.Graph, states []int32) []int {
	out := make([]int, len(states)+1)
	for t, s := range states {
		out[t+1] = out[t] + g.Offsets[s+1] - g.Offsets[s]
	}
	return out
}
