package nn

import (
	"fmt"
	"math"

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

// layerNorm builds LN(h) = (h - mean(h)) / sqrt(var(h) + eps) * gain + bias
// for each row of h (N, D), mean and (biased) variance over the D features,
// gain and bias (D) vectors. Row means are products with a constant (D, 1)
// column of 1/D; rows are broadcast by products with constant columns or
// rows of ones (exact: products with 1 and sums with 0), so only stock ops
// with well-tested backwards enter the graph.
func layerNorm(h, gain, bias *G.Node) (*G.Node, error) {
	g := h.Graph()
	n, d := h.Shape()[0], h.Shape()[1]
	avg := G.NewMatrix(g, G.Float64, G.WithShape(d, 1), G.WithName("ln_avg"),
		G.WithValue(filled(d, 1, 1/float64(d)))) // (D, 1)
	perCol := G.NewMatrix(g, G.Float64, G.WithShape(1, d), G.WithName("ln_cols"),
		G.WithValue(filled(1, d, 1))) // (1, D)
	perRow := G.NewMatrix(g, G.Float64, G.WithShape(n, 1), G.WithName("ln_rows"),
		G.WithValue(filled(n, 1, 1))) // (N, 1)
	eps := G.NewConstant(layerNormEps, G.WithName("ln_eps")) // ()

	mean, err := G.Mul(h, avg) // (N, D) x (D, 1) -> (N, 1)
	if err != nil {
		return nil, err
	}
	spread, err := G.Mul(mean, perCol) // (N, 1) x (1, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	c, err := G.Sub(h, spread) // (N, D) - (N, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	sq, err := G.HadamardProd(c, c) // (N, D) * (N, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	variance, err := G.Mul(sq, avg) // (N, D) x (D, 1) -> (N, 1)
	if err != nil {
		return nil, err
	}
	if variance, err = G.Add(variance, eps); err != nil { // (N, 1) + () -> (N, 1)
		return nil, err
	}
	sigma, err := G.Sqrt(variance) // (N, 1) -> (N, 1)
	if err != nil {
		return nil, err
	}
	if spread, err = G.Mul(sigma, perCol); err != nil { // (N, 1) x (1, D) -> (N, D)
		return nil, err
	}
	z, err := G.HadamardDiv(c, spread) // (N, D) / (N, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	gain2, err := G.Reshape(gain, tensor.Shape{1, d}) // (D) -> (1, D)
	if err != nil {
		return nil, err
	}
	bias2, err := G.Reshape(bias, tensor.Shape{1, d}) // (D) -> (1, D)
	if err != nil {
		return nil, err
	}
	gains, err := G.Mul(perRow, gain2) // (N, 1) x (1, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	biases, err := G.Mul(perRow, bias2) // (N, 1) x (1, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	if z, err = G.HadamardProd(z, gains); err != nil { // (N, D) * (N, D) -> (N, D)
		return nil, err
	}
	return G.Add(z, biases) // (N, D) + (N, D) -> (N, D)
}

// filled returns an (r, c) tensor whose entries are all x.
func filled(r, c int, x float64) *tensor.Dense {
	data := make([]float64, r*c)
	for i := range data {
		data[i] = x
	}
	return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(data))
}

// layerNormVec overwrites h (D) with LN(h) = (h - mean(h)) / sqrt(var(h) +
// eps) * gain + bias, the plain-Go twin of layerNorm for one position.
func layerNormVec(h, gain, bias []float64) {
	d := float64(len(h))
	mean := 0.0
	for _, x := range h {
		mean += x
	}
	mean /= d
	variance := 0.0
	for i, x := range h {
		h[i] = x - mean
		variance += h[i] * h[i]
	}
	sigma := math.Sqrt(variance/d + layerNormEps)
	for i, x := range h {
		h[i] = x/sigma*gain[i] + bias[i]
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
