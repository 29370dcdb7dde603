package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
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
// log-probabilities and gradient, bit for bit, on 1 to 4 goroutines. The
// second fill gives every token the slot logits 0, x and x, for an x whose
// exponential four at a time (kernels.Exps's AVX2 path) differs from
// kernels.Exp's (its scalar path) enough to move the row's log-sum: where
// the exponentials were packed per goroutine's share, the last few of each
// share took the scalar path, so a token there got a different
// log-probability on 2 goroutines than on 1.
func TestTableLogSoftmaxCores(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	const capacity, r, p = 3*tableBlock + 17, 4, 11
	random := randomTable(rng, capacity, r, capacity-3, p, 1)
	x := expsDiffer()
	threeSlots := NewTableLayout(capacity, r)
	for tok := range capacity {
		copy(threeSlots.Set(tok, 0, 3, 0), []float64{0, x, x})
	}
	threeSlots.SetLen(capacity)
	for _, tc := range []struct {
		name  string
		lay   *TableLayout
		table []float64
	}{{"random", random, randomVector(rng, p, 1)}, {"slots 0, x and x", threeSlots, make([]float64, p)}} {
		t.Run(tc.name, func(t *testing.T) {
			w := randomVector(rng, capacity*r, 1)
			run := func(procs int) ([]float64, []float64) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				out, gr := evaluate(t, func(_ *G.ExprGraph, in G.Nodes) (*G.Node, error) { return TableLogSoftmax(tc.lay, in[0]) },
					[]param{{"table", []int{p}, tc.table}}, w)
				return out, gr[0]
			}
			out1, grad1 := run(1)
			for procs := 2; procs <= 4; procs++ {
				out, grad := run(procs)
				for i := range out1 {
					if out[i] != out1[i] {
						t.Fatalf("log-probability %d: %v on 1 goroutine, %v on %d", i, out1[i], out[i], procs)
					}
				}
				for e := range grad1 {
					if grad[e] != grad1[e] {
						t.Errorf("d/dtable[%d]: %v on 1 goroutine, %v on %d", e, grad1[e], grad[e], procs)
					}
				}
			}
		})
	}
}

// expsDiffer returns an x < 0 for which the log-sum of the exponentials of
// 0, x and x differs when kernels.Exps takes them four at a time and when
// kernels.Exp takes them one by one, or -1 where the two never differ (no
// four-wide path).
func expsDiffer() float64 {
	rng := rand.New(rand.NewPCG(10, 11))
	four := make([]float64, 4)
	for range 1 << 22 {
		x := -rng.Float64()
		kernels.Exps(four, []float64{x, x, x, x}, 0)
		if e := kernels.Exp(x); math.Log(1+four[0]+four[0]) != math.Log(1+e+e) {
			return x
		}
	}
	return -1
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

// TestTableOpsCheckFill: the ops check a fill block by block where they
// compute it, on every core; a fill with bad tokens in two blocks gets
// from both ops the error of the serial Check (its first bad token), and
// a good fill after it runs.
func TestTableOpsCheckFill(t *testing.T) {
	const capacity, r, p = 3*clippedBlock + 5, 3, 9
	rng := rand.New(rand.NewPCG(12, 13))
	lay := randomTable(rng, capacity, r, capacity, p, 1)
	good := slices.Clone(lay.first)
	lay.first[clippedBlock+7] = p    // entries past the table, in the second clipped block
	lay.first[2*clippedBlock+1] = -1 // and in the third
	want := lay.Check(p)
	if want == nil {
		t.Fatal("the bad fill checks: the test checks nothing")
	}
	table := randomVector(rng, p, 1)
	zeros := make([]float64, capacity)
	k := &tableKernel{lay: lay, p: p}
	op := &tableSurrogate{lay: lay, p: p, eps: 0.2}
	value := func(d []float64) G.Value { return tensor.New(tensor.WithShape(len(d)), tensor.WithBacking(d)) }
	for _, procs := range []int{1, 2, 4} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			copy(lay.first, good)
			lay.first[clippedBlock+7], lay.first[2*clippedBlock+1] = p, -1
			out := make([]float64, capacity*r)
			if err := k.forward(out, [][]float64{table}); err == nil || err.Error() != want.Error() {
				t.Errorf("%d goroutines: TableLogSoftmax: got %v, want %v", procs, err, want)
			}
			if _, err := op.Do(value(table), value(zeros), value(zeros), value(zeros)); err == nil || !strings.HasSuffix(err.Error(), want.Error()) {
				t.Errorf("%d goroutines: TableClippedSurrogate: got %v, want ... %v", procs, err, want)
			}
			copy(lay.first, good)
			if err := k.forward(out, [][]float64{table}); err != nil {
				t.Errorf("%d goroutines: TableLogSoftmax on the good fill: %v", procs, err)
			}
			if _, err := op.Do(value(table), value(zeros), value(zeros), value(zeros)); err != nil {
				t.Errorf("%d goroutines: TableClippedSurrogate on the good fill: %v", procs, err)
			}
		}()
	}
}

// TestTableForwardKeptScratch: the forward keeps its goroutines' scratch
// from run to run; a kernel that ran on one fill gives on the next, bit
// for bit, what a fresh kernel gives on it. The first fill (several
// blocks) has a NaN logit in every token, so the scratch keeps NaN
// exponentials (the step refuses such a loss only after the run); the
// second is 9 tokens, each goroutine's first block, whose 27 packed
// exponentials end off a multiple of four, on logits whose exponentials
// differ between the four-wide and the scalar path: padding left as it
// was would send the block down the scalar path. On 1 and 2 goroutines.
func TestTableForwardKeptScratch(t *testing.T) {
	const capacity, r, p = 3*tableBlock + 17, 5, 40
	rng := rand.New(rand.NewPCG(10, 11))
	first := NewTableLayout(capacity, r) // a NaN logit: the exponentials left in the scratch are NaN
	for tok := range capacity {
		copy(first.Set(tok, rng.IntN(p-1), 2, 0), []float64{0, math.NaN()})
	}
	first.SetLen(capacity)
	second := NewTableLayout(capacity, r) // slots 0, x and x (TestTableLogSoftmaxCores): the two exponential paths differ on them
	x := expsDiffer()
	for tok := range 9 {
		copy(second.Set(tok, rng.IntN(p-2), 3, 0), []float64{0, x, x})
	}
	second.SetLen(9)
	table := make([]float64, p) // zeros: the logits are the offsets
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			kept := &tableKernel{lay: first, p: p}
			out := make([]float64, capacity*r)
			if err := kept.forward(out, [][]float64{table}); err != nil {
				t.Fatal(err)
			}
			kept.lay = second
			if err := kept.forward(out, [][]float64{table}); err != nil {
				t.Fatal(err)
			}
			fresh := &tableKernel{lay: second, p: p}
			want := make([]float64, capacity*r)
			if err := fresh.forward(want, [][]float64{table}); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float64bits(out[i]) != math.Float64bits(want[i]) || math.Float64bits(kept.pi[i]) != math.Float64bits(fresh.pi[i]) {
					t.Fatalf("%d goroutines: slot %d: kept scratch gives %v (pi %v), a fresh kernel %v (pi %v)", procs, i, out[i], kept.pi[i], want[i], fresh.pi[i])
				}
			}
		}()
	}
}
