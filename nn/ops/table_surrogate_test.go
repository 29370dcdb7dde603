package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// surrogateCase is a table fill with the clipped surrogate's constants:
// old log-probabilities about those the table gives (ratios on both
// sides of both clips), advantages of both signs, and every fifth token's
// advantages 0 (as on a fill's unset tokens).
type surrogateCase struct {
	capacity, r, n, p int
	eps               float64
}

func (tc surrogateCase) fill(rng *rand.Rand) (lay *TableLayout, old, pos, neg []float64) {
	lay = randomTable(rng, tc.capacity, tc.r, tc.n, tc.p, 1)
	old, pos, neg = make([]float64, tc.capacity), make([]float64, tc.capacity), make([]float64, tc.capacity)
	for i := range old {
		old[i] = -1 + 0.6*rng.NormFloat64()
		if i%5 == 4 || i >= tc.n {
			continue
		}
		if a := rng.NormFloat64(); a > 0 {
			pos[i] = a
		} else {
			neg[i] = a
		}
	}
	return lay, old, pos, neg
}

var surrogateCases = []surrogateCase{
	{5, 4, 4, 7, 0.2}, {8, 3, 8, 12, 0}, {7, 3, 5, 5, 0.2},
	// Several clipped blocks, the last one's length not a multiple of 4
	// (its last exponentials take the scalar path), tokens left unset.
	{2*clippedBlock + tableBlock + 17, 6, 2*clippedBlock + 5, 40, 0.2},
}

// TestTableClippedSurrogateMatchesOps: the one op's value and gradient
// are bit for bit those of the three ops it fuses (TableLogSoftmax,
// Gather, ClippedSurrogate), on both kernel paths: it replaces them in
// the transformer's table pass without moving a trajectory.
func TestTableClippedSurrogateMatchesOps(t *testing.T) {
	for _, tc := range surrogateCases {
		t.Run(fmt.Sprintf("cap%d-R%d-n%d-eps%v", tc.capacity, tc.r, tc.n, tc.eps), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(91, uint64(tc.capacity)))
			lay, old, pos, neg := tc.fill(rng)
			fused := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				return TableClippedSurrogate(lay, in[0], floatInput(g, "old", old), floatInput(g, "adv+", pos), floatInput(g, "adv-", neg), tc.eps)
			}
			chain := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				logp, err := TableLogSoftmax(lay, in[0])
				if err != nil {
					return nil, err
				}
				taken, err := Gather(logp, intInput(g, "taken", lay.Taken()))
				if err != nil {
					return nil, err
				}
				return ClippedSurrogate(taken, floatInput(g, "old", old), floatInput(g, "adv+", pos), floatInput(g, "adv-", neg), tc.eps)
			}
			params := []param{randParam(rng, "table", 1, tc.p)}
			for _, avx := range []bool{true, false} {
				func() {
					defer kernels.UseAVX(kernels.UseAVX(avx))
					// A gradient of -0.75 into the surrogate (the trainer's
					// is -1, whose products are exact either way).
					got, gotGrad := evaluate(t, fused, params, []float64{-0.75})
					want, wantGrad := evaluate(t, chain, params, []float64{-0.75})
					if math.Float64bits(got[0]) != math.Float64bits(want[0]) {
						t.Errorf("avx=%v: value %.17g, want the ops' %.17g", avx, got[0], want[0])
					}
					nonzero := 0
					for i, v := range wantGrad[0] {
						if math.Float64bits(gotGrad[0][i]) != math.Float64bits(v) {
							t.Fatalf("avx=%v: d/dtable[%d] = %.17g, want the ops' %.17g", avx, i, gotGrad[0][i], v)
						}
						if v != 0 {
							nonzero++
						}
					}
					if nonzero == 0 {
						t.Errorf("avx=%v: the gradient is all zeros: the test checks nothing", avx)
					}
				}()
			}
		})
	}
}

// TestTableClippedSurrogateMatchesStock checks the one op against
// gorgonia's autodiff of its stock form: stock.TableLogSoftmax,
// stock.Gather and stock.ClippedSurrogate.
func TestTableClippedSurrogateMatchesStock(t *testing.T) {
	for _, tc := range surrogateCases[:3] {
		t.Run(fmt.Sprintf("cap%d-R%d-n%d-eps%v", tc.capacity, tc.r, tc.n, tc.eps), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(92, uint64(tc.capacity)))
			lay, old, pos, neg := tc.fill(rng)
			var ix TableIndices
			lay.Indices(&ix)
			fused := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				return TableClippedSurrogate(lay, in[0], floatInput(g, "old", old), floatInput(g, "adv+", pos), floatInput(g, "adv-", neg), tc.eps)
			}
			ref := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				logp, err := stock.TableLogSoftmax(in[0], intInput(g, "slot_entry", ix.SlotEntry), floatInput(g, "offsets", ix.Offsets),
					floatInput(g, "valid", ix.Valid), floatInput(g, "mask", ix.Mask), tc.capacity, tc.r)
				if err != nil {
					return nil, err
				}
				taken, err := stock.Gather(logp, intInput(g, "taken", lay.Taken()))
				if err != nil {
					return nil, err
				}
				return stock.ClippedSurrogate(taken, floatInput(g, "old", old), floatInput(g, "adv+", pos), floatInput(g, "adv-", neg), tc.eps)
			}
			checkAgainstStock(t, fused, ref, []param{randParam(rng, "table", 1, tc.p)}, []float64{-1})
		})
	}
}
