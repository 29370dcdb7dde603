package eval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Walks with hindsight targets. A policy that does not see its target (the
// paper's bigram, a transformer without a prompt) walks the same way
// whatever the target is: the target only decides where the verifier stops
// the walk. So one walk from s0 -> f, continued until every leaf has been
// reached (or the horizon), holds a rollout toward every target: the
// rollout toward x is the walk's prefix up to its first visit of x's leaf,
// and it has exactly the law of a rollout drawn toward x. A batch of n
// walks is then a batch of n W rollouts, W per walk, correlated within a
// walk; an estimate that averages over rollouts (a policy gradient, a mean
// length) stays unbiased. At the paper's size a walk that reaches all 15
// leaves takes about 3.3 hitting times (the coupon collector's 1 + 1/2 +
// ... + 1/15), where 15 rollouts take 15, so the same rollouts cost about
// a fifth of the sampled tokens.

// leafTargets returns, per state, the target (1..W) whose leaf the state
// reaches, or 0.
func leafTargets(g *tasks.Graph) []int32 {
	out := make([]int32, g.NumStates())
	for s := range out {
		for x := 1; x <= g.W(); x++ {
			if g.Hits(s, x) {
				out[s] = int32(x)
			}
		}
	}
	return out
}

// walkReach records a walk's first visit of each leaf: first[x-1] is the
// number of transitions up to and including it, -1 before it; left counts
// the leaves not yet reached.
type walkReach struct {
	first []int
	left  int
}

func (r *walkReach) reset(w int) {
	r.first = resize(r.first, w)
	for i := range r.first {
		r.first[i] = -1
	}
	r.left = w
}

// see records that transition n (1-based) of the walk reached state s.
func (r *walkReach) see(leaf []int32, s, n int) {
	if x := leaf[s]; x > 0 && r.first[x-1] < 0 {
		r.first[x-1] = n
		r.left--
	}
}

// Walks draws n walks of sp's policy from s0 -> f, walk j from the stream
// seeded by (seed, j), each until it has reached every leaf or holds
// horizon transitions, and returns them as n W rollouts with hindsight
// targets (see above): rollout j W + x - 1 is walk j's prefix toward
// target x, hit when the walk reached x's leaf within the horizon. The
// batch is valid until the next call.
func (b *Buffers) Walks(ctx context.Context, sp *Sampler, n, horizon int, seed uint64) (*Batch, error) {
	if n < 1 || horizon < 1 {
		return nil, fmt.Errorf("eval: walks: n %d, horizon %d: want both >= 1", n, horizon)
	}
	g, leaf := sp.g, leafTargets(sp.g)
	err := b.eachWalk(ctx, g.W(), n, seed, func(w *agentWorker) error { return nil }, func(w *agentWorker, rng *rand.Rand) error {
		// Each stretch walks toward a leaf not reached yet, so the walk
		// ends on the last leaf's first visit, and records the leaves it
		// passed on the way.
		rec, wr := sp.alias.start, wyrand(rng.Uint64())
		start := len(w.entries)
		w.reach.reset(g.W())
		for w.reach.left > 0 && len(w.entries)-start < horizon {
			if err := ctx.Err(); err != nil {
				return err
			}
			target := slices.Index(w.reach.first, -1) + 1
			from := len(w.entries)
			w.entries, _ = sp.alias.walk(w.entries, &rec, uint32(target), min(start+horizon, from+checkEvery), &wr)
			for k := from; k < len(w.entries); k++ {
				w.reach.see(leaf, g.Next[w.entries[k]], k-start+1)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("eval: walks: %w", err)
	}
	b.joinWalks(g.W(), n, false)
	return &b.batch.Batch, nil
}

// AgentWalks is Walks for agents made by newAgent (one per worker), which
// must not depend on the target: each walk starts with Start(1). With
// RowAgents, each rollout's rows are a view of its walk's.
func (b *Buffers) AgentWalks(ctx context.Context, g *tasks.Graph, newAgent func() (Agent, error), n, horizon int, seed uint64) (*AgentBatch, error) {
	if n < 1 || horizon < 1 {
		return nil, fmt.Errorf("eval: agent walks: n %d, horizon %d: want both >= 1", n, horizon)
	}
	leaf := leafTargets(g)
	err := b.eachWalk(ctx, g.W(), n, seed, func(w *agentWorker) error {
		a, err := newAgent()
		w.a = a
		return err
	}, func(w *agentWorker, rng *rand.Rand) error {
		a, logp := w.a, &w.logp
		if ra, ok := w.a.(RowAgent); ok {
			a, logp = &rowRecorder{RowAgent: ra, rows: &w.rows}, nil
		}
		rowStart := len(w.rows)
		var err error
		w.entries, err = agentWalk(ctx, g, a, leaf, horizon, rng, w.entries, logp, &w.reach, func(x int) { w.firstRow[x-1] = len(w.rows) - rowStart })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eval: agent walks: %w", err)
	}
	_, rows := b.workers[0].a.(RowAgent)
	b.joinWalks(g.W(), n, !rows)
	return &b.batch, nil
}

// agentWalk runs one walk of agent a from s0 -> f (Start(1): the agent
// must not depend on its target) until it has reached every leaf or holds
// horizon transitions, appending its entries to entries and, when logp is
// not nil, their log-probabilities to *logp. It records the first visit
// of each leaf in r, and calls seen(x), when not nil, as the walk reaches
// leaf x for the first time (before r records it).
func agentWalk(ctx context.Context, g *tasks.Graph, a Agent, leaf []int32, horizon int, rng *rand.Rand, entries []int32, logp *[]float64, r *walkReach, seen func(x int)) ([]int32, error) {
	if err := a.Start(1); err != nil {
		return entries, err
	}
	start := len(entries)
	r.reset(g.W())
	s := 0
	for r.left > 0 && len(entries)-start < horizon {
		if t := len(entries) - start; t%checkEvery == checkEvery-1 && ctx.Err() != nil {
			return entries, ctx.Err()
		}
		var err error
		if entries, s, err = agentStep(g, a, s, rng, entries, logp); err != nil {
			return entries, err
		}
		if x := leaf[s]; seen != nil && x > 0 && r.first[x-1] < 0 {
			seen(int(x))
		}
		r.see(leaf, s, len(entries)-start)
	}
	return entries, nil
}

// AgentWalkMonteCarlo is AgentMonteCarlo on walks with hindsight targets
// (see Walks) for agents that do not depend on their target: n rollouts,
// rounded up to whole walks of W and at least two walks, walk j seeded by
// (seed, j). Each walk's W rollouts are correlated, so the interval is
// taken over walks (clusterCI95); the mean is the one n independent
// rollouts estimate, each target weighed equally. A walk reaches every
// leaf in a few hitting times where its W rollouts would take W, so the
// measurement costs a fraction of the tokens: tokens is what the walks
// drew (MeanLength N counts a token once for each rollout that holds it).
func AgentWalkMonteCarlo(ctx context.Context, g *tasks.Graph, newAgent func() (Agent, error), n, horizon int, seed uint64) (r MCResult, tokens int, err error) {
	if n < 2 {
		return MCResult{}, 0, fmt.Errorf("eval: mc=%d: want at least 2 rollouts", n)
	}
	if horizon < 1 {
		return MCResult{}, 0, fmt.Errorf("eval: agent walks monte carlo: horizon %d: want >= 1", horizon)
	}
	w, leaf := g.W(), leafTargets(g)
	walks := max(2, (n+w-1)/w)
	lens, hits, drawn := make([]int, walks*w), make([]bool, walks*w), make([]int, walks)
	err = eachRollout(ctx, walks, seed, func(int, int) (*agentWorker, error) {
		a, err := newAgent()
		return &agentWorker{a: a}, err
	}, func(j int, wk *agentWorker, rng *rand.Rand) error {
		var err error
		wk.entries, err = agentWalk(ctx, g, wk.a, leaf, horizon, rng, wk.entries[:0], nil, &wk.reach, nil)
		drawn[j] = len(wk.entries)
		for x, f := range wk.reach.first {
			lens[j*w+x], hits[j*w+x] = f, f >= 0
			if f < 0 {
				lens[j*w+x] = len(wk.entries)
			}
		}
		return err
	})
	if err != nil {
		return MCResult{}, 0, fmt.Errorf("eval: agent walks: %w", err)
	}
	r = summarize(lens, hits)
	if r.Hits > 1 {
		r.CI95 = clusterCI95(lens, hits, w, r.HittingTime)
	}
	for _, d := range drawn {
		tokens += d
	}
	return r, tokens, nil
}

// eachWalk runs draw for every walk j < n over the workers, each walk's
// generator seeded by (seed, j), and records, per walk, its worker, where
// its entries and rows end and the first visit of each of the w leaves
// (in the worker's ids, ends, rowEnds, firsts and firstRows).
func (b *Buffers) eachWalk(ctx context.Context, w, n int, seed uint64, start func(w *agentWorker) error, draw func(wk *agentWorker, rng *rand.Rand) error) error {
	return b.each(ctx, n, seed, func(wk *agentWorker) error {
		wk.firsts, wk.firstRows = wk.firsts[:0], wk.firstRows[:0]
		return start(wk)
	}, func(i int, wk *agentWorker, rng *rand.Rand) error {
		wk.firstRow = resize(wk.firstRow, w)
		clear(wk.firstRow)
		err := draw(wk, rng)
		wk.firsts, wk.firstRows = append(wk.firsts, wk.reach.first...), append(wk.firstRows, wk.firstRow...)
		return err
	})
}

// joinWalks writes the batch of the n walks the workers drew (eachWalk):
// rollout j w + x - 1 is walk j's prefix up to its first visit of leaf x,
// or the whole walk, not hit, when it never got there. Entries and
// log-probabilities are copied, rows are views of the workers' buffers.
func (b *Buffers) joinWalks(w, n int, logp bool) {
	ws := b.workers[:min(runtime.GOMAXPROCS(0), n)]
	out := &b.batch
	where := placed(ws, n)
	anyRows := false
	for _, wk := range ws {
		anyRows = anyRows || len(wk.rows) > 0
	}
	m := n * w
	out.Targets, out.Hit, out.Starts = resize(out.Targets, m), resize(out.Hit, m), resize(out.Starts, m+1)
	// lens[r] and rowLens[r]: rollout r's transitions and rows.
	lens, rowLens := make([]int, m), make([]int, m)
	at := 0
	for i := range n {
		wk, j := where(i)
		lo, rlo := wk.span(j)
		for x := range w {
			r := i*w + x
			out.Targets[r] = x + 1
			f := wk.firsts[j*w+x]
			out.Hit[r] = f >= 0
			if f >= 0 {
				lens[r], rowLens[r] = f, wk.firstRows[j*w+x]
			} else {
				lens[r], rowLens[r] = wk.ends[j]-lo, wk.rowEnds[j]-rlo
			}
			out.Starts[r] = at
			at += lens[r]
		}
	}
	out.Starts[m] = at
	out.walk, out.drawn = w, 0
	for _, wk := range ws {
		out.drawn += len(wk.entries)
	}
	out.Entries = resize(out.Entries, at)
	out.LogProbs = nil
	if logp {
		out.LogProbs = resize(b.logp, at)
		b.logp = out.LogProbs
	}
	out.Rows = nil
	if anyRows {
		out.Rows = resize(b.batch.Rows[:cap(b.batch.Rows)], m)
	}
	eachOnCores(n, func(i int) {
		wk, j := where(i)
		lo, rlo := wk.span(j)
		for x := range w {
			r := i*w + x
			copy(out.Entries[out.Starts[r]:out.Starts[r+1]], wk.entries[lo:lo+lens[r]])
			if logp {
				copy(out.LogProbs[out.Starts[r]:out.Starts[r+1]], wk.logp[lo:lo+lens[r]])
			}
			if out.Rows != nil {
				out.Rows[r] = wk.rows[rlo : rlo+rowLens[r] : rlo+rowLens[r]]
			}
		}
	})
}
