package eval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Batch holds sampled rollouts: rollout i has target Targets[i], took the
// transitions Entries[Starts[i]:Starts[i+1]] (indices into the graph's CSR
// rows, so entry e moves from the row's state to g.Next[e]) and hit its
// target iff Hit[i].
type Batch struct {
	Targets []int
	Starts  []int
	Entries []int32
	Hit     []bool
	// walk is the number of rollouts a walk holds in a batch of walks with
	// hindsight targets (walks.go), 0 otherwise; drawn is then the
	// transitions the walks drew.
	walk, drawn int
}

// Drawn is the number of transitions drawn to make the batch: its tokens,
// or for walks with hindsight targets the walks' (each of their rollouts
// is a prefix of its walk).
func (b *Batch) Drawn() int {
	if b.walk > 0 {
		return b.drawn
	}
	return b.Tokens()
}

// Walk is the number of rollouts each walk holds in a batch of walks with
// hindsight targets (rollouts i W to i W + W - 1 are walk i's), 0 in a
// batch of independent rollouts.
func (b *Batch) Walk() int { return b.walk }

// Len is the length (number of transitions) of rollout i.
func (b *Batch) Len(i int) int { return b.Starts[i+1] - b.Starts[i] }

// States returns the state each transition was taken from, token by
// token, and the state each rollout ends in.
func (b *Batch) States(g *tasks.Graph) (states, last []int32) { return b.StatesInto(g, nil, nil) }

// StatesInto is States written into the memory of states and last when
// they are large enough, rollouts on all cores.
func (b *Batch) StatesInto(g *tasks.Graph, states, last []int32) ([]int32, []int32) {
	return b.StatesMarkedInto(g, states, last, nil, nil)
}

// Marked lists where a batch's tokens leave marked states
// (StatesMarkedInto): rollout i's positions, counted from its first
// token, in order (At). Marked tokens are few (a fork baseline's
// fork-incoming ones), so each core appends its rollouts' positions to a
// buffer of its own instead of a batch-long one (4 bytes a sampled token,
// a thirtieth of a paper-size transformer run's memory).
type Marked struct {
	pos [][]int32 // each core's positions, reused from call to call
	of  []int32   // (rollouts) the core that walked rollout i
	at  []int     // (rollouts) where its positions start in that core's
	n   []int32   // (rollouts) and how many there are
}

// At returns rollout i's marked positions. The slice is valid until the
// next StatesMarkedInto into m.
func (m *Marked) At(b *Batch, i int) []int32 { return m.pos[m.of[i]][m.at[i]:][:m.n[i]] }

// StatesMarkedInto is StatesInto that also lists, into m when m is not
// nil, the positions of the tokens that leave a state s with mark[s] (a
// trainer's fork-incoming states: a pass of its own over the batch's
// states to find them was a twentieth of a paper-size bigram PPO step).
func (b *Batch) StatesMarkedInto(g *tasks.Graph, states, last []int32, mark []bool, m *Marked) ([]int32, []int32) {
	states, last = resize(states, len(b.Entries)), resize(last, len(b.Targets))
	cores := min(runtime.GOMAXPROCS(0), len(b.Targets))
	if m != nil {
		m.of, m.at, m.n = resize(m.of, len(b.Targets)), resize(m.at, len(b.Targets)), resize(m.n, len(b.Targets))
		for len(m.pos) < cores {
			m.pos = append(m.pos, nil)
		}
	}
	var next atomic.Int64 // the next rollout to take
	var wg sync.WaitGroup
	for k := range cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pos []int32
			if m != nil {
				pos = m.pos[k][:0]
			}
			for i := int(next.Add(1) - 1); i < len(b.Targets); i = int(next.Add(1) - 1) {
				lo, hi := b.Starts[i], b.Starts[i+1]
				if m == nil {
					last[i] = walkStates(states[lo:hi], b.Entries[lo:hi], g.Next)
					continue
				}
				at := len(pos)
				pos = slices.Grow(pos, hi-lo)
				var n int
				last[i], n = walkStatesMarked(states[lo:hi], b.Entries[lo:hi], g.Next, mark, pos[at:at+hi-lo])
				pos = pos[:at+n]
				m.of[i], m.at[i], m.n[i] = int32(k), at, int32(n)
			}
			if m != nil {
				m.pos[k] = pos
			}
		}()
	}
	wg.Wait()
	return states, last
}

// walkStates writes the state each of a rollout's entries leaves from
// into states (the walk starts at state 0) and returns the state it ends
// in. (Inside StatesInto's closure the loop reloaded the batch's slices
// on every token.)
func walkStates(states, entries []int32, next []int) int32 {
	states = states[:len(entries)]
	s := int32(0)
	for t, e := range entries {
		states[t] = s
		s = int32(next[e])
	}
	return s
}

// walkStatesMarked is walkStates that also writes the positions t whose
// state is marked into pos, in order, and returns their number.
func walkStatesMarked(states, entries []int32, next []int, mark []bool, pos []int32) (int32, int) {
	states, pos = states[:len(entries)], pos[:len(entries)]
	s, n := int32(0), 0
	for t, e := range entries {
		states[t] = s
		if mark[s] {
			pos[n] = int32(t)
			n++
		}
		s = int32(next[e])
	}
	return s, n
}

// Tokens is the total number of sampled transitions.
func (b *Batch) Tokens() int { return len(b.Entries) }

// table is a compact copy of a Markov policy for sampling: the
// probabilities of every row, the CSR layout and each state's head.
type table struct {
	offsets []int32
	next    []int32
	probs   []float64
	head    []int32
	leaf    []int32 // node of each target's leaf
}

func newTable(g *tasks.Graph, probs []float64) *table {
	t := &table{offsets: make([]int32, len(g.Offsets)), next: make([]int32, len(g.Next)), probs: probs,
		head: make([]int32, g.NumStates()), leaf: make([]int32, g.W()+1)}
	for i, o := range g.Offsets {
		t.offsets[i] = int32(o)
	}
	for i, a := range g.Next {
		t.next[i] = int32(a)
	}
	for s, st := range g.States {
		t.head[s] = int32(st.Head)
	}
	for i, b := range g.Branches {
		t.leaf[i+1] = int32(b.Leaf)
	}
	return t
}

// entry draws the CSR index of the transition taken from state s (Draw).
func (t *table) entry(s int32, u float64) int32 {
	lo := t.offsets[s]
	return lo + int32(Draw(t.probs[lo:t.offsets[s+1]], u))
}

// Rollouts draws n rollouts of the Markov policy from s0 -> f, rollout i
// with a uniform target and its own random stream seeded by (seed, i), so
// the batch does not depend on how it is spread over the cores. A rollout
// stops at its target or after horizon transitions (horizon <= 0: no limit;
// then the policy must reach every target surely). A canceled ctx stops the
// sampling within a few milliseconds and returns its error.
func (sp *Sampler) Rollouts(ctx context.Context, n, horizon int, seed uint64) (*Batch, error) {
	return sp.rollouts(ctx, n, nil, horizon, seed)
}

// RolloutsTo is Rollouts with rollout i toward targets[i] (1..W) instead
// of a uniform target: a group-relative trainer draws one target per group
// of rollouts. Rollout i's stream is seeded by (seed, i) as in Rollouts.
func (sp *Sampler) RolloutsTo(ctx context.Context, targets []int, horizon int, seed uint64) (*Batch, error) {
	if err := checkTargets(targets, sp.g.W()); err != nil {
		return nil, err
	}
	return sp.rollouts(ctx, len(targets), targets, horizon, seed)
}

// rollouts draws n rollouts toward targets (nil: uniform targets, each the
// first draw of its rollout's stream) into fresh memory (Buffers.Rollouts
// reuses its own).
func (sp *Sampler) rollouts(ctx context.Context, n int, targets []int, horizon int, seed uint64) (*Batch, error) {
	return new(Buffers).Rollouts(ctx, sp, n, targets, horizon, seed)
}

// target is rollout i's target: targets[i], or a uniform draw from rng
// when targets is nil.
func target(targets []int, i, w int, rng *rand.Rand) int {
	if targets != nil {
		return targets[i]
	}
	return 1 + rng.IntN(w)
}

// checkTargets refuses an empty list or a target outside 1..w.
func checkTargets(targets []int, w int) error {
	if len(targets) == 0 {
		return fmt.Errorf("eval: rollouts: no targets")
	}
	for i, x := range targets {
		if x < 1 || x > w {
			return fmt.Errorf("eval: rollouts: target %d of rollout %d: want 1..%d", x, i, w)
		}
	}
	return nil
}

// checkEvery is how many transitions a rollout takes between two looks at
// its context: a few milliseconds at any sampler's speed.
const checkEvery = 1 << 14

// eachRollout calls f(i, worker, rng) for every rollout i in [0, n),
// spread over the cores with one worker made by newWorker(k, workers) for
// goroutine k (its scratch memory or agent), and rollout i's own random
// stream seeded by (seed, i), so results do not depend on the number of
// cores or on which worker ran which rollout. Each goroutine takes the next
// rollout when it finishes one: rollout lengths are long tailed (at the
// paper's size a few of 128 take ten times the mean), and a fixed share
// each left one core idle for much of a batch. It returns the first
// error, or ctx's once it is canceled.
func eachRollout[W any](ctx context.Context, n int, seed uint64, newWorker func(k, workers int) (W, error), f func(i int, w W, rng *rand.Rand) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	errs := make([]error, workers)
	var next atomic.Int64 // the next rollout to take
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := newWorker(k, workers)
			if err != nil {
				errs[k] = err
				return
			}
			for i := int(next.Add(1) - 1); i < n && errs[k] == nil; i = int(next.Add(1) - 1) {
				if errs[k] = ctx.Err(); errs[k] == nil {
					errs[k] = f(i, w, rand.New(rand.NewPCG(seed, uint64(i))))
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
