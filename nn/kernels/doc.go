// Package kernels holds the numerical kernels the fused ops of package ops
// and the sampler of package nn are made of, in plain Go over float64
// slices, with no gorgonia: vector kernels in AVX2 and FMA assembly when
// the CPU has them (kernels_amd64.s; gonum's code otherwise, or after
// UseAVX(false)), gonum's blocked parallel matrix products, a table-driven
// exponential (Exp, Exps), math.Log four at a time to its bits (Logs), the
// row log-softmax and layer norm, and the attention of one query (Attend)
// that the training graph and the sampler both call, so the sampler
// computes what the graph computes by construction.
//
// Nothing here is differentiated: the backwards that use these kernels are
// written by hand in package ops and checked there against gorgonia's
// autodiff of stock ops, on these kernels and on gonum's.
package kernels
