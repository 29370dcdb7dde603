package nn

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// layerNormEps is the eps of LN(h) = (h - mean(h)) / sqrt(var(h) + eps) *
// gain + bias.
const layerNormEps = 1e-5

// maxCorrection bounds the magnitude of the unembedding entries the exact
// initialisation with layer norm writes on masked transitions: logits must
// stay far from maskLogit (|value| < 1e8 keeps them exact).
const maxCorrection = 1e7

// layerNorm adds the fused layer norm op: LN(h) = (h - mean(h)) /
// sqrt(var(h) + eps) * gain + bias for each row of h (N, D), mean and
// (biased) variance over the D features, gain and bias (D) vectors. Its
// forward is layerNormVec row by row (the sampler's); its backward
// recomputes each row's mean and deviation from h:
//
//	dh = (dx - mean(dx) - xhat mean(dx xhat)) / sigma,  dx = g * gain,
//	dgain = sum_rows g * xhat,  dbias = sum_rows g,
//
// xhat = (h - mean) / sigma. Rows are spread over the cores; the sums over
// rows run in fixed blocks (blockSum).
func layerNorm(h, gain, bias *G.Node) (*G.Node, error) {
	n, d := h.Shape()[0], h.Shape()[1]
	return applyFused("LayerNorm", &layerNormKernel{n: n, d: d}, tensor.Shape{n, d}, h, gain, bias) // (N, D), (D), (D) -> (N, D)
}

// layerNormKernel computes layerNorm's forward and backward.
type layerNormKernel struct {
	n, d    int
	scratch []float64 // blockSum's
}

func (k *layerNormKernel) forward(out []float64, in [][]float64) error {
	h, gain, bias := in[0], in[1], in[2]
	d := k.d
	parallelFor(k.n, 64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := out[i*d : (i+1)*d]
			copy(o, h[i*d:(i+1)*d])
			layerNormVec(o, gain, bias)
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
	k.scratch = blockSum(acc, k.n, k.scratch, func(i int, sums []float64) {
		row, gr, o := h[i*d:(i+1)*d], g[i*d:(i+1)*d], dh[i*d:(i+1)*d]
		mean, sigma := rowStats(row)
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

// rowStats returns the mean of h and sqrt(var(h) + eps), as layerNormVec
// computes them (to rounding), without changing h.
func rowStats(h []float64) (mean, sigma float64) {
	d := float64(len(h))
	mean = floats.Sum(h) / d
	var v0, v1, v2, v3 float64 // four chains: a single one waits on every add
	i := 0
	for ; i+4 <= len(h); i += 4 {
		c0, c1, c2, c3 := h[i]-mean, h[i+1]-mean, h[i+2]-mean, h[i+3]-mean
		v0, v1, v2, v3 = v0+c0*c0, v1+c1*c1, v2+c2*c2, v3+c3*c3
	}
	for ; i < len(h); i++ {
		c := h[i] - mean
		v0 += c * c
	}
	return mean, math.Sqrt(((v0+v1)+(v2+v3))/d + layerNormEps)
}

// layerNormVec overwrites h (D) with LN(h) = (h - mean(h)) / sqrt(var(h) +
// eps) * gain + bias, the forward of layerNorm for one
// position (and the sampler's).
func layerNormVec(h, gain, bias []float64) {
	d := float64(len(h))
	floats.AddConst(-floats.Sum(h)/d, h) // center
	inv := 1 / math.Sqrt(floats.Dot(h, h)/d+layerNormEps)
	gain, bias = gain[:len(h)], bias[:len(h)]
	for i, x := range h {
		h[i] = x*inv*gain[i] + bias[i]
	}
}

// layerNormUnembedding returns the (V, V) unembedding U that, after layer
// norm with gain 1 and bias 0 of the one-hot residual stream h = e_x (E = I,
// P = 0, W_O = 0 at the exact initialisation), gives logits equal to the
// bigram's on every support row, bigramLogits holding one logit per support
// entry in entry order.
//
// Every one-hot e_x has mean 1/V and variance s2 = (1/V)(1 - 1/V), so
// LN(e_x) = (e_x - 1/V) / sigma with sigma = sqrt(s2 + eps), and the logit
// of a after x is (U[x][a] - mean_y U[y][a]) / sigma. With U = sigma M it is
// M[x][a] - S_a/V, S_a the sum of column a of M. On support entries M holds
// the bigram logit; masked entries (a not in Row(x)) never reach a
// probability, so they are free: the first masked row x_a of each column a
// takes -(sum of the column's support entries), every other masked entry 0.
// Then S_a = 0 for every a and the logits are exactly the bigram's. A column
// with no masked row (a follows every token) cannot be corrected this way:
// that is an error, as is a correction of magnitude >= maxCorrection.
func layerNormUnembedding(s Support, bigramLogits []float64) ([]float64, error) {
	v := s.Rows()
	m := make([]float64, v*v)
	colSum := make([]float64, v)
	inRow := make([]bool, v*v)
	for x := 0; x < v; x++ {
		for e := s.Offsets[x]; e < s.Offsets[x+1]; e++ {
			a := s.Next[e]
			m[x*v+a] = bigramLogits[e]
			colSum[a] += bigramLogits[e]
			inRow[x*v+a] = true
		}
	}
	for a := 0; a < v; a++ {
		xa := -1
		for x := 0; x < v && xa < 0; x++ {
			if !inRow[x*v+a] {
				xa = x
			}
		}
		if xa < 0 {
			return nil, fmt.Errorf("token %d follows every token: the exact initialisation with layer_norm needs a masked transition into every token", a)
		}
		if math.Abs(colSum[a]) >= maxCorrection {
			return nil, fmt.Errorf("token %d: the logits into it sum to %g: want magnitude < %g", a, colSum[a], maxCorrection)
		}
		m[xa*v+a] = -colSum[a]
	}
	fv := float64(v)
	sigma := math.Sqrt((1/fv)*(1-1/fv) + layerNormEps)
	for i := range m {
		m[i] *= sigma
	}
	return m, nil
}
