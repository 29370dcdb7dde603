package eval

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

func sampler(t testing.TB, g *tasks.Graph, p []float64) *Sampler {
	t.Helper()
	sp, err := NewSampler(g, p)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestRolloutsDeterministicAndExact: a batch depends only on its seed, its
// transitions are valid and end at the target, and its mean length matches
// the exact hitting time.
func TestRolloutsDeterministicAndExact(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	p := PolicyPretrained(g)
	sp := sampler(t, g, p)
	a, b := rollouts(t, sp, 4000, 0, 9), rollouts(t, sp, 4000, 0, 9)
	if len(a.Entries) != len(b.Entries) {
		t.Fatal("same seed, different batches")
	}
	for i := range a.Entries {
		if a.Entries[i] != b.Entries[i] {
			t.Fatal("same seed, different batches")
		}
	}
	var sum, sumSq float64
	for i := range a.Targets {
		s := 0
		for _, e := range a.Entries[a.Starts[i]:a.Starts[i+1]] {
			if int(e) < g.Offsets[s] || int(e) >= g.Offsets[s+1] {
				t.Fatalf("rollout %d: entry %d is not in the row of %s", i, e, g.Name(s))
			}
			s = g.Next[e]
		}
		if !a.Hit[i] || !g.Hits(s, a.Targets[i]) {
			t.Fatalf("rollout %d does not end at its target", i)
		}
		l := float64(a.Len(i))
		sum, sumSq = sum+l, sumSq+l*l
	}
	n := float64(len(a.Targets))
	mean := sum / n
	se := math.Sqrt((sumSq/n - mean*mean) / n)
	if math.Abs(mean-140) > 4*se {
		t.Errorf("mean length %v ± %v, exact 140", mean, se)
	}
	c := rollouts(t, sp, 300, 50, 1)
	for i := range c.Targets {
		if c.Len(i) > 50 || (!c.Hit[i] && c.Len(i) != 50) {
			t.Fatalf("horizon 50: rollout %d has length %d, hit %v", i, c.Len(i), c.Hit[i])
		}
	}
}

// naiveSearch is the search agent written literally: propose from the
// policy, refuse (one step) any used state, until an unused one comes; at a
// dead end (every state the policy proposes is used) refuse once, then move
// to a uniformly chosen unused state, or freely if none is left.
func naiveSearch(g *tasks.Graph, p []float64, target int, rng *rand.Rand) (int, bool) {
	used := map[int]bool{0: true}
	s, steps := 0, 0
	for steps < 1e7 {
		free := 0.0
		var unused []int
		for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
			if !used[g.Next[e]] {
				free += p[e]
				unused = append(unused, g.Next[e])
			}
		}
		var a int
		switch {
		case free == 0 && len(unused) > 0:
			a = unused[rng.IntN(len(unused))]
			steps += 2
		default:
			u := rng.Float64()
			a = -1
			for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
				if u < p[e] {
					a = g.Next[e]
					break
				}
				u -= p[e]
			}
			steps++
			if a < 0 || (used[a] && len(unused) > 0) {
				continue
			}
		}
		used[a], s = true, a
		if g.Hits(s, target) {
			return steps, true
		}
	}
	return steps, false
}

func TestSearchAgent(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	for _, name := range PolicyNames {
		p, _ := Named(g, name)
		sp := sampler(t, g, p)
		got, err := sp.SearchMonteCarlo(context.Background(), 20000, 0, 5)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		var sum, sumSq float64
		hits := 0
		const n = 20000
		for range n {
			l, hit := naiveSearch(g, p, 1+rng.IntN(g.W()), rng)
			if hit {
				hits++
				sum, sumSq = sum+float64(l), sumSq+float64(l)*float64(l)
			}
		}
		mean := sum / float64(hits)
		se := math.Sqrt((sumSq/float64(hits) - mean*mean) / float64(hits))
		if math.Abs(got.HittingTime-mean) > 4*math.Hypot(se, got.CI95/1.96) || math.Abs(got.SuccessRate-float64(hits)/n) > 0.02 {
			t.Errorf("%s: search agent %v ± %v (success %v), naive %v ± %v (success %v)", name, got.HittingTime, got.CI95, got.SuccessRate, mean, 1.96*se, float64(hits)/n)
		}
		t.Logf("%s: search agent hitting time %.4g ± %.2g, success %.3f", name, got.HittingTime, got.CI95, got.SuccessRate)
	}
	// The converged policy never revisits a state inside a branch: the agent
	// only stops it re-entering a searched branch. Hand-computed for W=3,
	// K=3: a wrong branch costs 14 transitions, the target branch 7, and at
	// the fork a used entry is refused (one step each, geometric):
	// 7/3 + 2/3 (14 + 1/2 + 7/2 + (14 + 2 + 7)/2) = 22.
	got, _ := sampler(t, g, PolicyRLVRLimit(g)).SearchMonteCarlo(context.Background(), 40000, 0, 5)
	if math.Abs(got.HittingTime-22) > 4*got.CI95/1.96 || got.SuccessRate != 1 {
		t.Errorf("rlvr-limit: search agent %v ± %v (success %v), want 22", got.HittingTime, got.CI95, got.SuccessRate)
	}
}

// BenchmarkRollouts measures batched sampling of the pretrained bigram at
// the paper's size, over all cores, into memory reused from batch to
// batch as the trainers do (Buffers).
func BenchmarkRollouts(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	sp := sampler(b, g, PolicyPretrained(g))
	var buf Buffers
	tokens := 0
	seed := uint64(0)
	for b.Loop() {
		seed++
		batch, err := buf.Rollouts(context.Background(), sp, 64, nil, 0, seed)
		if err != nil {
			b.Fatal(err)
		}
		tokens += batch.Tokens()
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "states/s")
}

// TestSearchAgentGrowth: with the search agent, the SFT limit's hitting
// time grows like W K L (no longer exponentially in K) and the converged
// RLVR policy's like W K, independently of L (the Corollary).
func TestSearchAgentGrowth(t *testing.T) {
	for _, K := range []int{2, 4, 6} {
		var rlvr []float64
		for _, L := range []int{1, 3, 5} {
			g := graph(t, tasks.Config{W: 3, K: K, L: L})
			sft, _ := sampler(t, g, PolicySFTLimit(g)).SearchMonteCarlo(context.Background(), 3000, 0, 1)
			if r := sft.HittingTime / float64(3*K*(L+1)); r < 0.3 || r > 3 {
				t.Errorf("K=%d L=%d: SFT with the agent %v, %.2f x W K (L+1)", K, L, sft.HittingTime, r)
			}
			rl, _ := sampler(t, g, PolicyRLVRLimit(g)).SearchMonteCarlo(context.Background(), 3000, 0, 1)
			rlvr = append(rlvr, rl.HittingTime)
		}
		if rlvr[0] != rlvr[1] || rlvr[1] != rlvr[2] {
			t.Errorf("K=%d: RLVR with the agent depends on L: %v", K, rlvr)
		}
		if r := rlvr[0] / float64(3*K); r < 1 || r > 4 {
			t.Errorf("K=%d: RLVR with the agent %v, %.2f x W K", K, rlvr[0], r)
		}
	}
}

// rollouts samples a batch, failing the test on an error.
func rollouts(t testing.TB, sp *Sampler, n, horizon int, seed uint64) *Batch {
	t.Helper()
	b, err := sp.Rollouts(context.Background(), n, horizon, seed)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRolloutsStopOnCancel: a canceled context stops sampling within a few
// thousand transitions of every worker, however long the rollouts, with
// the context's error.
func TestRolloutsStopOnCancel(t *testing.T) {
	g := graph(t, tasks.DefaultConfig())
	sp := sampler(t, g, PolicySFTLimit(g)) // hitting time 4.3e14: rollouts never end
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := sp.Rollouts(ctx, 4, 0, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if _, err := sp.MonteCarlo(ctx, 4, 0, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Monte Carlo: got %v, want context.Canceled", err)
	}
	if _, err := sp.SearchMonteCarlo(ctx, 4, 0, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("search agent: got %v, want context.Canceled", err)
	}
	agent := func() (Agent, error) { return NewMarkovAgent(g, PolicySFTLimit(g)) }
	if _, err := AgentMonteCarlo(ctx, g, agent, 4, 1<<40, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("agents: got %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopped after %v", d)
	}
}

// TestStatesMarkedInto: the states are StatesInto's, and the marked
// positions of each rollout are those of its tokens whose state is
// marked, in order, also when m's memory held an earlier, larger batch's.
func TestStatesMarkedInto(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	mark := make([]bool, g.NumStates())
	for s := 0; s < g.NumStates(); s += 3 {
		mark[s] = true
	}
	var m Marked
	var earlier Buffers
	big, err := earlier.Rollouts(context.Background(), sampler(t, g, PolicyPretrained(g)), 90, nil, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	big.StatesMarkedInto(g, nil, nil, mark, &m)
	var buf Buffers
	batch, err := buf.Rollouts(context.Background(), sampler(t, g, PolicyPretrained(g)), 40, nil, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	want, wantLast := batch.StatesInto(g, nil, nil)
	states, last := batch.StatesMarkedInto(g, nil, nil, mark, &m)
	if !slices.Equal(states, want) || !slices.Equal(last, wantLast) {
		t.Fatal("states differ from StatesInto's")
	}
	listed := 0
	for i := range batch.Targets {
		var at []int32
		for k, s := range want[batch.Starts[i]:batch.Starts[i+1]] {
			if mark[s] {
				at = append(at, int32(k))
			}
		}
		if got := m.At(batch, i); !slices.Equal(got, at) {
			t.Fatalf("rollout %d: marked positions %v, want %v", i, got, at)
		}
		listed += len(at)
	}
	if listed == 0 {
		t.Fatal("no marked token: the test checks nothing")
	}
}

// BenchmarkStatesInto times a batch's states from its entries (64
// rollouts of the pretrained policy at the paper's size, about 3M tokens)
// on all cores.
func BenchmarkStatesInto(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	var buf Buffers
	batch, err := buf.Rollouts(context.Background(), sampler(b, g, PolicyPretrained(g)), 64, nil, 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	var states, last []int32
	for b.Loop() {
		states, last = batch.StatesInto(g, states, last)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.Tokens()), "ns/token")
}
