package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// TestAttentionMatchesStock: the fused attention op (embedding, banded
// causal attention, residual) and its hand-written backward equal
// stock.Block and gorgonia's autodiff of it, with and without prompt and
// positions, with one and two heads, at windows shorter and longer than
// the rows.
func TestAttentionMatchesStock(t *testing.T) {
	for _, tc := range []struct {
		v, d, heads, ctx, b, n int
		pos, prompt            bool
	}{
		{6, 4, 1, 2, 3, 4, true, false},
		{6, 4, 2, 2, 3, 4, true, true},
		{7, 6, 2, 3, 2, 5, false, false},
		{5, 4, 1, 5, 4, 3, false, true},
		{9, 8, 4, 4, 3, 6, true, true},
	} {
		t.Run(fmt.Sprintf("V%d-D%d-H%d-C%d-B%d-T%d-pos=%v-prompt=%v", tc.v, tc.d, tc.heads, tc.ctx, tc.b, tc.n, tc.pos, tc.prompt), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(63, uint64(tc.d*tc.b)))
			s := randomSupport(rng, tc.v)
			lay := randomLayout(rng, s, tc.b, tc.n, tc.ctx, tc.prompt)
			params := []param{randParam(rng, "E", 0.8, tc.v, tc.d)}
			if tc.pos {
				params = append(params, randParam(rng, "P", 0.8, tc.ctx, tc.d))
			}
			for _, name := range []string{"WQ", "WK", "WV", "WO"} {
				params = append(params, randParam(rng, name, 0.8, tc.d, tc.d))
			}
			split := func(in G.Nodes) (e, p *G.Node, w G.Nodes) {
				if tc.pos {
					return in[0], in[1], in[2:]
				}
				return in[0], nil, in[1:]
			}
			var ix Indices
			lay.Indices(&ix)
			l := tc.n
			if tc.prompt {
				l++
			}
			fused := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				e, p, w := split(in)
				return Attention(lay, tc.heads, e, p, w[0], w[1], w[2], w[3])
			}
			ref := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				e, p, w := split(in)
				return stock.Block(e, p, w[0], w[1], w[2], w[3], intInput(g, "tokens", ix.Tokens), intInput(g, "positions", ix.Positions),
					intInput(g, "keep", ix.Keep), tc.b, l, tc.heads, tc.ctx, tc.prompt, MaskLogit)
			}
			checkAgainstStock(t, fused, ref, params, randomVector(rng, tc.b*tc.n*tc.d, 1))
		})
	}
}
