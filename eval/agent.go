package eval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Agent is a policy sampled one transition at a time that may depend on
// the whole rollout so far, and on the target if it is told it (a model
// with a target prompt): the transformer is one. It is the Monte Carlo
// counterpart of a Markov policy's transition table, for policies the
// exact analysis cannot handle. An Agent is used by one goroutine.
type Agent interface {
	// Start begins a rollout from s0 -> f toward target (1..W).
	Start(target int) error
	// Next returns the CSR entry of the transition taken from state s, the
	// rollout's current state, and its log-probability under the agent.
	Next(s int, rng *rand.Rand) (entry int, logp float64, err error)
}

// RowAgent is an Agent that also reports the log-probabilities of the
// whole row its last transition was drawn from: one per valid next state
// of the state it left, in CSR order, or none where its user needs no row.
// The slice is read before the next call to Next.
type RowAgent interface {
	Agent
	LastRow() []float64
}

// AgentBatch is a Batch of agent rollouts with each transition's
// log-probability under the agent when it was sampled, or, when the agents
// are RowAgents, the log-probabilities of every transition's whole row:
// Rows[i] holds rollout i's back to back, each transition's taking as many
// values as LastRow reported for it, and a transition's log-probability is
// its row's value at its entry (RowLogProb). Rows[i] is a view of the
// worker's buffer that drew it, not a copy: joining them into one slice
// cost 1.4 s of a 5 s transformer step at the paper's size. (The
// log-probabilities kept beside the rows, in the workers' buffers and
// again in the batch, were 16 bytes a token of a paper-size transformer
// run.)
type AgentBatch struct {
	Batch
	LogProbs []float64   // one per entry of Entries; nil when the agents are RowAgents
	Rows     [][]float64 // nil unless the agents are RowAgents
}

// RowLogProb is the log-probability of token t of rollout i whose row
// starts at rowStart in Rows[i], drawn from state s (Rows' values for it
// are the row of s's valid next states, in CSR order).
func (b *AgentBatch) RowLogProb(g *tasks.Graph, i, t, rowStart, s int) float64 {
	return b.Rows[i][rowStart+int(b.Entries[t])-g.Offsets[s]]
}

// AgentRollouts draws n rollouts of agents made by newAgent (one per
// worker), rollout i with a uniform target and its own random stream
// seeded by (seed, i), so the batch does not depend on the number of
// cores. A rollout stops at its target or after horizon transitions
// (horizon must be >= 1: an agent may never reach its target).
func AgentRollouts(ctx context.Context, g *tasks.Graph, newAgent func() (Agent, error), n, horizon int, seed uint64) (*AgentBatch, error) {
	return new(Buffers).AgentRollouts(ctx, g, newAgent, n, horizon, seed)
}

// Buffers keeps the memory of agent rollouts from one batch to the next: a
// trainer drawing millions of transitions per step reuses it instead of
// growing fresh slices each time (at the paper's size growing and copying
// them took a fifth of a transformer's step). The zero value is ready.
type Buffers struct {
	workers []*agentWorker
	lanes   []*agentWorker // a Markov policy's rollouts: lanes per worker (rolloutsLanes)
	batch   AgentBatch
	logp    []float64 // the batch's log-probabilities' memory
}

// agentWorker is one worker's agent and the transitions of its rollouts,
// back to back.
type agentWorker struct {
	a       Agent
	entries []int32
	logp    []float64
	rows    []float64
	ids     []int // the rollouts it ran, in order
	ends    []int // where each of them ends in entries
	rowEnds []int // and in rows
	// walks (walks.go): the current walk's first visits of each leaf, in
	// transitions and rows, and every walk's, w per walk
	reach             walkReach
	firstRow          []int
	firsts, firstRows []int
}

// AgentRollouts is the package's AgentRollouts into b's memory: the batch
// returned is valid until the next call.
func (b *Buffers) AgentRollouts(ctx context.Context, g *tasks.Graph, newAgent func() (Agent, error), n, horizon int, seed uint64) (*AgentBatch, error) {
	return b.agentRollouts(ctx, g, newAgent, n, nil, horizon, seed)
}

// AgentRolloutsTo is AgentRollouts with rollout i toward targets[i] (1..W)
// instead of a uniform target (see Sampler.RolloutsTo).
func (b *Buffers) AgentRolloutsTo(ctx context.Context, g *tasks.Graph, newAgent func() (Agent, error), targets []int, horizon int, seed uint64) (*AgentBatch, error) {
	if err := checkTargets(targets, g.W()); err != nil {
		return nil, err
	}
	return b.agentRollouts(ctx, g, newAgent, len(targets), targets, horizon, seed)
}

// agentRollouts draws n rollouts toward targets (nil: uniform targets).
func (b *Buffers) agentRollouts(ctx context.Context, g *tasks.Graph, newAgent func() (Agent, error), n int, targets []int, horizon int, seed uint64) (*AgentBatch, error) {
	if n < 1 || horizon < 1 {
		return nil, fmt.Errorf("eval: agent rollouts: n %d, horizon %d: want both >= 1", n, horizon)
	}
	out := &b.batch
	out.walk, out.drawn = 0, 0
	err := b.each(ctx, n, seed, func(w *agentWorker) error {
		a, err := newAgent()
		w.a = a
		return err
	}, func(i int, w *agentWorker, rng *rand.Rand) error {
		out.Targets[i] = target(targets, i, g.W(), rng)
		var err error
		if ra, ok := w.a.(RowAgent); ok {
			rec := &rowRecorder{RowAgent: ra, rows: &w.rows}
			w.entries, out.Hit[i], err = agentRollout(ctx, g, rec, out.Targets[i], horizon, rng, w.entries, nil)
		} else {
			w.entries, out.Hit[i], err = agentRollout(ctx, g, w.a, out.Targets[i], horizon, rng, w.entries, &w.logp)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eval: agent: %w", err)
	}
	ws := b.workers[:min(runtime.GOMAXPROCS(0), n)]
	_, rows := ws[0].a.(RowAgent)
	b.join(ws, n, !rows)
	return out, nil
}

// Rollouts is sp.Rollouts (sp.RolloutsTo when targets is not nil) into
// b's memory: the batch returned is valid until the next call, and a
// trainer that samples every step touches no fresh memory for it.
func (b *Buffers) Rollouts(ctx context.Context, sp *Sampler, n int, targets []int, horizon int, seed uint64) (*Batch, error) {
	if targets != nil {
		if err := checkTargets(targets, sp.g.W()); err != nil {
			return nil, err
		}
		n = len(targets)
	}
	out := &b.batch
	out.walk, out.drawn = 0, 0
	out.Targets, out.Hit = resize(out.Targets, n), resize(out.Hit, n)
	workers := min(runtime.GOMAXPROCS(0), (n+lanes-1)/lanes)
	for len(b.lanes) < workers*lanes {
		b.lanes = append(b.lanes, &agentWorker{})
	}
	ls := b.lanes[:workers*lanes]
	for _, w := range ls {
		w.entries, w.ids, w.ends, w.rowEnds = w.entries[:0], w.ids[:0], w.ends[:0], w.rowEnds[:0]
	}
	var next atomic.Int64 // the next rollout to take
	take := func() int {
		if i := int(next.Add(1) - 1); i < n {
			return i
		}
		return -1
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pcg rand.PCG
			rng := rand.New(&pcg)
			errs[k] = sp.alias.rolloutsLanes(ctx, ls[k*lanes:(k+1)*lanes], horizon, take, func(i int) (int, wyrand) {
				pcg.Seed(seed, uint64(i)) // rollout i's own stream, as eachRollout seeds it
				out.Targets[i] = target(targets, i, sp.g.W(), rng)
				return out.Targets[i], wyrand(rng.Uint64())
			}, func(i int, w *agentWorker, hit bool) {
				out.Hit[i] = hit
				w.ids, w.ends, w.rowEnds = append(w.ids, i), append(w.ends, len(w.entries)), append(w.rowEnds, 0)
			})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	b.join(ls, n, false)
	return &out.Batch, nil
}

// each runs draw for every rollout i < n over the workers (eachRollout),
// each worker's buffers emptied and set up by start first, and records
// which worker ran which rollout and where its entries end.
func (b *Buffers) each(ctx context.Context, n int, seed uint64, start func(w *agentWorker) error, draw func(i int, w *agentWorker, rng *rand.Rand) error) error {
	out := &b.batch
	out.Targets, out.Hit = resize(out.Targets, n), resize(out.Hit, n)
	workers := min(runtime.GOMAXPROCS(0), n) // eachRollout's
	for len(b.workers) < workers {
		b.workers = append(b.workers, &agentWorker{})
	}
	return eachRollout(ctx, n, seed, func(k, m int) (*agentWorker, error) {
		if m != workers {
			return nil, fmt.Errorf("eval: rollouts: %d workers, want %d", m, workers)
		}
		w := b.workers[k]
		w.entries, w.logp, w.rows, w.ids, w.ends, w.rowEnds = w.entries[:0], w.logp[:0], w.rows[:0], w.ids[:0], w.ends[:0], w.rowEnds[:0]
		return w, start(w)
	}, func(i int, w *agentWorker, rng *rand.Rand) error {
		err := draw(i, w, rng)
		w.ids, w.ends, w.rowEnds = append(w.ids, i), append(w.ends, len(w.entries)), append(w.rowEnds, len(w.rows))
		return err
	})
}

// join copies the rollouts of the workers ws into the batch in rollout order, with
// their log-probabilities when logp is set; the rows stay views of the
// workers' buffers.
func (b *Buffers) join(ws []*agentWorker, n int, logp bool) {
	out := &b.batch
	total, totalRows := 0, 0
	for _, w := range ws {
		total, totalRows = total+len(w.entries), totalRows+len(w.rows)
	}
	out.Entries, out.Starts = resize(out.Entries, total), resize(out.Starts, n+1)
	out.LogProbs = nil
	if logp {
		out.LogProbs = resize(b.logp, total)
		b.logp = out.LogProbs
	}
	out.Rows = nil
	if totalRows > 0 {
		out.Rows = resize(b.batch.Rows[:cap(b.batch.Rows)], n)
	}
	where := placed(ws, n)
	at := 0
	for i := range n {
		w, j := where(i)
		lo, _ := w.span(j)
		out.Starts[i] = at
		at += w.ends[j] - lo
	}
	out.Starts[n] = at
	// The copies on every core, each taking the next rollout (a serial copy
	// was a fifteenth of a paper-size bigram PPO step).
	eachOnCores(n, func(i int) {
		w, j := where(i)
		lo, rlo := w.span(j)
		hi, rhi := w.ends[j], w.rowEnds[j]
		copy(out.Entries[out.Starts[i]:], w.entries[lo:hi])
		if logp {
			copy(out.LogProbs[out.Starts[i]:], w.logp[lo:hi])
		}
		if out.Rows != nil {
			out.Rows[i] = w.rows[rlo:rhi:rhi]
		}
	})
}

// placed returns where the workers ws put each of the n runs (rollouts or
// walks) they drew: run i is worker w's j-th.
func placed(ws []*agentWorker, n int) func(i int) (w *agentWorker, j int) {
	type seg struct{ w, j int }
	where := make([]seg, n)
	for k, w := range ws {
		for j, i := range w.ids {
			where[i] = seg{k, j}
		}
	}
	return func(i int) (*agentWorker, int) { return ws[where[i].w], where[i].j }
}

// span is where the worker's j-th run starts in its entries and its rows.
func (w *agentWorker) span(j int) (lo, rlo int) {
	if j > 0 {
		return w.ends[j-1], w.rowEnds[j-1]
	}
	return 0, 0
}

// eachOnCores runs f(i) for every i < n on every core, each taking the
// next i.
func eachOnCores(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// resize returns x with length n, reusing its memory when it is large
// enough.
func resize[T any](x []T, n int) []T {
	if cap(x) >= n {
		return x[:n]
	}
	return make([]T, n)
}

// AgentMonteCarlo runs n seeded agent rollouts with uniform targets and
// horizon >= 1, as Sampler.MonteCarlo does for a Markov policy.
func AgentMonteCarlo(ctx context.Context, g *tasks.Graph, newAgent func() (Agent, error), n, horizon int, seed uint64) (MCResult, error) {
	if n < 2 {
		return MCResult{}, fmt.Errorf("eval: mc=%d: want at least 2 rollouts", n)
	}
	if horizon < 1 {
		return MCResult{}, fmt.Errorf("eval: agent monte carlo: horizon %d: want >= 1", horizon)
	}
	lens, hits := make([]int, n), make([]bool, n)
	err := eachRollout(ctx, n, seed, func(int, int) (*agentWorker, error) {
		a, err := newAgent()
		return &agentWorker{a: a}, err
	}, func(i int, w *agentWorker, rng *rand.Rand) error {
		var err error
		w.entries, hits[i], err = agentRollout(ctx, g, w.a, 1+rng.IntN(g.W()), horizon, rng, w.entries[:0], nil)
		lens[i] = len(w.entries)
		return err
	})
	if err != nil {
		return MCResult{}, fmt.Errorf("eval: agent: %w", err)
	}
	return summarize(lens, hits), nil
}

// Rollout runs one rollout of agent a toward target with at most horizon
// >= 1 transitions: the CSR entries taken, their log-probabilities under
// the agent, and whether it hit.
func Rollout(ctx context.Context, g *tasks.Graph, a Agent, target, horizon int, rng *rand.Rand) ([]int32, []float64, bool, error) {
	if target < 1 || target > g.W() || horizon < 1 {
		return nil, nil, false, fmt.Errorf("eval: rollout: target %d, horizon %d: want a target in [1, %d] and a horizon >= 1", target, horizon, g.W())
	}
	var logp []float64
	entries, hit, err := agentRollout(ctx, g, a, target, horizon, rng, nil, &logp)
	return entries, logp, hit, err
}

// rowRecorder is a RowAgent whose Next appends the row it drew from.
type rowRecorder struct {
	RowAgent
	rows *[]float64
}

func (r *rowRecorder) Next(s int, rng *rand.Rand) (int, float64, error) {
	e, lp, err := r.RowAgent.Next(s, rng)
	if err == nil {
		*r.rows = append(*r.rows, r.LastRow()...)
	}
	return e, lp, err
}

// agentRollout runs one rollout of a toward target, appending the entries
// taken to entries and their log-probabilities to *logp (which may hold
// earlier rollouts: the horizon counts this one's transitions); with logp
// nil it keeps no log-probabilities (a RowAgent's are in its rows, a Monte
// Carlo estimate needs none) but checks them still.
func agentRollout(ctx context.Context, g *tasks.Graph, a Agent, target, horizon int, rng *rand.Rand, entries []int32, logp *[]float64) ([]int32, bool, error) {
	if err := a.Start(target); err != nil {
		return entries, false, err
	}
	s, start := 0, len(entries)
	for len(entries)-start < horizon {
		if len(entries)%checkEvery == checkEvery-1 && ctx.Err() != nil {
			return entries, false, ctx.Err()
		}
		var err error
		if entries, s, err = agentStep(g, a, s, rng, entries, logp); err != nil {
			return entries, false, err
		}
		if g.Hits(s, target) {
			return entries, true, nil
		}
	}
	return entries, false, nil
}

// agentStep draws agent a's next transition from state s, checks it (a
// transition from s, a log-probability <= 0), appends its entry to
// entries and, when logp is not nil, its log-probability to *logp, and
// returns the state it reaches.
func agentStep(g *tasks.Graph, a Agent, s int, rng *rand.Rand, entries []int32, logp *[]float64) ([]int32, int, error) {
	e, lp, err := a.Next(s, rng)
	if err != nil {
		return entries, s, err
	}
	if e < g.Offsets[s] || e >= g.Offsets[s+1] {
		return entries, s, fmt.Errorf("entry %d is not a transition from %s", e, g.Name(s))
	}
	if math.IsNaN(lp) || lp > 0 {
		return entries, s, fmt.Errorf("log-probability %v of %s -> %s: want <= 0", lp, g.Name(s), g.Name(g.Next[e]))
	}
	if logp != nil {
		*logp = append(*logp, lp)
	}
	return append(entries, int32(e)), g.Next[e], nil
}

// MarkovAgent samples a Markov policy (a transition table in CSR order) as
// an Agent: for tests and for comparing agents with the exact analysis.
type MarkovAgent struct {
	g     *tasks.Graph
	probs []float64
}

// NewMarkovAgent checks the policy and returns its agent.
func NewMarkovAgent(g *tasks.Graph, probs []float64) (*MarkovAgent, error) {
	if err := CheckPolicy(g, probs); err != nil {
		return nil, err
	}
	return &MarkovAgent{g: g, probs: probs}, nil
}

// Start does nothing: the policy does not depend on the target.
func (m *MarkovAgent) Start(int) error { return nil }

// Next draws from state s's row.
func (m *MarkovAgent) Next(s int, rng *rand.Rand) (int, float64, error) {
	lo := m.g.Offsets[s]
	e := lo + Draw(m.probs[lo:m.g.Offsets[s+1]], rng.Float64())
	return e, math.Log(m.probs[e]), nil
}

// Draw returns the index in row (a row of probabilities summing to 1) of
// the entry drawn with the uniform variate u in [0, 1): the first whose
// cumulative probability exceeds u. It never returns an entry of
// probability 0, even for u = 0, and rounding (u at or past the row's
// rounded sum) falls back to the last entry with mass. It is the one draw
// of the project: the Markov sampler, the agents and the transformer's
// sampling all use it.
func Draw(row []float64, u float64) int {
	last := 0
	for i, p := range row {
		if p == 0 {
			continue
		}
		if u < p {
			return i
		}
		u -= p
		last = i
	}
	return last
}
