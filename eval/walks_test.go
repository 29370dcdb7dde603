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
