package trainers

import (
	"context"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// BenchmarkPPOMinibatches times the bigram PPO's per-parameter sums of a
// batch's advantages (minibatches): 128 rollouts of the initial policy at
// the paper's size, about 5.8M tokens, on all cores.
func BenchmarkPPOMinibatches(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	cfg := Defaults(PPO, BigramModel)
	cfg.Rollouts = 128
	tr, err := New(cfg, g, Setup{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	ab, states, adv, div, err := tr.sampledBatch(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	bg := tr.l.(*bigram)
	for b.Loop() {
		bg.minibatches(&ab.Batch, adv, div, states)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ab.Tokens()), "ns/token")
}

// BenchmarkPPOAdvantages times the advantages of the same batch with the
// PPO defaults' baseline (fork, normalised) on all cores.
func BenchmarkPPOAdvantages(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	cfg := Defaults(PPO, BigramModel)
	cfg.Rollouts = 128
	tr, err := New(cfg, g, Setup{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	ab, states, _, _, err := tr.sampledBatch(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	lens := make([]int, len(ab.Targets))
	for i := range lens {
		lens[i] = ab.Len(i)
	}
	var dst []float64
	for b.Loop() {
		dst = tokenAdvantages(lens, ab.Hit, states, g.NumStates(), ab.Targets, g.W(), cfg.Beta, cfg.Baseline, tr.smp.fork, cfg.NormalizeAdvantages, dst)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ab.Tokens()), "ns/token")
}
