package nn

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// benchSizes are the task graphs the transformer benchmarks run on: the
// paper's W=K=15, L=5 and the small W=K=3, L=2.
var benchSizes = []struct {
	name    string
	w, k, l int
}{
	{"W15K15L5", 15, 15, 5},
	{"W3K3L2", 3, 3, 2},
}

// benchSupport returns the support of a task graph (its CSR of valid next
// states) and random trained-like bigram logits on it.
func benchSupport(b *testing.B, w, k, l int, rng *rand.Rand) (Support, []float64) {
	b.Helper()
	g, err := tasks.New(tasks.Config{W: w, K: k, L: l})
	if err != nil {
		b.Fatal(err)
	}
	s := Support{Offsets: g.Offsets, Next: g.Next}
	return s, randomVector(rng, s.NNZ(), 1)
}

// benchWindows cuts random walks on s into rows of a (batch, C+stride+1)
// graph as the trainers do: each row trains stride positions after C tokens
// of left context and holds the token taken at its last position. It
// returns the rows of every run and the number of trained tokens per run.
func benchWindows(rng *rand.Rand, s Support, runs, batch, ctx, stride int) ([][]Window, int) {
	out := make([][]Window, runs)
	trained := 0
	for r := range out {
		rows := make([]Window, batch)
		for i := range rows {
			start := ctx + rng.IntN(1000)
			seq := randomWalk(rng, s, start+stride+1)
			rows[i] = Window{Prompt: -1, Start: start - ctx, Tokens: seq[start-ctx:]}
		}
		out[r] = rows
		trained = batch * stride
	}
	return out, trained
}

// benchTrain measures PPO-like updates: runs fills of a (batch, C+stride+1)
// graph accumulated with Step.Accumulate, then one Adam update (Apply); the
// loss is a weighted sum of Taken with random advantages on the trained
// positions. It reports trained tokens per second.
func benchTrain(b *testing.B, s Support, logits []float64, cfg TransformerConfig, batch, stride, runs int, rng *rand.Rand) {
	tr, err := NewTransformerFromBigram(cfg, logits, rng)
	if err != nil {
		b.Fatal(err)
	}
	t := cfg.Context + stride + 1
	fw, err := tr.Forward(batch, t, Fused)
	if err != nil {
		b.Fatal(err)
	}
	w := G.NewVector(tr.Graph(), G.Float64, G.WithShape(batch*t), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(batch*t), tensor.WithBacking(make([]float64, batch*t))))) // (N)
	ll, err := fw.WeightedTakenLogLik(w)
	if err != nil {
		b.Fatal(err)
	}
	solver, err := solvers.New(solvers.Config{Name: "adam", LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	if err != nil {
		b.Fatal(err)
	}
	step, err := NewStep(ll, tr.Learnables(), solver)
	if err != nil {
		b.Fatal(err)
	}
	defer step.Close()
	fills, trained := benchWindows(rng, s, runs, batch, cfg.Context, stride)
	weights := w.Value().Data().([]float64)
	for i := range weights {
		if k := i % t; k >= cfg.Context && k < cfg.Context+stride {
			weights[i] = rng.NormFloat64() / float64(batch*stride)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for b.Loop() {
		for _, rows := range fills {
			if err := fw.SetWindows(rows); err != nil {
				b.Fatal(err)
			}
			if _, err := step.Accumulate(); err != nil {
				b.Fatal(err)
			}
		}
		if err := step.Apply(); err != nil {
			b.Fatal(err)
		}
	}
	tokens := float64(b.N * runs * trained)
	b.ReportMetric(tokens/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric((cpuSeconds()-cpu)*1e9/tokens, "cpu-ns/token")
	if cfg.Init == "table" {
		b.ReportMetric(windowsMACs(cfg, fills)/float64(runs*trained), "macs/token")
	}
}

// windowsMACs counts the multiply-adds of one update of the fused ops
// (Init "table") over fills, from their shapes: at each position of a
// row, the attention over its keys (per head the scores, D/H each, and
// the values through W_O, D each) and its backward (twice both), and the
// unembedding's logits over the position's row of valid next tokens and
// their two gradients; per fill, the backward's products of the token
// and position tables with the embeddings and W_all (dW_all and dE, dP)
// and W_V and W_O's split; per update, the tables of the fills' distinct
// tokens and of the positions, and W_all. Layer norm, log-softmax, the
// loss and Adam are a few operations per value, not counted.
func windowsMACs(cfg TransformerConfig, fills [][]Window) float64 {
	d, hd, c := cfg.Dim, cfg.Heads, cfg.Context
	dh, w := d/hd, (2+hd)*d
	keys := 0
	if cfg.Prompt {
		keys = 1
	}
	union := map[int]bool{}
	macs := 0
	for _, rows := range fills {
		uniq := map[int]bool{}
		for _, r := range rows {
			if cfg.Prompt {
				uniq[r.Prompt] = true
			}
			for t, x := range r.Tokens {
				uniq[x] = true
				nk := min(t+1, c) + keys
				macs += 3 * nk * (dh + d) * hd // the scores and values, then their backward (a matrix-vector product and an outer product each)
				macs += 3 * len(cfg.Support.Row(x)) * d
			}
		}
		for x := range uniq {
			union[x] = true
		}
		macs += 2*len(uniq)*d*w + 2*c*d*w + 2*hd*d*dh*d
	}
	macs += len(union)*d*w + c*d*w + hd*d*dh*d
	return float64(macs)
}

// benchWidths are the widths the benchmarks run at (Init "table").
var benchWidths = []int{16, 32, 64}

// The benchmarks report wall-time throughput (tokens/s, on all cores) and
// the CPU time spent per token (cpu-ns/token, all cores summed), which
// other processes on a shared machine disturb less.

// BenchmarkTransformerTrain measures PPO-like updates (benchTrain) of a
// one-head transformer with a window of 8 and learned positions, rows of
// 56 trained tokens, at widths 16, 32 and 64 with Init "table" and, on the
// small graph, at width = vocabulary with Init "identity".
func BenchmarkTransformerTrain(b *testing.B) {
	const stride, runs = 56, 4
	for _, sz := range benchSizes {
		for _, batch := range []int{64, 256} {
			for _, d := range append(benchWidths, 0) {
				name := fmt.Sprintf("%s/B%d/D%d", sz.name, batch, d)
				if d == 0 {
					if sz.w > 3 {
						continue
					}
					name = fmt.Sprintf("%s/B%d/identity", sz.name, batch)
				}
				b.Run(name, func(b *testing.B) {
					rng := rand.New(rand.NewPCG(1, 2))
					s, logits := benchSupport(b, sz.w, sz.k, sz.l, rng)
					cfg := TransformerConfig{Vocab: s.Rows(), Support: s, TransformerArch: TransformerArch{Dim: d, Heads: 1, Context: 8, Positional: "learned", Init: "table"}}
					if d == 0 {
						cfg.Dim, cfg.Init = s.Rows(), "identity"
					}
					benchTrain(b, s, logits, cfg, batch, stride, runs, rng)
				})
			}
		}
	}
}

// benchSample measures sampling on all cores (RunParallel, one sampler per
// goroutine): Push then Sample, sequences of 256 tokens. newSampler returns
// a sampler for one goroutine; with prompt, each sequence gets a random
// prompt.
func benchSample(b *testing.B, s Support, prompt bool, newSampler func() *TransformerSampler) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	var seed atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.Add(1), 7))
		smp := newSampler()
		x := rng.IntN(s.Rows())
		reset := func() {
			p := -1
			if prompt {
				p = rng.IntN(s.Rows())
			}
			if err := smp.ResetAt(0, p); err != nil {
				b.Error(err)
			}
		}
		reset()
		for pb.Next() {
			if smp.Len() == 256 {
				reset()
			}
			if _, err := smp.Push(x); err != nil {
				b.Error(err)
				return
			}
			var err error
			if x, err = smp.Sample(rng); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric((cpuSeconds()-cpu)*1e9/float64(b.N), "cpu-ns/token")
}

// BenchmarkTransformerSampler measures sampling on all cores, one
// sampler per goroutine on one shared snapshot: one head, a window of 8,
// learned positions, at widths 16, 32 and 64 (Init "table"), with and
// without prompt and layer norm at width 64.
func BenchmarkTransformerSampler(b *testing.B) {
	for _, sz := range benchSizes {
		for _, d := range benchWidths {
			for _, variant := range []string{"", "-prompt-ln"} {
				if variant != "" && d != 64 {
					continue
				}
				b.Run(fmt.Sprintf("%s/D%d%s", sz.name, d, variant), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(1, 2))
					s, logits := benchSupport(b, sz.w, sz.k, sz.l, rng)
					cfg := TransformerConfig{Vocab: s.Rows(), Support: s, TransformerArch: TransformerArch{Dim: d, Heads: 1, Context: 8, Positional: "learned", Init: "table"}}
					if variant != "" {
						cfg.Prompt, cfg.LayerNorm = true, true
					}
					tr, err := NewTransformerFromBigram(cfg, logits, rng)
					if err != nil {
						b.Fatal(err)
					}
					randomizeBench(b, tr, rng)
					sn := tr.Snapshot()
					benchSample(b, s, cfg.Prompt, sn.Sampler)
				})
			}
		}
	}
}

// randomizeBench moves every parameter by N(0, 0.1^2) so attention and the
// unembedding are not at their initial values.
func randomizeBench(b *testing.B, tr *Transformer, rng *rand.Rand) {
	vals := tr.ParamValues()
	for _, v := range vals {
		for i := range v {
			v[i] += 0.1 * rng.NormFloat64()
		}
	}
	if err := tr.SetParamValues(vals); err != nil {
		b.Fatal(err)
	}
}
