package trainers

import (
	"context"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// BenchmarkTransformerPPOStep times PPO iterations of the transformer with
// its defaults (width 64, 128 rollouts, 2 epochs of 2 minibatches, the
// table pass on every token) from the pretrained bigram, at W=K=3, L=2
// and at the paper's W=K=15, L=5 (about 6.5M sampled tokens a step; run
// it with -benchtime 3x), with learning rates of 1e-12 to keep the policy
// and the batch size fixed. It reports sampled tokens per second, tokens
// trained through the whole model (the windows, over the epochs) per
// second, and seconds per step.
func BenchmarkTransformerPPOStep(b *testing.B) {
	for _, c := range []struct {
		name string
		g    tasks.Config
	}{{"W3K3L2", tasks.Config{W: 3, K: 3, L: 2}}, {"W15K15L5", tasks.Config{W: 15, K: 15, L: 5}}} {
		b.Run(c.name, func(b *testing.B) {
			g := graph(b, c.g)
			cfg := ppoConfig().Resolve(TransformerModel)
			cfg.Optim.LR = 1e-12
			opts := DefaultTransformerOptions()
			opts.TableLR = 1e-12
			tr := newTrainer(b, cfg, opts, g, nil)
			if _, err := tr.measure(context.Background()); err != nil {
				b.Fatal(err)
			}
			if err := tr.Step(context.Background()); err != nil { // warm up: the batch buffers grow once
				b.Fatal(err)
			}
			sampled, trained := 0, 0
			for b.Loop() {
				s0, t0 := tr.smp.tokens, tr.smp.trained
				if err := tr.Step(context.Background()); err != nil {
					b.Fatal(err)
				}
				sampled, trained = sampled+tr.smp.tokens-s0, trained+tr.smp.trained-t0
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(sampled)/sec, "sampled-tokens/s")
			b.ReportMetric(float64(trained)/sec, "trained-tokens/s")
			b.ReportMetric(sec/float64(b.N), "s/step")
		})
	}
}

// BenchmarkTransformerRollouts times the transformer's batched rollouts at
// W=K=3, L=2 (KV-cache sampler, no graph per token) on all cores.
func BenchmarkTransformerRollouts(b *testing.B) {
	g := graph(b, tasks.Config{W: 3, K: 3, L: 2})
	tr := newTrainer(b, ppoConfig(), DefaultTransformerOptions(), g, nil)
	tokens := 0
	for i := 0; b.Loop(); i++ {
		ab, err := eval.AgentRollouts(context.Background(), g, tr.l.newAgent(), 256, 1<<20, uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		tokens += ab.Tokens()
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}
