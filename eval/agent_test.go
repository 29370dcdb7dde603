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
