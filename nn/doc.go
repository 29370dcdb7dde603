// Package nn holds the policies and the numerical pieces they are trained
// with, on top of gorgonia. It knows vocabulary sizes, token ids and masks
// (which next tokens each token may be followed by), never the graphs of the
// task.
//
// The pieces:
//
//   - Support: the allowed transitions, one compressed row per token, so
//     invalid transitions are never stored and no -Inf logit enters
//     arithmetic (support.go).
//   - SegmentLogSoftmax: a fused gorgonia op computing a stable log-softmax
//     over ragged rows of a vector, with a one-pass backward; it replaces
//     gorgonia's SoftMax, LogSoftMax and LogSumExp, which are wrong in
//     v0.9.18 (logsoftmax.go).
//   - Bigram: the paper's linear-softmax bigram policy restricted to a
//     Support, with parameters only for the rows that are trained, and the
//     two losses trainers build on it: a weighted log-likelihood
//     (cross-entropy) and an expected cost (policy-gradient surrogate)
//     (bigram.go).
//   - Step: one tape machine per graph running cost, gradient and update
//     (step.go).
//   - Transformer: one causal self-attention layer over the past tokens
//     with the world model's mask on its logits, initialised exactly to a
//     given bigram, either at any width by a learnable per-entry logit
//     table B beside a zero unembedding (Init "table") or by the paper's
//     construction at width = vocabulary (Init "identity": one-hot
//     embedding, W_O = 0, the bigram's logits in the unembedding)
//     (transformer.go); a fixed-shape training graph over windows of long
//     sequences made of three fused ops (Forward; transformer_window.go,
//     transformer_layout.go); and a plain-Go sampler on shared,
//     precomputed tables whose log-probabilities equal the graph's
//     (Snapshot, Sampler; transformer_sampler.go). The trainers train it
//     as their transformer model.
//   - Fused ops: a gorgonia op made of a plain-Go forward and a backward
//     computing the gradients of all its inputs in one pass, writing into
//     buffers kept from run to run (fused.go), over vector kernels (AVX2
//     and FMA assembly when the CPU has them, gonum's otherwise;
//     kernels.go, kernels_amd64.s), a table-driven exponential (exp.go)
//     and parallel matrix products split over the cores (kernels.go):
//     Attention (embeddings, banded causal attention over the last Context
//     positions and the prompt, residual; attention.go), LayerNorm
//     (layernorm.go) and Unembed (logits of the valid next tokens only,
//     per-entry table, log-softmax; unembed.go).
//
// Every gradient of a loss comes from gorgonia's autodiff (G.Grad); the only
// hand-written derivatives are the backwards of SegmentLogSoftmax, of the
// row gather (gather.go) and of the three fused ops, each checked against
// finite differences in the tests (logsoftmax_test.go, fused_test.go), and
// the fused transformer graph against the same graph built from stock
// gorgonia ops, in values and gradients (TestTransformerMatchesReference).
// Everything is float64.
//
// A typical policy-gradient step:
//
//	b, _ := nn.NewBigram(cfg, nil)
//	c := G.NewVector(b.Graph(), G.Float64, G.WithShape(b.NumParams()), G.WithName("c"))
//	cost, _ := b.ExpectedCost(c)
//	solver, _ := solvers.New(solvers.DefaultConfig())
//	step, _ := nn.NewStep(cost, b.Learnables(), solver)
//	defer step.Close()
//	for ... {
//		G.Let(c, costs) // (P) constant per-transition costs
//		step.Run()
//	}
package nn
