package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// TestLayerNormMatchesStock: the fused layer norm and its hand-written
// backward equal stock.LayerNorm and gorgonia's autodiff of it, on rows
// of several widths and scales, and on more rows than one block of the
// backward's sums (kernels.BlockSum).
func TestLayerNormMatchesStock(t *testing.T) {
	for _, tc := range []struct {
		n, d  int
		scale float64
	}{{5, 4, 1}, {3, 7, 30}, {1, 2, 1}, {300, 3, 0.01}} {
		t.Run(fmt.Sprintf("N%d-D%d-scale%g", tc.n, tc.d, tc.scale), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(65, uint64(tc.n)))
			params := []param{randParam(rng, "h", tc.scale, tc.n, tc.d), randParam(rng, "gain", 1, tc.d), randParam(rng, "bias", 1, tc.d)}
			fused := func(_ *G.ExprGraph, in G.Nodes) (*G.Node, error) { return LayerNorm(in[0], in[1], in[2]) }
			ref := func(_ *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				return stock.LayerNorm(in[0], in[1], in[2], kernels.LayerNormEps)
			}
			checkAgainstStock(t, fused, ref, params, randomVector(rng, tc.n*tc.d, 1))
		})
	}
}
