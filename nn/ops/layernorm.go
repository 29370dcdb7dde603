package ops

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// LayerNorm adds the fused layer norm op: LN(h) = (h - mean(h)) /
// sqrt(var(h) + eps) * gain + bias for each row of h (N, D), mean and
// (biased) variance over the D features, gain and bias (D) vectors. Its
// forward is kernels.LayerNorm row by row (the sampler's); its
// hand-written backward recomputes each row's mean and deviation from h:
//
//	dh = (dx - mean(dx) - xhat mean(dx xhat)) / sigma,  dx = g * gain,
//	dgain = sum_rows g * xhat,  dbias = sum_rows g,
//
// xhat = (h - mean) / sigma. Rows are spread over the cores; the sums over
// rows run in fixed blocks (kernels.BlockSum). TestLayerNormMatchesStock
// checks it against gorgonia's autodiff of stock.LayerNorm.
func LayerNorm(h, gain, bias *G.Node) (*G.Node, error) {
	n, d := h.Shape()[0], h.Shape()[1]
	return applyFused("LayerNorm", &layerNormKernel{n: n, d: d}, tensor.Shape{n, d}, h, gain, bias) // (N, D), (D), (D) -> (N, D)
}

// layerNormKernel computes LayerNorm's forward and backward.
type layerNormKernel struct {
	n, d    int
	scratch []float64 // BlockSum's
}

func (k *layerNormKernel) forward(out []float64, in [][]float64) error {
	h, gain, bias := in[0], in[1], in[2]
	d := k.d
	kernels.ParallelFor(k.n, 64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := out[i*d : (i+1)*d]
			copy(o, h[i*d:(i+1)*d])
			kernels.LayerNorm(o, gain, bias)
		}
	})
	return nil
}

func (k *layerNormKernel) backward(grads [][]float64, in [][]float64, g []float64) error {
	h, gain := in[0], in[1]
	dh, dgain, dbias := grads[0], grads[1], grads[2]
	d := k.d
	fd := float64(d)
	acc := make([]float64, 2*d) // dgain | dbias
	k.scratch = kernels.BlockSum(acc, k.n, k.scratch, func(i int, sums []float64) {
		row, gr, o := h[i*d:(i+1)*d], g[i*d:(i+1)*d], dh[i*d:(i+1)*d]
		mean, sigma := kernels.LayerNormStats(row)
		inv := 1 / sigma
		a, b := 0.0, 0.0 // sum dx, sum dx xhat
		for j, x := range row {
			dx := gr[j] * gain[j]
			a += dx
			b += dx * (x - mean) * inv
		}
		a, b = a/fd, b/fd
		for j, x := range row {
			xhat := (x - mean) * inv
			o[j] = (gr[j]*gain[j] - a - xhat*b) * inv
			sums[j] += gr[j] * xhat
			sums[d+j] += gr[j]
		}
	})
	copy(dgain, acc[:d])
	copy(dbias, acc[d:])
	return nil
}
