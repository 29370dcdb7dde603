package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// TestUnembedMatchesStock: the fused unembedding and log-softmax and its
// hand-written backward equal stock.Unembed and gorgonia's autodiff of
// it, with U stored by row (V, D) or by column (D, V), with and without
// the per-entry table B, the loss weighting every slot, masked ones
// included (their log-probabilities are about -1e9).
func TestUnembedMatchesStock(t *testing.T) {
	for _, tc := range []struct {
		v, d, b, n       int
		transposed, bias bool
	}{
		{6, 3, 2, 4, false, true},
		{6, 3, 2, 4, true, false},
		{8, 5, 3, 3, false, false},
		{5, 2, 4, 5, true, true},
	} {
		t.Run(fmt.Sprintf("V%d-D%d-B%d-T%d-transposed=%v-bias=%v", tc.v, tc.d, tc.b, tc.n, tc.transposed, tc.bias), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(67, uint64(tc.v*tc.d)))
			s := randomSupport(rng, tc.v)
			lay := randomLayout(rng, s, tc.b, tc.n, 2, false)
			n, r := tc.b*tc.n, lay.Width()
			params := []param{randParam(rng, "h", 1, n, tc.d), randParam(rng, "U", 1, tc.v, tc.d)}
			if tc.transposed {
				params[1] = randParam(rng, "U", 1, tc.d, tc.v)
			}
			if tc.bias {
				params = append(params, randParam(rng, "B", 1, len(s.next)))
			}
			bias := func(in G.Nodes) *G.Node {
				if tc.bias {
					return in[2]
				}
				return nil
			}
			var ix Indices
			lay.Indices(&ix)
			fused := func(_ *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				return Unembed(lay, in[0], in[1], bias(in), tc.transposed)
			}
			ref := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				u := in[1]
				if tc.transposed {
					u = G.Must(G.Transpose(u)) // (D, V) -> (V, D)
				}
				return stock.Unembed(in[0], u, bias(in), intInput(g, "slot_pos", ix.SlotPos), intInput(g, "slot_next", ix.SlotNext),
					intInput(g, "slot_entry", ix.SlotEntry), floatInput(g, "valid", ix.Valid), floatInput(g, "mask", ix.Mask), n, r)
			}
			checkAgainstStock(t, fused, ref, params, randomVector(rng, n*r, 1))
		})
	}
}
