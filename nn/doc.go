// Package nn holds the policies, on top of gorgonia: the models, their
// sampler, and the step that trains them. It knows vocabulary sizes, token
// ids and masks (which next tokens each token may be followed by), never
// the graphs of the task.
//
// Its layers, from the bottom up:
//
//   - nn/kernels: plain-Go numerical kernels (AVX2 and FMA assembly,
//     gonum's BLAS, a table-driven exponential), no gorgonia;
//   - nn/ops: the custom gorgonia ops of the fast models, forwards and
//     backwards written by hand over the kernels;
//   - nn/stock: the same layers from gorgonia's stock ops only;
//   - nn/solvers: the optimisers;
//   - nn (this package): the models, their sampler and Step.
//
// The pieces here:
//
//   - Support: the allowed transitions, one compressed row per token, so
//     invalid transitions are never stored and no -Inf logit enters
//     arithmetic (support.go).
//   - Bigram: the paper's linear-softmax bigram policy restricted to a
//     Support, with parameters only for the rows that are trained, and the
//     two losses trainers build on it: a weighted log-likelihood
//     (cross-entropy) and an expected cost (policy-gradient surrogate)
//     (bigram.go).
//   - Transformer: one causal self-attention layer over the past tokens
//     with the world model's mask on its logits, initialised exactly to a
//     given bigram, either at any width by a learnable per-entry logit
//     table B beside a zero unembedding (Init "table") or by the paper's
//     construction at width = vocabulary (Init "identity")
//     (transformer.go, layernorm.go); its training graph over windows of
//     long sequences (Forward, TransformerBatch; transformer_window.go),
//     of fused ops or of stock ops (Ops; transformer_stock.go); and a
//     plain-Go sampler on shared, precomputed tables (Snapshot, Sampler;
//     transformer_sampler.go) whose attention is the graph's own routine
//     (kernels.Attend).
//   - TableBatch: a logit table's per-token log-probabilities with constant
//     offsets, the graph of a transformer's table pass (table.go).
//   - Step: one tape machine per graph running cost, gradient and update
//     (step.go).
//
// What autodiff does. Every loss is a gorgonia graph, and every gradient
// of a loss with respect to the parameters comes from gorgonia's symbolic
// autodiff (G.Grad in NewStep). With Ops Stock every node of a
// transformer's graph is a stock gorgonia op, so autodiff derives every
// derivative. With Ops Fused (the default) the graph's layers are custom
// ops (package ops): autodiff chains the loss to them and calls their
// backwards, which are written by hand; the Bigram's graph is stock ops
// but for one such op, its log-softmax. Those backwards
// (Attention, LayerNorm, Unembed, TableLogSoftmax, Gather,
// ClippedSurrogate, TableClippedSurrogate and the bigram's
// SegmentLogSoftmax and SegmentLogLik) are the only hand-written
// derivatives; each is checked
// against autodiff of the same function in stock ops, in package ops' tests
// on random inputs of several shapes and on both kernel paths, and the
// whole fused transformer graph against the stock one
// (TestForwardStockMatchesFused). Everything is float64.
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
