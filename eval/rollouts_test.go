package eval

import (
	"math"
	"math/rand/v2"
	"testing"

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
	a, b := sp.Rollouts(4000, 0, 9), sp.Rollouts(4000, 0, 9)
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
	c := sp.Rollouts(300, 50, 1)
	for i := range c.Targets {
		if c.Len(i) > 50 || (!c.Hit[i] && c.Len(i) != 50) {
			t.Fatalf("horizon 50: rollout %d has length %d, hit %v", i, c.Len(i), c.Hit[i])
		}
	}
}

// naiveSearch is the search agent written literally: propose from the
// policy, refuse (one step) any used state, until an unused one comes; at a
// dead end, move as the policy would.
func naiveSearch(g *tasks.Graph, p []float64, target int, rng *rand.Rand) (int, bool) {
	used := map[int]bool{0: true}
	s, steps := 0, 0
	for steps < 1e7 {
		free := 0.0
		for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
			if !used[g.Next[e]] {
				free += p[e]
			}
		}
		deadEnd := free == 0
		u, a := rng.Float64(), -1
		for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
			if u < p[e] {
				a = g.Next[e]
				break
			}
			u -= p[e]
		}
		steps++
		if a < 0 || (used[a] && !deadEnd) {
			continue
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
		got, err := sp.SearchMonteCarlo(20000, 0, 5)
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
	got, _ := sampler(t, g, PolicyRLVRLimit(g)).SearchMonteCarlo(40000, 0, 5)
	if math.Abs(got.HittingTime-22) > 4*got.CI95/1.96 || got.SuccessRate != 1 {
		t.Errorf("rlvr-limit: search agent %v ± %v (success %v), want 22", got.HittingTime, got.CI95, got.SuccessRate)
	}
}

// BenchmarkRollouts measures batched sampling of the pretrained bigram at
// the paper's size, over all cores.
func BenchmarkRollouts(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	sp := sampler(b, g, PolicyPretrained(g))
	tokens := 0
	seed := uint64(0)
	for b.Loop() {
		seed++
		tokens += sp.Rollouts(64, 0, seed).Tokens()
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "states/s")
}
