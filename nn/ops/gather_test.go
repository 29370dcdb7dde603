package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// TestGatherMatchesByIndices: the gather op and its hand-written
// scatter-add backward equal stock.Gather (G.ByIndices) and gorgonia's
// autodiff of it, on vectors and matrices, with repeated indices and
// more indices than entries.
func TestGatherMatchesByIndices(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		n     int
	}{{[]int{7}, 12}, {[]int{5, 3}, 9}, {[]int{20}, 4}, {[]int{3, 1}, 8}} {
		t.Run(fmt.Sprintf("%v-n%d", tc.shape, tc.n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(69, uint64(tc.n)))
			idx := make([]int, tc.n)
			for i := range idx {
				idx[i] = rng.IntN(tc.shape[0])
			}
			w := tc.n
			if len(tc.shape) == 2 {
				w *= tc.shape[1]
			}
			params := []param{randParam(rng, "x", 1, tc.shape...)}
			fused := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) { return Gather(in[0], intInput(g, "idx", idx)) }
			ref := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) { return stock.Gather(in[0], intInput(g, "idx", idx)) }
			checkAgainstStock(t, fused, ref, params, randomVector(rng, w, 1))
		})
	}
}
