package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// randomTable fills a table layout of capacity tokens with n random ones
// over a table of p entries: 1 to R slots each, offsets of scale
// offsetScale (large gaps stay exact), a random taken slot.
func randomTable(rng *rand.Rand, capacity, r, n, p int, offsetScale float64) *TableLayout {
	lay := NewTableLayout(capacity, r)
	for t := range n {
		c := 1 + rng.IntN(r)
		off := lay.Set(t, rng.IntN(p-c+1), c, rng.IntN(c))
		for j := range off {
			off[j] = offsetScale * rng.NormFloat64()
		}
	}
	lay.SetLen(n)
	return lay
}

// TestTableLogSoftmaxMatchesStock: the table's per-token log-softmax and
// its hand-written backward equal stock.TableLogSoftmax and gorgonia's
// autodiff of it, on fills that leave tokens unset, with offsets of 800
// (logit gaps where exp under- and overflows without the shift), and on a
// fill of several blocks of the backward's sums.
func TestTableLogSoftmaxMatchesStock(t *testing.T) {
	for _, tc := range []struct {
		capacity, r, n, p int
		offsets           float64
	}{{5, 4, 4, 7, 800}, {8, 3, 8, 12, 1}, {6, 2, 2, 3, 1}, {3*tableBlock + 17, 3, 3*tableBlock + 5, 11, 1}} {
		t.Run(fmt.Sprintf("cap%d-R%d-n%d-P%d", tc.capacity, tc.r, tc.n, tc.p), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, uint64(tc.capacity)))
			lay := randomTable(rng, tc.capacity, tc.r, tc.n, tc.p, tc.offsets)
			var ix TableIndices
			lay.Indices(&ix)
			fused := func(_ *G.ExprGraph, in G.Nodes) (*G.Node, error) { return TableLogSoftmax(lay, in[0]) }
			ref := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				return stock.TableLogSoftmax(in[0], intInput(g, "slot_entry", ix.SlotEntry), floatInput(g, "offsets", ix.Offsets),
					floatInput(g, "valid", ix.Valid), floatInput(g, "mask", ix.Mask), tc.capacity, tc.r)
			}
			checkAgainstStock(t, fused, ref, []param{randParam(rng, "table", 1, tc.p)}, randomVector(rng, tc.capacity*tc.r, 1))
		})
	}
}

// TestTableLogSoftmaxRefill: one graph run on two fills (the second with
// fewer tokens) gives each fill's log-probabilities, equal to a plain-Go
// log-softmax of table[entries] + offsets, and the tokens the second fill
// leaves out take log(1/R) on every slot.
func TestTableLogSoftmaxRefill(t *testing.T) {
	const capacity, r, p = 6, 3, 9
	rng := rand.New(rand.NewPCG(5, 6))
	table := randomVector(rng, p, 1)
	lay := NewTableLayout(capacity, r)
	g := G.NewGraph()
	tn := G.NewVector(g, G.Float64, G.WithShape(p), G.WithName("table"), G.WithValue(tensor.New(tensor.WithShape(p), tensor.WithBacking(table))))
	out, err := TableLogSoftmax(lay, tn)
	if err != nil {
		t.Fatal(err)
	}
	var ov G.Value
	G.Read(out, &ov)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	for _, n := range []int{6, 2} {
		type tok struct{ first, count int }
		toks := make([]tok, n)
		offs := make([][]float64, n)
		for i := range toks {
			toks[i] = tok{rng.IntN(p - r + 1), 1 + rng.IntN(r)}
			offs[i] = slices.Clone(lay.Set(i, toks[i].first, toks[i].count, 0))
			for j := range offs[i] {
				offs[i][j] = 5 * rng.NormFloat64()
			}
			copy(lay.Set(i, toks[i].first, toks[i].count, 0), offs[i])
		}
		lay.SetLen(n)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := ov.Data().([]float64)
		for i := range capacity {
			for j := range r {
				want := -math.Log(r)
				if i < n {
					want = MaskLogit // a masked slot: far below every logit, probability 0
					if j < toks[i].count {
						m, z := math.Inf(-1), 0.0
						for k := range toks[i].count {
							m = max(m, table[toks[i].first+k]+offs[i][k])
						}
						for k := range toks[i].count {
							z += math.Exp(table[toks[i].first+k] + offs[i][k] - m)
						}
						want = table[toks[i].first+j] + offs[i][j] - m - math.Log(z)
					}
				}
				if v := got[i*r+j]; want == MaskLogit && v > MaskLogit/2 || want != MaskLogit && math.Abs(v-want) > 1e-13*math.Max(1, math.Abs(want)) {
					t.Errorf("fill of %d: token %d slot %d: got %v, want %v", n, i, j, v, want)
				}
			}
		}
		vm.Reset()
	}
}

// TestTableLogSoftmaxCores: a fill of several blocks gives the same
// gradient, bit for bit, on 1 and on 4 goroutines.
func TestTableLogSoftmaxCores(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	const capacity, r, p = 3*tableBlock + 17, 4, 11
	lay := randomTable(rng, capacity, r, capacity-3, p, 1)
	table, w := randomVector(rng, p, 1), randomVector(rng, capacity*r, 1)
	grad := func(procs int) []float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		_, gr := evaluate(t, func(_ *G.ExprGraph, in G.Nodes) (*G.Node, error) { return TableLogSoftmax(lay, in[0]) },
			[]param{{"table", []int{p}, table}}, w)
		return gr[0]
	}
	one, four := grad(1), grad(4)
	for e := range one {
		if one[e] != four[e] {
			t.Errorf("d/dtable[%d]: %v on 1 goroutine, %v on 4", e, one[e], four[e])
		}
	}
}

// TestTableLayoutErrors: a run refuses a fill whose taken slot or entries
// fall outside its rows or the table.
func TestTableLayoutErrors(t *testing.T) {
	for _, tc := range []struct {
		name                string
		first, count, taken int
	}{{"taken outside its row", 0, 2, 2}, {"entries outside the table", 4, 2, 0}} {
		lay := NewTableLayout(2, 3)
		lay.Set(0, tc.first, tc.count, tc.taken)
		lay.SetLen(1)
		if err := lay.Check(5); err == nil {
			t.Errorf("%s: got no error", tc.name)
		}
	}
}
