package trainers

import (
	"context"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// ppoBenchBatch is the bigram PPO benchmarks' batch: 128 rollouts of the
// initial policy at the paper's size (about 5.8M tokens) with the PPO
// defaults, its states, advantages and divisors, and its trainer.
func ppoBenchBatch(b *testing.B) (*Trainer, *eval.AgentBatch, []int32, *advantages, *lossDivs) {
	cfg := Defaults(PPO, BigramModel)
	cfg.Rollouts = 128
	tr, err := New(cfg, graph(b, tasks.DefaultConfig()), Setup{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	ab, states, adv, div, err := tr.sampledBatch(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return tr, ab, states, adv, div
}

// BenchmarkPPOMinibatches times the bigram PPO's per-parameter sums of
// the batch's advantages (minibatches) on all cores.
func BenchmarkPPOMinibatches(b *testing.B) {
	tr, ab, states, adv, div := ppoBenchBatch(b)
	bg := tr.l.(*bigram)
	for b.Loop() {
		bg.minibatches(&ab.Batch, adv, div, states)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ab.Tokens()), "ns/token")
}

// BenchmarkPPOAdvantages times the batch's advantages with the PPO
// defaults' baseline (fork, normalised) on all cores.
func BenchmarkPPOAdvantages(b *testing.B) {
	tr, ab, states, _, _ := ppoBenchBatch(b)
	g, cfg := tr.g, tr.cfg
	lens := make([]int, len(ab.Targets))
	for i := range lens {
		lens[i] = ab.Len(i)
	}
	forkAt := func(r int) []int32 { return tr.smp.forkAt.At(&ab.Batch, r) } // as the step lists them
	var dst []float64
	for b.Loop() {
		dst, _ = tokenAdvantagesScale(lens, ab.Hit, states, g.NumStates(), ab.Targets, g.W(), cfg.Beta, cfg.Baseline, tr.smp.fork, forkAt, cfg.NormalizeAdvantages, dst)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ab.Tokens()), "ns/token")
}
