package nn

import (
	"fmt"
	"math"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// maxCorrection bounds the magnitude of the unembedding entries the exact
// initialisation with layer norm writes on masked transitions: logits must
// stay far from ops.MaskLogit (|value| < 1e8 keeps them exact).
const maxCorrection = 1e7

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
	sigma := math.Sqrt((1/fv)*(1-1/fv) + kernels.LayerNormEps)
	for i := range m {
		m[i] *= sigma
	}
	return m, nil
}
