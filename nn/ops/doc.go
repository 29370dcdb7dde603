// Package ops holds the custom gorgonia ops the fast ("fused") models of
// package nn are built from, each a forward and a backward written by hand
// in plain Go over the kernels of package kernels:
//
//   - Attention: embeddings, banded causal multi-head attention over the
//     last Context positions and the prompt, and the residual, for a
//     batch laid out by a Layout (attention.go, tables.go);
//   - LayerNorm (layernorm.go);
//   - Unembed: the logits of each position's valid next tokens only, the
//     per-entry table B, and the log-softmax (unembed.go);
//   - TableLogSoftmax: a logit table plus constant offsets, log-softmax per
//     token (table.go);
//   - Gather: entries or rows picked by index, the gradient scatter-added
//     (gather.go);
//   - SegmentLogSoftmax: a log-softmax over ragged rows, the bigram's
//     (logsoftmax.go);
//   - SegmentLogLik: the weighted log-likelihood of ragged rows, the
//     bigram's log-softmax and weighted sum as one node (loglik.go);
//   - ClippedSurrogate: PPO's clipped surrogate per token (clipped.go);
//   - TableClippedSurrogate: TableLogSoftmax, Gather and ClippedSurrogate
//     over a table fill's taken tokens as one op, the transformer's table
//     pass under PPO (table_surrogate.go).
//
// gorgonia's autodiff (G.Grad) treats each op as one node: it chains a
// loss's gradient to the op's output and calls the op's backward for the
// gradients of its inputs. Those backwards are the only derivatives of the
// project written by hand. Each is checked against gorgonia's autodiff of
// the same function built from stock ops (package stock), in values and in
// the gradient of every input, on random inputs of several shapes and on
// both kernel paths (AVX2 and gonum's): TestAttentionMatchesStock,
// TestLayerNormMatchesStock, TestUnembedMatchesStock,
// TestTableLogSoftmaxMatchesStock, TestGatherMatchesByIndices,
// TestSegmentLogSoftmaxMatchesStock, TestSegmentLogLikMatchesStock,
// TestClippedSurrogateMatchesStock and TestTableClippedSurrogateMatchesStock
// (which also holds it to the three ops it fuses, bit for bit:
// TestTableClippedSurrogateMatchesOps).
//
// An op writes its output and gradients into buffers it keeps from run to
// run (fused.go): a graph runs on one tape machine, its backward always
// follows its forward, and nothing else writes them.
package ops
