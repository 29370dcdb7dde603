package trainers

import (
	"context"
	"runtime"
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
// second of step and per second of the windows pass alone, seconds per
// step, CPU seconds per step (all cores summed) and the wall seconds per
// step of the sampling (its rollouts), the table pass and the windows
// pass; and the memory the trainer keeps after its steps (live-MB: the
// heap after a collection, the trainer still in use) per token of the
// largest batch it sampled (live-B/token): its buffers are kept from step
// to step at their largest, so this is what a run's peak grows with.
func BenchmarkTransformerPPOStep(b *testing.B) {
	for _, c := range benchStepCases() {
		b.Run(c.name, func(b *testing.B) {
			tr, _ := benchTrainerOf(b, c.g, c.hindsight)
			if _, err := tr.measure(context.Background()); err != nil {
				b.Fatal(err)
			}
			if err := tr.Step(context.Background()); err != nil { // warm up: the batch buffers grow once
				b.Fatal(err)
			}
			sampled, trained := 0, 0
			largest := tr.smp.tokens // the warm-up's batch, and the measurement's before it
			l := tr.l.(*transformer)
			pass, table, smpT := l.passTime, l.tableTime, l.sampleTime
			cpu := cpuSeconds()
			for b.Loop() {
				s0, t0 := tr.smp.tokens, tr.smp.trained
				if err := tr.Step(context.Background()); err != nil {
					b.Fatal(err)
				}
				sampled, trained = sampled+tr.smp.tokens-s0, trained+tr.smp.trained-t0
				largest = max(largest, tr.smp.tokens-s0)
			}
			sec := b.Elapsed().Seconds()
			b.StopTimer()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			runtime.KeepAlive(tr)
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MB")
			b.ReportMetric(float64(ms.HeapAlloc)/float64(largest), "live-B/token")
			b.ReportMetric(float64(sampled)/sec, "sampled-tokens/s")
			b.ReportMetric(float64(trained)/sec, "trained-tokens/s")
			b.ReportMetric(float64(trained)/(l.passTime-pass).Seconds(), "windows-tokens/s")
			b.ReportMetric(sec/float64(b.N), "s/step")
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/step")
			b.ReportMetric((l.tableTime-table).Seconds()/float64(b.N), "table-s/step")
			b.ReportMetric((l.passTime-pass).Seconds()/float64(b.N), "windows-s/step")
			b.ReportMetric((l.sampleTime-smpT).Seconds()/float64(b.N), "sample-s/step")
		})
	}
}

// BenchmarkTransformerUpdate times the transformer's PPO update alone,
// without its sampling: one batch sampled once as BenchmarkTransformerPPOStep
// samples it (defaults, from the pretrained bigram, learning rates 1e-12 so
// the batch stays the policy's), then updates on it: 2 epochs of 2
// minibatches of the table pass over every sampled token at a trained state
// and the windows pass over the trained-token budget, and PPO's ratio
// replay (which a run takes only for its logged rows: an update here is a
// logged step's). It reports tokens trained through the whole model (the windows)
// per second of update and per second of the windows pass alone, the
// table pass's tokens per second of update, seconds per update and CPU
// seconds per update (all cores summed; other processes on a shared
// machine disturb it less than wall time), and the wall seconds per
// update of the table pass, of the windows pass and of the ratio replay.
func BenchmarkTransformerUpdate(b *testing.B) {
	for _, c := range benchSizes {
		b.Run(c.name, func(b *testing.B) {
			tr, cfg := benchTrainer(b, c.g)
			ab, states, adv, div, err := tr.sampledBatch(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			update := func() ratioStats {
				rs, err := tr.sampled().update(ab, states, adv, div)
				if err == nil && rs.later != nil {
					_, err = rs.later()
				}
				if err != nil {
					b.Fatal(err)
				}
				return rs
			}
			update() // warm up: the buffers grow once
			epochs, _ := cfg.Trainer.epochs(cfg)
			table := 0
			for _, s := range states {
				if tr.trained[s] {
					table += epochs
				}
			}
			trained := 0
			l := tr.l.(*transformer)
			pass, tableTime, replay := l.passTime, l.tableTime, l.replayTime
			cpu := cpuSeconds()
			for b.Loop() {
				trained += update().trained
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(trained)/sec, "trained-tokens/s")
			b.ReportMetric(float64(trained)/(l.passTime-pass).Seconds(), "windows-tokens/s")
			b.ReportMetric(float64(table*b.N)/sec, "table-tokens/s")
			b.ReportMetric(sec/float64(b.N), "s/update")
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/update")
			b.ReportMetric((l.tableTime-tableTime).Seconds()/float64(b.N), "table-s/update")
			b.ReportMetric((l.passTime-pass).Seconds()/float64(b.N), "windows-s/update")
			b.ReportMetric((l.replayTime-replay).Seconds()/float64(b.N), "replay-s/update")
		})
	}
}

// BenchmarkTransformerRollouts times the transformer's batched rollouts at
// W=K=3, L=2 (KV-cache sampler, no graph per token) on all cores.
func BenchmarkTransformerRollouts(b *testing.B) {
	g := graph(b, tasks.Config{W: 3, K: 3, L: 2})
	tr := newTrainer(b, ppoConfig(), DefaultTransformerOptions(PPO), g, nil)
	tokens := 0
	for i := 0; b.Loop(); i++ {
		ab, err := eval.AgentRollouts(context.Background(), g, tr.Agents(), 256, 1<<20, uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		tokens += ab.Tokens()
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// benchSizes are the transformer benchmarks' graphs: the smallest of the
// README's examples and the paper's.
// benchStep is a graph of benchSizes, with rollouts or with walks of
// hindsight targets (name "...-hindsight").
type benchStep struct {
	name      string
	g         tasks.Config
	hindsight bool
}

// benchStepCases are benchSizes' graphs, each both ways.
func benchStepCases() []benchStep {
	var out []benchStep
	for _, c := range benchSizes {
		out = append(out, benchStep{c.name, c.g, false}, benchStep{c.name + "-hindsight", c.g, true})
	}
	return out
}

var benchSizes = []struct {
	name string
	g    tasks.Config
}{{"W3K3L2", tasks.Config{W: 3, K: 3, L: 2}}, {"W15K15L5", tasks.Config{W: 15, K: 15, L: 5}}}

// benchTrainer is a transformer PPO trainer at its defaults on graph c
// with learning rates of 1e-12, so that its policy and batch size stay
// fixed from step to step.
func benchTrainer(b *testing.B, c tasks.Config) (*Trainer, Config) {
	return benchTrainerOf(b, c, false)
}

// benchTrainerOf is benchTrainer, drawing walks with hindsight targets
// (Config.Hindsight) when hindsight is set.
func benchTrainerOf(b *testing.B, c tasks.Config, hindsight bool) (*Trainer, Config) {
	cfg := ppoConfig()
	cfg.Hindsight = hindsight
	cfg.Optim.LR = 1e-12
	opts := DefaultTransformerOptions(PPO)
	opts.TableLR = 1e-12
	return newTrainer(b, cfg, opts, graph(b, c), nil), cfg
}
