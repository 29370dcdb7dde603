package eval

import (
	"context"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestWalksHoldRolloutsTowardEveryTarget: with hindsight targets, the
// rollout toward x is its walk's prefix up to the first visit of x's leaf
// (or the whole walk, not hit), every walk's rollouts are prefixes of its
// longest, a batch does not depend on the number of workers (for the
// Markov sampler and for agents), and a RowAgent's rows are each
// rollout's own.
func TestWalksHoldRolloutsTowardEveryTarget(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	p, _ := Named(g, "pretrained")
	sp, err := NewSampler(g, p)
	if err != nil {
		t.Fatal(err)
	}
	const n, horizon, skipRows = 40, 300, 5 // the agents report no row at states below skipRows
	walks := func(procs int, agent bool) *AgentBatch {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var buf Buffers
		if agent {
			b, err := buf.AgentWalks(context.Background(), g, func() (Agent, error) {
				m, err := NewMarkovAgent(g, p)
				return &rowMarkov{MarkovAgent: m, skip: skipRows}, err
			}, n, horizon, 9)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		b, err := buf.Walks(context.Background(), sp, n, horizon, 9)
		if err != nil {
			t.Fatal(err)
		}
		return &AgentBatch{Batch: *b}
	}
	for _, agent := range []bool{false, true} {
		a, b := walks(1, agent), walks(2, agent)
		if !slices.Equal(a.Entries, b.Entries) || !slices.Equal(a.Starts, b.Starts) || !slices.Equal(a.Hit, b.Hit) {
			t.Fatalf("agents %v: walks differ between 1 and 2 workers", agent)
		}
		if agent && len(a.Rows) != n*g.W() {
			t.Fatalf("%d rows for %d rollouts", len(a.Rows), n*g.W())
		}
		hits := 0
		for j := range n {
			long := 0 // walk j's longest rollout: the walk
			for x := range g.W() {
				if a.Len(j*g.W()+x) > a.Len(j*g.W()+long) {
					long = x
				}
			}
			walk := a.Entries[a.Starts[j*g.W()+long]:a.Starts[j*g.W()+long+1]]
			for x := 1; x <= g.W(); x++ {
				r := j*g.W() + x - 1
				if a.Targets[r] != x {
					t.Fatalf("rollout %d: target %d, want %d", r, a.Targets[r], x)
				}
				es := a.Entries[a.Starts[r]:a.Starts[r+1]]
				if !slices.Equal(es, walk[:len(es)]) {
					t.Fatalf("walk %d: the rollout toward %d is not a prefix of the walk", j, x)
				}
				first := -1
				for k, e := range es {
					if g.Hits(g.Next[e], x) {
						first = k + 1
						break
					}
				}
				switch {
				case a.Hit[r] && first != len(es):
					t.Fatalf("walk %d toward %d: hit at %d transitions, the leaf first visited at %d", j, x, len(es), first)
				case !a.Hit[r] && (first >= 0 || len(walk) != len(es) || len(es) != horizon):
					t.Fatalf("walk %d toward %d: not hit, yet %d transitions of the walk's %d, horizon %d (leaf at %d)", j, x, len(es), len(walk), horizon, first)
				}
				if a.Hit[r] {
					hits++
				}
				if !agent {
					continue
				}
				at := 0 // the rows are this rollout's own
				for k, e := range es {
					s := 0 // the walk starts at s0 -> f, state 0
					if k > 0 {
						s = g.Next[es[k-1]]
					}
					if s < skipRows {
						continue
					}
					if got, want := a.RowLogProb(g, r, a.Starts[r]+k, at, s), math.Log(p[e]); got != want {
						t.Fatalf("walk %d toward %d, token %d: row log-probability %v, want %v", j, x, k, got, want)
					}
					at += g.Offsets[s+1] - g.Offsets[s]
				}
				if at != len(a.Rows[r]) {
					t.Fatalf("walk %d toward %d: %d row values, want %d", j, x, len(a.Rows[r]), at)
				}
			}
		}
		if hits == 0 || hits == n*g.W() {
			t.Fatalf("agents %v: %d of %d rollouts hit within %d transitions: the test wants both kinds", agent, hits, n*g.W(), horizon)
		}
	}
}

// TestWalksAgreeWithExact: the rollouts of hindsight targets have the law
// of rollouts toward each target: their mean length is the exact hitting
// time, within the Monte Carlo interval of the walks (the rollouts of one
// walk are correlated, so the interval is taken over walks).
func TestWalksAgreeWithExact(t *testing.T) {
	for _, c := range []tasks.Config{{W: 3, K: 2, L: 2}, {Branches: [][]int{{2, 1}, {3}, {1, 1, 1}}}} {
		g := graph(t, c)
		for _, name := range []string{"pretrained", "rlvr-limit"} {
			p, _ := Named(g, name)
			exact := analyze(t, g, p).HittingTime
			sp, err := NewSampler(g, p)
			if err != nil {
				t.Fatal(err)
			}
			const n = 20000
			b, err := new(Buffers).Walks(context.Background(), sp, n, 1<<30, 5)
			if err != nil {
				t.Fatal(err)
			}
			var sum, sq float64
			for j := range n {
				m := 0.0 // walk j's mean over its targets
				for x := range g.W() {
					r := j*g.W() + x
					if !b.Hit[r] {
						t.Fatalf("walk %d never reached target %d", j, x+1)
					}
					m += float64(b.Len(r)) / float64(g.W())
				}
				sum, sq = sum+m, sq+m*m
			}
			mean := sum / n
			se := math.Sqrt((sq/n - mean*mean) / n)
			if math.Abs(mean-exact) > 4*se {
				t.Errorf("%s %s: walks' mean length %.5g ± %.2g, exact hitting time %.6g", tasks.FormatBranches(c.Shape()), name, mean, 1.96*se, exact)
			}
		}
	}
}

// TestAgentWalkMonteCarlo: a Monte Carlo measurement on walks is the
// summary of the batch of the same walks (AgentWalks, same seed: the same
// draws, the same horizon cut) with its interval taken over walks; its
// mean agrees with the exact hitting time; and its interval covers the
// exact value about 95% of the time over independent measurements (the
// interval a stop rule leans on: one that ignored the walks' correlation,
// or counted walks as rollouts, would cover far less or far more).
func TestAgentWalkMonteCarlo(t *testing.T) {
	ctx := context.Background()
	for _, c := range []tasks.Config{{W: 3, K: 2, L: 2}, {Branches: [][]int{{2, 1}, {3}, {1, 1, 1}}}} {
		g := graph(t, c)
		for _, name := range []string{"pretrained", "rlvr-limit"} {
			p, _ := Named(g, name)
			exact := analyze(t, g, p).HittingTime
			agent := func() (Agent, error) { return NewMarkovAgent(g, p) }
			label := tasks.FormatBranches(c.Shape()) + " " + name

			horizon := int(exact) // some walks are cut before every leaf
			m, tokens, err := AgentWalkMonteCarlo(ctx, g, agent, 50*g.W()-1, horizon, 3)
			if err != nil {
				t.Fatal(err)
			}
			b, err := new(Buffers).AgentWalks(ctx, g, agent, 50, horizon, 3)
			if err != nil {
				t.Fatal(err)
			}
			if s := b.Summary(); m != s || m.N != 50*g.W() || m.SuccessRate == 1 {
				t.Errorf("%s: walks' measurement %+v, their batch's summary %+v (want equal, 50 walks, some cut)", label, m, s)
			}
			if d := b.Drawn(); tokens != d {
				t.Errorf("%s: walks' measurement drew %d tokens, their batch %d", label, tokens, d)
			}

			m, _, err = AgentWalkMonteCarlo(ctx, g, agent, 4000*g.W(), 1<<30, 5)
			if err != nil {
				t.Fatal(err)
			}
			if m.SuccessRate != 1 || math.Abs(m.HittingTime-exact) > 2.1*m.CI95 {
				t.Errorf("%s: %.5g ± %.2g on walks (success %.3g), exact %.6g", label, m.HittingTime, m.CI95, m.SuccessRate, exact)
			}

			// 95% of 400 is 380 ± 9 (two binomial standard errors). Over
			// 30 walks, the interval of the rollouts as if independent
			// covered 389-394 of 400 here (a walk reaches its targets in
			// every order, so its mean varies less than independent
			// rollouts'). Over 5 walks Student's t covered 357-381 (the
			// walks' means are few and skewed), and the normal's quantile
			// in its place 331-355.
			const reps = 400
			for _, walks := range []int{5, 30} {
				low := 0.91
				if walks == 5 {
					low = 0.885
				}
				covered := 0
				for r := range reps {
					m, _, err := AgentWalkMonteCarlo(ctx, g, agent, walks*g.W(), 1<<30, uint64(100+r))
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(m.HittingTime-exact) <= m.CI95 {
						covered++
					}
				}
				t.Logf("%s, %d walks: covered %d of %d", label, walks, covered, reps)
				if f := float64(covered) / reps; f < low || f > 0.97 {
					t.Errorf("%s: the interval over %d walks covered the exact value in %d of %d measurements, want about 95%%", label, walks, covered, reps)
				}
			}
		}
	}
	if _, _, err := AgentWalkMonteCarlo(ctx, graph(t, tasks.Config{W: 3, K: 2, L: 2}), nil, 1, 10, 1); err == nil {
		t.Error("one rollout: no error")
	}
}
