package trainers

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// exactTestLogits seeds the logits of exactTestPolicy.
const exactTestLogits = 11

// exactTestPolicy is a bigram learner at random logits (exactTestLogits)
// on W=3, K=2, L=2 (the gradient test's graph), its exact analysis done.
func exactTestPolicy(t *testing.T) (*bigram, *tasks.Graph) {
	t.Helper()
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	tr, err := New(DefaultConfig(), g, Setup{Init: randomLogits(g, exactTestLogits)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	bg := tr.l.(*bigram)
	if _, err := bg.valueAnalysis(); err != nil {
		t.Fatal(err)
	}
	return bg, g
}

// TestExactValuesBellman: the values baseline exact reads satisfy the
// Bellman equation of the chain they come from: for every target x and
// every state s that is not a hit of x, h_x(s) = 1 + sum_a pi(a|s) h_x(a)
// with h_x = 0 at the hit, so the policy's mean advantage at s,
// sum_a pi(a|s) beta (h_x(s) - h_x(a) - 1), is 0.
func TestExactValuesBellman(t *testing.T) {
	bg, g := exactTestPolicy(t)
	n := g.NumStates()
	h := exactValues(nil, bg.res, g.W(), n)
	checked := 0
	for x := 1; x <= g.W(); x++ {
		hx := h[(x-1)*n : x*n]
		for s := range n {
			if g.Hits(s, x) {
				continue
			}
			next := 0.0
			for e := g.Offsets[s]; e < g.Offsets[s+1]; e++ {
				if a := g.Next[e]; !g.Hits(a, x) {
					next += bg.probs[e] * hx[a]
				}
			}
			if d := hx[s] - 1 - next; math.Abs(d) > 1e-9*hx[s] {
				t.Errorf("target %d, %s: h = %v, 1 + sum pi h(next) = %v", x, g.Name(s), hx[s], 1+next)
			}
			checked++
		}
	}
	if checked < g.W()*(n-g.W()) {
		t.Fatalf("checked %d (state, target) pairs", checked)
	}
}

// TestExactAdvantages: on sampled rollouts (seeded), each rollout's exact
// advantages add up to beta (h_x(start) - T), T its length, or beta
// (h_x(start) - h_x(end) - T) for a rollout the horizon cut: the
// advantages telescope. Without a horizon, the mean of h_x(start) - T over
// 20,000 rollouts is within 4 standard errors of 0, since h_x(start) is
// the expected length: the Monte Carlo lengths agree with the values.
func TestExactAdvantages(t *testing.T) {
	bg, g := exactTestPolicy(t)
	n := g.NumStates()
	h := exactValues(nil, bg.res, g.W(), n)
	const beta = 0.01
	sp, err := eval.NewSampler(g, bg.probs)
	if err != nil {
		t.Fatal(err)
	}
	for _, horizon := range []int{0, int(bg.res.HittingTime)} {
		b, err := sp.Rollouts(context.Background(), 20000, horizon, 3)
		if err != nil {
			t.Fatal(err)
		}
		states, last := b.States(g)
		lens := make([]int, len(b.Targets))
		for i := range lens {
			lens[i] = b.Len(i)
		}
		adv := exactAdvantages(lens, b.Hit, states, last, b.Targets, h, n, beta, nil)
		starts, _ := rolloutStarts(lens)
		cut := 0
		var sum, sq float64
		for r, l := range lens {
			hx := h[(b.Targets[r]-1)*n:]
			want := hx[states[starts[r]]] - float64(l)
			if !b.Hit[r] {
				want -= hx[last[r]]
				cut++
			}
			got := 0.0
			for _, a := range adv[starts[r] : starts[r]+l] {
				got += a / beta
			}
			if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Fatalf("horizon %d, rollout %d (target %d, %d tokens, hit %v): advantages add up to %v beta, want %v beta", horizon, r, b.Targets[r], l, b.Hit[r], got, want)
			}
			sum, sq = sum+want, sq+want*want
		}
		if horizon > 0 {
			if cut == 0 {
				t.Fatalf("horizon %d cut no rollout", horizon)
			}
			continue
		}
		m := float64(len(lens))
		mean := sum / m
		se := math.Sqrt((sq/m - mean*mean) / m)
		t.Logf("mean of h_x(start) - T over %d rollouts: %.4f ± %.4f (hitting time %.2f)", len(lens), mean, se, bg.res.HittingTime)
		if math.Abs(mean) > 4*se {
			t.Errorf("mean of h_x(start) - T = %v, %.1f standard errors from 0", mean, math.Abs(mean)/se)
		}
	}
}

// TestExactBaselineTransformerAtInit: the transformer's values come from
// the bigram of its table B, which at initialisation is the bigram it
// starts from: the same h_x(s) as that bigram's, for every state and
// target. The rows the paper fixes come from the starting bigram whatever
// B holds there (the transformer samples them from it): moving B in a
// fork-incoming row moves no value.
func TestExactBaselineTransformerAtInit(t *testing.T) {
	bg, g := exactTestPolicy(t)
	n := g.NumStates()
	want := exactValues(nil, bg.res, g.W(), n)

	cfg := ppoConfig()
	cfg.Baseline = "exact"
	tf := newTrainer(t, cfg, DefaultTransformerOptions(PPO), g, randomLogits(g, exactTestLogits)).l.(*transformer)
	check := func(what string) {
		t.Helper()
		r, err := tf.valueAnalysis()
		if err != nil {
			t.Fatal(err)
		}
		got := exactValues(nil, r, g.W(), n)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9*math.Max(1, want[i]) {
				t.Fatalf("%s: target %d, %s: h = %v, the starting bigram's %v", what, i/n+1, g.Name(i%n), got[i], want[i])
			}
		}
	}
	check("at initialisation")
	f := g.Branches[0].ForkIn()
	tf.tr.TableLogits()[g.Offsets[f]] += 3
	check("B moved in a fork-incoming row")
}

// TestExactBaselineRefusesIdentity: a transformer without a table B
// (init-mode identity) has no chain to take exact values from: the run is
// refused, naming the baseline and what it needs.
func TestExactBaselineRefusesIdentity(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	cfg := ppoConfig()
	cfg.Baseline = "exact"
	opts := DefaultTransformerOptions(PPO)
	opts.Init = "identity"
	_, err := New(cfg, g, Setup{Model: TransformerModel, Transformer: opts})
	if err == nil || !strings.Contains(err.Error(), "baseline exact") || !strings.Contains(err.Error(), "init-mode table") {
		t.Fatalf("got %v, want a refusal naming baseline exact and init-mode table", err)
	}
}
