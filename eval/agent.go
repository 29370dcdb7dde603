package eval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

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

// AgentBatch is a Batch of agent rollouts with each transition's
// log-probability under the agent when it was sampled.
type AgentBatch struct {
	Batch
	LogProbs []float64 // one per entry of Entries
}

// AgentRollouts draws n rollouts of agents made by newAgent (one per
// worker), rollout i with a uniform target and its own random stream
// seeded by (seed, i), so the batch does not depend on the number of
// cores. A rollout stops at its target or after horizon transitions
// (horizon must be >= 1: an agent may never reach its target).
func AgentRollouts(ctx context.Context, g *tasks.Graph, newAgent func() (Agent, error), n, horizon int, seed uint64) (*AgentBatch, error) {
	if n < 1 || horizon < 1 {
		return nil, fmt.Errorf("eval: agent rollouts: n %d, horizon %d: want both >= 1", n, horizon)
	}
	entries, logp := make([][]int32, n), make([][]float64, n)
	b := &AgentBatch{Batch: Batch{Targets: make([]int, n), Hit: make([]bool, n)}}
	err := eachRollout(ctx, n, seed, newAgent, func(i int, a Agent, rng *rand.Rand) error {
		b.Targets[i] = 1 + rng.IntN(g.W())
		var err error
		entries[i], logp[i], b.Hit[i], err = agentRollout(ctx, g, a, b.Targets[i], horizon, rng, nil, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eval: agent: %w", err)
	}
	b.Entries, b.Starts = concat(entries)
	b.LogProbs, _ = concat(logp)
	return b, nil
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
	err := eachRollout(ctx, n, seed, newAgent, func(i int, a Agent, rng *rand.Rand) error {
		entries, _, hit, err := agentRollout(ctx, g, a, 1+rng.IntN(g.W()), horizon, rng, nil, nil)
		lens[i], hits[i] = len(entries), hit
		return err
	})
	if err != nil {
		return MCResult{}, fmt.Errorf("eval: agent: %w", err)
	}
	return summarize(lens, hits), nil
}

// agentRollout runs one rollout of a toward target, appending the entries
// taken and their log-probabilities to the buffers.
func agentRollout(ctx context.Context, g *tasks.Graph, a Agent, target, horizon int, rng *rand.Rand, entries []int32, logp []float64) ([]int32, []float64, bool, error) {
	if err := a.Start(target); err != nil {
		return entries, logp, false, err
	}
	s := 0
	for len(entries) < horizon {
		if len(entries)%checkEvery == checkEvery-1 && ctx.Err() != nil {
			return entries, logp, false, ctx.Err()
		}
		e, lp, err := a.Next(s, rng)
		if err != nil {
			return entries, logp, false, err
		}
		if e < g.Offsets[s] || e >= g.Offsets[s+1] {
			return entries, logp, false, fmt.Errorf("entry %d is not a transition from %s", e, g.Name(s))
		}
		if math.IsNaN(lp) || lp > 0 {
			return entries, logp, false, fmt.Errorf("log-probability %v of %s -> %s: want <= 0", lp, g.Name(s), g.Name(g.Next[e]))
		}
		entries, logp = append(entries, int32(e)), append(logp, lp)
		s = g.Next[e]
		if g.Hits(s, target) {
			return entries, logp, true, nil
		}
	}
	return entries, logp, false, nil
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
