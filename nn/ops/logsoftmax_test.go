package ops

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// refLogSoftmax is the plain-Go reference: (x - m) - log sum exp(x - m) per
// row, m the row maximum. (x - (m + log sum) loses up to an ulp of m: 1e-10
// at m = 1e6.)
func refLogSoftmax(x []float64, offsets []int) []float64 {
	out := make([]float64, len(x))
	for r := 0; r+1 < len(offsets); r++ {
		row := x[offsets[r]:offsets[r+1]]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - m)
		}
		for i, v := range row {
			out[offsets[r]+i] = (v - m) - math.Log(s)
		}
	}
	return out
}

// vec returns a float64 vector backed by a copy of x.
func vec(x []float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(x)), tensor.WithBacking(append([]float64(nil), x...)))
}

// gradRunner evaluates a scalar cost built on an input vector x, and its
// gradient with respect to x from G.Grad, on one tape machine.
type gradRunner struct {
	x    *G.Node
	vm   G.VM
	cost G.Value
	out  G.Value // value of the node returned by build, read while running
}

// newGradRunner builds build(x) -> (out, cost) on a fresh graph.
func newGradRunner(t *testing.T, n int, build func(x *G.Node) (out, cost *G.Node, err error)) *gradRunner {
	t.Helper()
	g := G.NewGraph()
	r := &gradRunner{x: G.NewVector(g, G.Float64, G.WithShape(n), G.WithName("x"))} // (n)
	out, cost, err := build(r.x)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(cost, r.x); err != nil {
		t.Fatal(err)
	}
	G.Read(cost, &r.cost)
	G.Read(out, &r.out)
	r.vm = G.NewTapeMachine(g)
	t.Cleanup(func() { r.vm.Close() })
	return r
}

// run returns the cost, a copy of out and the gradient at x.
func (r *gradRunner) run(t *testing.T, x []float64) (cost float64, out, grad []float64) {
	t.Helper()
	if err := G.Let(r.x, vec(x)); err != nil {
		t.Fatal(err)
	}
	defer r.vm.Reset()
	if err := r.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	cost = r.cost.Data().(float64)
	g, err := r.x.Grad()
	if err != nil {
		t.Fatal(err)
	}
	out = append([]float64(nil), r.out.Data().([]float64)...)
	return cost, out, append([]float64(nil), g.Data().([]float64)...)
}

// centralDiff returns the central finite-difference gradient of f at x,
// dividing by the steps actually taken (x+h rounds at large |x|).
func centralDiff(f func([]float64) float64, x []float64, h float64) []float64 {
	grad := make([]float64, len(x))
	y := append([]float64(nil), x...)
	for i := range x {
		y[i] = x[i] + h
		up := y[i]
		fp := f(y)
		y[i] = x[i] - h
		down := y[i]
		fm := f(y)
		y[i] = x[i]
		grad[i] = (fp - fm) / (up - down)
	}
	return grad
}

// checkClose reports entries where |got-want| > rel*max(|want|, floor).
func checkClose(t *testing.T, what string, got, want []float64, rel, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.IsNaN(got[i]) || math.IsInf(got[i], 0) {
			t.Errorf("%s[%d]: got %v, want finite %v", what, i, got[i], want[i])
			continue
		}
		if d := math.Abs(got[i] - want[i]); d > rel*math.Max(math.Abs(want[i]), floor) {
			t.Errorf("%s[%d]: got %.17g, want %.17g (difference %.3g)", what, i, got[i], want[i], d)
		}
	}
}

// Ragged rows of very different scales, with logit gaps beyond 700 (where
// exp underflows to 0 or overflows without the max shift) and a row of one.
var (
	raggedX = []float64{
		1000, 0, 0, // gap 1000
		0, -800, 1, // gap 801
		5, 5, 5, 5, // ties
		7.5,        // a row of one
		1e-3, 2e-3, // tiny scale
		-1e6, -1e6 + 1, -1e6 + 2, // huge negative offset
		300, -300, 0, 12,
	}
	raggedOffsets = []int{0, 3, 6, 10, 11, 13, 16, 20}
)

func TestSegmentLogSoftmaxForward(t *testing.T) {
	r := newGradRunner(t, len(raggedX), func(x *G.Node) (*G.Node, *G.Node, error) {
		out, err := SegmentLogSoftmax(x, raggedOffsets) // (n) -> (n)
		if err != nil {
			return nil, nil, err
		}
		cost, err := G.Sum(out) // (n) -> ()
		return out, cost, err
	})
	_, got, _ := r.run(t, raggedX)
	checkClose(t, "log-softmax", got, refLogSoftmax(raggedX, raggedOffsets), 1e-15, 1)

	exact := []struct {
		name string
		e    int
		want float64
	}{
		{"max of [1000 0 0]", 0, 0},
		{"gap 1000", 1, -1000},
		{"gap 1000 again", 2, -1000},
		{"tie of four", 7, -math.Log(4)},
		{"row of one", 10, 0},
	}
	for _, tt := range exact {
		if got[tt.e] != tt.want {
			t.Errorf("%s: out[%d]: got %.17g, want exactly %.17g", tt.name, tt.e, got[tt.e], tt.want)
		}
	}
}

func TestSegmentLogSoftmaxGradFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float64, len(raggedX))
	for i := range w {
		w[i] = rng.Float64()*2 - 0.5
	}
	weights := vec(w)
	r := newGradRunner(t, len(raggedX), func(x *G.Node) (*G.Node, *G.Node, error) {
		wn := G.NewConstant(weights, G.WithName("w"))   // (n)
		out, err := SegmentLogSoftmax(x, raggedOffsets) // (n) -> (n)
		if err != nil {
			return nil, nil, err
		}
		cost, err := G.Mul(wn, out) // (n) . (n) -> ()
		return out, cost, err
	})
	_, _, got := r.run(t, raggedX)
	f := func(x []float64) float64 {
		c, _, _ := r.run(t, x)
		return c
	}
	want := centralDiff(f, raggedX, 1e-5)
	checkClose(t, "gradient vs finite differences", got, want, 1e-6, 1e-2)
	if got[10] != 0 {
		t.Errorf("gradient of a row of one: got %v, want exactly 0", got[10])
	}
}

func TestSegmentLogSoftmaxCrossEntropyGrad(t *testing.T) {
	// Loss -sum_rows log softmax(x_row)[target]; gradient softmax - onehot.
	targets := []int{1, 5, 9, 10, 11, 13, 17} // one entry per row
	onehot := make([]float64, len(raggedX))
	for _, e := range targets {
		onehot[e] = -1
	}
	weights := vec(onehot)
	r := newGradRunner(t, len(raggedX), func(x *G.Node) (*G.Node, *G.Node, error) {
		wn := G.NewConstant(weights, G.WithName("minus_onehot")) // (n)
		out, err := SegmentLogSoftmax(x, raggedOffsets)          // (n) -> (n)
		if err != nil {
			return nil, nil, err
		}
		cost, err := G.Mul(wn, out) // (n) . (n) -> ()
		return out, cost, err
	})
	_, _, got := r.run(t, raggedX)
	want := refLogSoftmax(raggedX, raggedOffsets)
	for e := range want {
		want[e] = math.Exp(want[e]) + onehot[e]
	}
	checkClose(t, "gradient vs softmax - onehot", got, want, 1e-14, 1)
}

func TestSegmentLogSoftmaxDistinctOffsetsDoNotMerge(t *testing.T) {
	// gorgonia merges nodes whose ops hash alike on the same inputs
	// (TestGorgoniaSoftMaxLogSoftMaxMerge): the offsets must be in the hash.
	g := G.NewGraph()
	x := G.NewVector(g, G.Float64, G.WithShape(4), G.WithName("x")) // (4)
	a, err := SegmentLogSoftmax(x, []int{0, 2, 4})                  // (4) -> (4)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SegmentLogSoftmax(x, []int{0, 1, 4}) // (4) -> (4)
	if err != nil {
		t.Fatal(err)
	}
	c, err := SegmentLogSoftmax(x, []int{0, 2, 4}) // (4) -> (4)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("different offsets: got one node, want two")
	}
	if a != c {
		t.Errorf("same offsets: got two nodes, want one")
	}
}

func TestSegmentLogSoftmaxErrors(t *testing.T) {
	g := G.NewGraph()
	v := G.NewVector(g, G.Float64, G.WithShape(4), G.WithName("v"))    // (4)
	m := G.NewMatrix(g, G.Float64, G.WithShape(2, 2), G.WithName("m")) // (2, 2)
	f := G.NewVector(g, G.Float32, G.WithShape(4), G.WithName("f32"))  // (4)
	tests := []struct {
		name    string
		x       *G.Node
		offsets []int
		want    string
	}{
		{"matrix", m, []int{0, 2, 4}, "want a vector"},
		{"float32", f, []int{0, 2, 4}, "want float64"},
		{"short end", v, []int{0, 2, 3}, "from 0 to the input length 4"},
		{"no rows", v, []int{0}, "from 0 to the input length 4"},
		{"empty row", v, []int{0, 2, 2, 4}, "row 1 has 0 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SegmentLogSoftmax(tt.x, tt.offsets)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestSegmentLogSoftmaxMatchesStock: the segmented log-softmax (the
// bigram's) and its hand-written backward equal the same rows laid out
// R wide and masked, through stock.MaskedLogSoftmax and gorgonia's
// autodiff, on the ragged rows above (gaps beyond 700, ties, a row of
// one) and on random rows.
func TestSegmentLogSoftmaxMatchesStock(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	randomRows := []int{0}
	for range 40 {
		randomRows = append(randomRows, randomRows[len(randomRows)-1]+1+rng.IntN(7))
	}
	for _, tc := range []struct {
		name    string
		x       []float64
		offsets []int
	}{
		{"ragged", raggedX, raggedOffsets},
		{"random", randomVector(rng, randomRows[len(randomRows)-1], 3), randomRows},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, r := len(tc.offsets)-1, 0
			for i := range rows {
				r = max(r, tc.offsets[i+1]-tc.offsets[i])
			}
			pad, back := make([]int, rows*r), make([]int, len(tc.x)) // the padded slot of each entry, and back
			valid, mask := make([]float64, rows*r), make([]float64, rows*r)
			for i := range rows {
				for j := range r {
					s, e := i*r+j, tc.offsets[i]+j
					if e < tc.offsets[i+1] {
						pad[s], valid[s], back[e] = e, 1, s
					} else {
						mask[s] = MaskLogit
					}
				}
			}
			fused := func(_ *G.ExprGraph, in G.Nodes) (*G.Node, error) { return SegmentLogSoftmax(in[0], tc.offsets) }
			ref := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				z := G.Must(stock.Gather(in[0], intInput(g, "pad", pad)))                                                    // (n) -> (rows*R)
				lp := G.Must(stock.MaskedLogSoftmax(z, floatInput(g, "valid", valid), floatInput(g, "mask", mask), rows, r)) // (rows*R)
				return stock.Gather(lp, intInput(g, "back", back))                                                           // (rows*R) -> (n)
			}
			checkAgainstStock(t, fused, ref, []param{{"x", []int{len(tc.x)}, tc.x}}, randomVector(rng, len(tc.x), 1))
		})
	}
}

// TestSegmentLogLikMatchesStock checks the fused weighted log-likelihood
// against gorgonia's autodiff of the stock ops: the weights' dot product
// with the stock log-softmax of each row (padded and masked), on the
// ragged rows and on random ones, with weights of both signs.
func TestSegmentLogLikMatchesStock(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	randomRows := []int{0}
	for range 40 {
		randomRows = append(randomRows, randomRows[len(randomRows)-1]+1+rng.IntN(7))
	}
	for _, tc := range []struct {
		name    string
		x       []float64
		offsets []int
	}{
		{"ragged", raggedX, raggedOffsets},
		{"random", randomVector(rng, randomRows[len(randomRows)-1], 3), randomRows},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, r := len(tc.offsets)-1, 0
			for i := range rows {
				r = max(r, tc.offsets[i+1]-tc.offsets[i])
			}
			pad, back := make([]int, rows*r), make([]int, len(tc.x))
			valid, mask := make([]float64, rows*r), make([]float64, rows*r)
			for i := range rows {
				for j := range r {
					s, e := i*r+j, tc.offsets[i]+j
					if e < tc.offsets[i+1] {
						pad[s], valid[s], back[e] = e, 1, s
					} else {
						mask[s] = MaskLogit
					}
				}
			}
			w := randomVector(rng, len(tc.x), 2)
			fused := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				return SegmentLogLik(in[0], floatInput(g, "w", w), tc.offsets)
			}
			ref := func(g *G.ExprGraph, in G.Nodes) (*G.Node, error) {
				z := G.Must(stock.Gather(in[0], intInput(g, "pad", pad)))                                                    // (n) -> (rows*R)
				lp := G.Must(stock.MaskedLogSoftmax(z, floatInput(g, "valid", valid), floatInput(g, "mask", mask), rows, r)) // (rows*R)
				logp := G.Must(stock.Gather(lp, intInput(g, "back", back)))                                                  // (rows*R) -> (n)
				return G.Mul(floatInput(g, "w", w), logp)                                                                    // (n) . (n) -> ()
			}
			checkAgainstStock(t, fused, ref, []param{{"x", []int{len(tc.x)}, tc.x}}, []float64{-1.5})
		})
	}
}
