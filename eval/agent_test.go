package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestAgentMonteCarloAgrees runs Markov policies through the Agent path and
// compares them with the exact hitting time (within 4 standard errors), and
// checks that each transition's log-probability is the policy's.
func TestAgentMonteCarloAgrees(t *testing.T) {
	for _, c := range []tasks.Config{{W: 3, K: 2, L: 2}, {Branches: [][]int{{2, 1}, {3}, {1, 1, 1}}}} {
		g := graph(t, c)
		rp, _ := randomRationalPolicy(g, rand.New(rand.NewPCG(5, 0)))
		for _, name := range []string{"random", "pretrained", "rlvr-limit"} {
			p := rp
			if name != "random" {
				p, _ = Named(g, name)
			}
			exact := analyze(t, g, p).HittingTime
			newAgent := func() (Agent, error) { return NewMarkovAgent(g, p) }
			mc, err := AgentMonteCarlo(context.Background(), g, newAgent, 20000, 1<<30, 11)
			if err != nil {
				t.Fatal(err)
			}
			if se := mc.CI95 / 1.96; math.Abs(mc.HittingTime-exact) > 4*se || mc.SuccessRate != 1 {
				t.Errorf("%s %s: agent Monte Carlo %.4g ± %.2g (success %v), exact %.6g", tasks.FormatBranches(c.Shape()), name, mc.HittingTime, mc.CI95, mc.SuccessRate, exact)
			}
			b, err := AgentRollouts(context.Background(), g, newAgent, 50, 1<<30, 3)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range b.Entries {
				if got, want := b.LogProbs[i], math.Log(p[e]); got != want {
					t.Fatalf("%s: token %d: log-probability %v, want %v", name, i, got, want)
				}
			}
		}
	}
}

// TestAgentRolloutsDeterministic: the batch depends on the seed only, not
// on the number of workers, and the horizon cuts rollouts.
func TestAgentRolloutsDeterministic(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	p, _ := Named(g, "pretrained")
	newAgent := func() (Agent, error) { return NewMarkovAgent(g, p) }
	run := func(procs int) *AgentBatch {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		b, err := AgentRollouts(context.Background(), g, newAgent, 64, 40, 7)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := run(1), run(4)
	if !slices.Equal(a.Entries, b.Entries) || !slices.Equal(a.Targets, b.Targets) || !slices.Equal(a.Hit, b.Hit) {
		t.Fatal("rollouts differ between 1 and 4 workers")
	}
	for i := range a.Targets {
		if l := a.Len(i); l > 40 || (!a.Hit[i] && l != 40) {
			t.Errorf("rollout %d: length %d, hit %v with horizon 40", i, l, a.Hit[i])
		}
	}
	if _, err := AgentRollouts(context.Background(), g, newAgent, 4, 0, 1); err == nil {
		t.Error("horizon 0 accepted; an agent may never hit")
	}
}

// TestRolloutsToTargets: with given targets, the Markov sampler and the
// agent sampler send rollout i toward targets[i] and end it there when it
// hits, and refuse a target outside 1..W. (They draw from the same table
// with different generators: the Markov sampler's alias tables take one
// 64-bit variate per transition.)
func TestRolloutsToTargets(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	p, _ := Named(g, "pretrained")
	sp, err := NewSampler(g, p)
	if err != nil {
		t.Fatal(err)
	}
	targets := []int{3, 3, 1, 1, 2, 2, 3, 3}
	a, err := sp.RolloutsTo(context.Background(), targets, 500, 5)
	if err != nil {
		t.Fatal(err)
	}
	newAgent := func() (Agent, error) { return NewMarkovAgent(g, p) }
	b, err := new(Buffers).AgentRolloutsTo(context.Background(), g, newAgent, targets, 500, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Targets, targets) || !slices.Equal(b.Targets, targets) {
		t.Errorf("targets %v and %v, want %v", a.Targets, b.Targets, targets)
	}
	for _, batch := range []*Batch{a, &b.Batch} {
		_, last := batch.States(g)
		for i, x := range targets {
			if batch.Hit[i] && g.States[last[i]].Head != g.Branches[x-1].Leaf {
				t.Errorf("rollout %d hit node %d, want target %d's leaf %d", i, g.States[last[i]].Head, x, g.Branches[x-1].Leaf)
			}
		}
	}
	_, last := a.States(g)
	hits := 0
	for i, x := range targets {
		if a.Hit[i] {
			hits++
			if head := g.States[last[i]].Head; head != g.Branches[x-1].Leaf {
				t.Errorf("rollout %d hit node %d, want target %d's leaf %d", i, head, x, g.Branches[x-1].Leaf)
			}
		}
	}
	if hits == 0 {
		t.Error("no rollout hit within 500 transitions")
	}
	if _, err := sp.RolloutsTo(context.Background(), []int{1, 4}, 10, 1); err == nil {
		t.Error("target 4 of W=3 accepted")
	}
}

// rowMarkov is a MarkovAgent that reports its rows' log-probabilities,
// none at states below skip (as the transformer's fixed rows report none).
type rowMarkov struct {
	*MarkovAgent
	skip int
	last int
	row  []float64
}

func (r *rowMarkov) Next(s int, rng *rand.Rand) (int, float64, error) {
	r.last = s
	return r.MarkovAgent.Next(s, rng)
}

func (r *rowMarkov) LastRow() []float64 {
	if r.last < r.skip {
		return nil
	}
	g := r.g
	r.row = r.row[:0]
	for _, p := range r.probs[g.Offsets[r.last]:g.Offsets[r.last+1]] {
		r.row = append(r.row, math.Log(p))
	}
	return r.row
}

// TestAgentRowsHoldLogProbs: a RowAgent's batch keeps no log-probabilities
// beside its rows; each token with a row finds its own there, at its
// entry (RowLogProb), the one Next returned; and the rows hold the rows
// reported, empty ones taking no room. A batch of the same seed without
// rows is the same batch.
func TestAgentRowsHoldLogProbs(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	p, _ := Named(g, "pretrained")
	skip := 2 // states 0 (s0 -> f) and 1 report no row
	plain, err := AgentRollouts(context.Background(), g, func() (Agent, error) { return NewMarkovAgent(g, p) }, 30, 1<<20, 4)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AgentRollouts(context.Background(), g, func() (Agent, error) {
		m, err := NewMarkovAgent(g, p)
		return &rowMarkov{MarkovAgent: m, skip: skip}, err
	}, 30, 1<<20, 4)
	if err != nil {
		t.Fatal(err)
	}
	if b.LogProbs != nil || b.Rows == nil {
		t.Fatalf("a RowAgent's batch: %d log-probabilities, rows %v: want none beside its rows", len(b.LogProbs), b.Rows != nil)
	}
	if !slices.Equal(b.Entries, plain.Entries) || !slices.Equal(b.Starts, plain.Starts) {
		t.Fatal("the rows changed the batch drawn")
	}
	states, _ := b.States(g)
	withRow := 0
	for i := range b.Targets {
		at := 0
		for tok := b.Starts[i]; tok < b.Starts[i+1]; tok++ {
			s := int(states[tok])
			if s < skip {
				continue
			}
			if got, want := b.RowLogProb(g, i, tok, at, s), plain.LogProbs[tok]; got != want {
				t.Fatalf("rollout %d, token %d: log-probability %v in its row, want %v", i, tok, got, want)
			}
			at += g.Offsets[s+1] - g.Offsets[s]
			withRow++
		}
		if at != len(b.Rows[i]) {
			t.Fatalf("rollout %d: rows hold %d values, want %d", i, len(b.Rows[i]), at)
		}
	}
	if withRow == 0 || withRow == b.Tokens() {
		t.Fatalf("%d of %d tokens have rows: want some with and some without", withRow, b.Tokens())
	}
}
