package ops

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// TestClippedSurrogateMatchesStock checks the fused clipped surrogate
// against gorgonia's autodiff of stock.ClippedSurrogate: ratios on both
// sides of both clips (r in about [0.4, 2.5]), advantages of both signs,
// lengths below, at and above a block, and eps 0.2 and 0.
func TestClippedSurrogateMatchesStock(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, n := range []int{3, 7, clippedBlock, clippedBlock + 13} {
		for _, eps := range []float64{0.2, 0} {
			logp := randomVector(rng, n, 1)
			for i := range logp {
				logp[i] = -logp[i] * logp[i] // log-probabilities: <= 0
			}
			old, pos, neg := make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range old {
				old[i] = logp[i] + 0.45*rng.NormFloat64()
				if a := rng.NormFloat64(); a > 0 {
					pos[i] = a
				} else {
					neg[i] = a
				}
			}
			build := func(f func(logp, old, pos, neg *G.Node, eps float64) (*G.Node, error)) build {
				return func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
					return f(in[0], floatInput(g, "old", old), floatInput(g, "adv+", pos), floatInput(g, "adv-", neg), eps)
				}
			}
			checkAgainstStock(t, build(ClippedSurrogate), build(stock.ClippedSurrogate), []param{{"logp", []int{n}, logp}}, []float64{-0.75})
		}
	}
}
