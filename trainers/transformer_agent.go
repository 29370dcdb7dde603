package trainers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
)

// agent samples the transformer as an eval.Agent with a KV-cache sampler
// (no graph per token). The rows the paper fixes (fork-incoming: uniform,
// leaf-incoming: bounce) are drawn from the starting bigram, as the
// bigram's frozen rows are.
type agent struct {
	l    *transformer
	s    *nn.TransformerSampler
	logp []float64 // the last Push's row (the sampler's buffer)
	last int       // the state the last transition left
}

// newAgent makes agents sampling the transformer's current parameters, one
// per worker of eval's parallel rollouts, all reading one snapshot of the
// sampling tables (computed once here).
func (l *transformer) newAgent() func() (eval.Agent, error) {
	snap := l.tr.Snapshot()
	return func() (eval.Agent, error) { return &agent{l: l, s: snap.Sampler()}, nil }
}

// Start empties the sampler's cache and, with a prompt, caches the target.
func (a *agent) Start(target int) error { return a.s.ResetAt(0, a.l.prompt(target)) }

func (a *agent) Next(s int, rng *rand.Rand) (int, float64, error) {
	g := a.l.t.g
	logp, err := a.s.Push(s)
	if err != nil {
		return 0, 0, err
	}
	a.logp, a.last = logp, s
	lo, u := g.Offsets[s], rng.Float64()
	if !a.l.t.trained[s] {
		e := lo + eval.Draw(a.l.ref[lo:g.Offsets[s+1]], u)
		return e, math.Log(a.l.ref[e]), nil
	}
	j := eval.Draw(a.s.Probs(), u)
	return lo + j, logp[j], nil
}

// rollouts samples the transformer into the learner's buffers: the batch
// is valid until the next call. A call at the step of the previous one,
// with the same arguments and parameters, returns its batch again without
// sampling: a measurement that drew the step's batch (measure) leaves it
// to the step's update.
func (l *transformer) rollouts(ctx context.Context, n, horizon int, seed uint64, targets []int) (*eval.AgentBatch, error) {
	return l.draw(ctx, drawKey{step: l.t.done, n: n, horizon: horizon, seed: seed, grouped: targets != nil}, targets)
}

// walks samples the transformer's walks with hindsight targets into the
// learner's buffers, as rollouts does its rollouts.
func (l *transformer) walks(ctx context.Context, n, horizon int, seed uint64) (*eval.AgentBatch, error) {
	return l.draw(ctx, drawKey{step: l.t.done, n: n, horizon: horizon, seed: seed, walks: true}, nil)
}

// draw samples the batch key names (rollouts toward targets, or walks).
func (l *transformer) draw(ctx context.Context, key drawKey, targets []int) (*eval.AgentBatch, error) {
	n, horizon, seed := key.n, key.horizon, key.seed
	if l.drawn.batch != nil && l.drawn.same(key) {
		return l.drawn.batch, nil
	}
	l.drawn = drawKey{}
	if err := l.t.smp.resolveBatch(nil); err != nil { // the latest batch's entropy and ratios read the buffers this overwrites
		return nil, err
	}
	l.draws++ // and their row starts are the next batch's (rowStarts)
	agents := l.newAgent()
	if l.table != nil {
		agents = l.newRowAgent()
	}
	var b *eval.AgentBatch
	var err error
	start := time.Now()
	defer func() { l.sampleTime += time.Since(start) }()
	switch {
	case key.walks:
		b, err = l.buf.AgentWalks(ctx, l.t.g, agents, n, horizon, seed)
	case targets != nil:
		b, err = l.buf.AgentRolloutsTo(ctx, l.t.g, agents, targets, horizon, seed)
	default:
		b, err = l.buf.AgentRollouts(ctx, l.t.g, agents, n, horizon, seed)
	}
	if err == nil {
		err = checkIndices(b)
	}
	if err == nil {
		l.drawn, l.drawn.batch = key, b
	}
	return b, err
}

// maxIndex is the largest token index and row offset the table pass keeps
// (as int32: at the paper's size its per-token indices were a tenth of the
// run's memory); a variable so that a test can lower it.
var maxIndex = math.MaxInt32

// checkIndices refuses a batch whose tokens or a rollout's rows the table
// pass's int32 indices cannot address.
func checkIndices(b *eval.AgentBatch) error {
	if n := len(b.Entries); n > maxIndex {
		return fmt.Errorf("a batch of %d sampled tokens is over the %d the transformer's table pass can index: lower -rollouts or -horizon-factor", n, maxIndex)
	}
	for i, r := range b.Rows {
		if len(r) > maxIndex {
			return fmt.Errorf("rollout %d's rows hold %d values, over the %d the transformer's table pass can index: lower -horizon-factor", i, len(r), maxIndex)
		}
	}
	return nil
}

// drawKey says what a batch of rollouts was drawn for: at one step the
// parameters are fixed, and the group targets a function of the step.
type drawKey struct {
	step, n, horizon int
	seed             uint64
	grouped, walks   bool
	batch            *eval.AgentBatch
}

func (k drawKey) same(o drawKey) bool {
	return k.step == o.step && k.n == o.n && k.horizon == o.horizon && k.seed == o.seed && k.grouped == o.grouped && k.walks == o.walks
}

// rowAgent is an agent that also reports the row of log-probabilities it
// drew from (eval.RowAgent) at the states the table pass trains: the
// sampler's own row, not a copy (the recorder appends it before the next
// token); at the fixed rows, which the table pass skips, an empty one.
// (Copying every row and taking the log of the fixed rows' reference
// probabilities halved the rollouts' speed at the paper's size.)
type rowAgent struct{ *agent }

// LastRow is the row of the last transition, empty at a fixed row.
func (a *rowAgent) LastRow() []float64 {
	if !a.l.t.trained[a.last] {
		return nil
	}
	return a.agent.logp
}

// newRowAgent makes row-reporting agents on one snapshot (see newAgent).
func (l *transformer) newRowAgent() func() (eval.Agent, error) {
	snap := l.tr.Snapshot()
	return func() (eval.Agent, error) { return &rowAgent{agent: &agent{l: l, s: snap.Sampler()}}, nil }
}
