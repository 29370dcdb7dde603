package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// Every op of this package is checked here against the same function
// built from gorgonia's stock ops (package stock) and differentiated by
// gorgonia's autodiff: values, and the gradient of a random weighted sum
// of the output with respect to every input, on random inputs of several
// shapes, on the AVX2 kernels and again on gonum's (the path of machines
// without AVX2 and FMA).

// param is a named float64 input of both graphs.
type param struct {
	name  string
	shape []int
	data  []float64
}

// randParam is a param of N(0, scale^2) values.
func randParam(rng *rand.Rand, name string, scale float64, shape ...int) param {
	return param{name, shape, randomVector(rng, tensor.Shape(shape).TotalSize(), scale)}
}

// build builds a function of the inputs (one node per param, in order) in
// their graph.
type build func(g *G.ExprGraph, in G.Nodes) (*G.Node, error)

// evaluate builds f on a new graph over copies of the params and returns
// its output and the autodiff gradient of sum w * output with respect to
// every param.
func evaluate(t *testing.T, f build, params []param, w []float64) (out []float64, grads [][]float64) {
	t.Helper()
	g := G.NewGraph()
	in := make(G.Nodes, len(params))
	for i, p := range params {
		in[i] = G.NewTensor(g, G.Float64, len(p.shape), G.WithShape(p.shape...), G.WithName(p.name),
			G.WithValue(tensor.New(tensor.WithShape(p.shape...), tensor.WithBacking(slices.Clone(p.data)))))
	}
	y, err := f(g, in)
	if err != nil {
		t.Fatal(err)
	}
	n := y.Shape().TotalSize()
	wn := G.NewVector(g, G.Float64, G.WithShape(n), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(slices.Clone(w)))))
	loss := G.Must(G.Mul(G.Must(G.Reshape(y, tensor.Shape{n})), wn)) // (n) . (n) -> ()
	var yv G.Value
	G.Read(y, &yv)
	gn, err := G.Grad(loss, in...)
	if err != nil {
		t.Fatal(err)
	}
	gv := make([]G.Value, len(gn))
	for i, n := range gn {
		G.Read(n, &gv[i])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	for _, v := range gv {
		grads = append(grads, slices.Clone(v.Data().([]float64)))
	}
	if y, ok := yv.Data().(float64); ok { // a scalar output
		return []float64{y}, grads
	}
	return slices.Clone(yv.Data().([]float64)), grads
}

// checkAgainstStock compares the fused build with the stock one on the
// same params and weights, on both kernel paths: outputs to 1e-12 of
// their magnitude, and each param's gradient to 1e-9 of its largest
// entry (none of which may be 0).
func checkAgainstStock(t *testing.T, fused, stock build, params []param, w []float64) {
	t.Helper()
	for _, avx := range []bool{true, false} {
		t.Run(fmt.Sprintf("avx=%v", avx), func(t *testing.T) {
			defer kernels.UseAVX(kernels.UseAVX(avx))
			got, gotGrads := evaluate(t, fused, params, w)
			want, wantGrads := evaluate(t, stock, params, w)
			if len(got) != len(want) {
				t.Fatalf("output: got %d values, want %d", len(got), len(want))
			}
			for i := range got {
				if d := math.Abs(got[i] - want[i]); !(d <= 1e-12*math.Max(math.Abs(want[i]), 1)) {
					t.Fatalf("output[%d]: got %.17g, want stock's %.17g", i, got[i], want[i])
				}
			}
			for k, p := range params {
				scale := 0.0
				for _, v := range wantGrads[k] {
					scale = math.Max(scale, math.Abs(v))
				}
				if scale == 0 {
					t.Errorf("d/d%s: stock's gradient is all zeros: the test checks nothing", p.name)
				}
				for i := range gotGrads[k] {
					if d := math.Abs(gotGrads[k][i] - wantGrads[k][i]); !(d <= 1e-9*scale) {
						t.Fatalf("d/d%s[%d]: got %.17g, want stock's %.17g", p.name, i, gotGrads[k][i], wantGrads[k][i])
					}
				}
			}
		})
	}
}

// intInput adds an Int vector input holding data.
func intInput(g *G.ExprGraph, name string, data []int) *G.Node {
	return G.NewVector(g, G.Int, G.WithShape(len(data)), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(len(data)), tensor.WithBacking(slices.Clone(data)))))
}

// floatInput adds a float64 vector input holding data.
func floatInput(g *G.ExprGraph, name string, data []float64) *G.Node {
	return G.NewVector(g, G.Float64, G.WithShape(len(data)), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(len(data)), tensor.WithBacking(slices.Clone(data)))))
}

// support is a random support over v tokens whose rows hold 1 to 4
// distinct next tokens.
type support struct{ offsets, next []int }

func randomSupport(rng *rand.Rand, v int) support {
	s := support{offsets: []int{0}}
	for range v {
		k := 1 + rng.IntN(min(4, v))
		s.next = append(s.next, rng.Perm(v)[:k]...)
		s.offsets = append(s.offsets, len(s.next))
	}
	return s
}

// maxRow is the longest row.
func (s support) maxRow() int {
	r := 0
	for x := 0; x+1 < len(s.offsets); x++ {
		r = max(r, s.offsets[x+1]-s.offsets[x])
	}
	return r
}

// walk returns a sequence of n tokens following the support.
func (s support) walk(rng *rand.Rand, n int) []int {
	seq := []int{rng.IntN(len(s.offsets) - 1)}
	for len(seq) < n {
		x := seq[len(seq)-1]
		seq = append(seq, s.next[s.offsets[x]+rng.IntN(s.offsets[x+1]-s.offsets[x])])
	}
	return seq
}

// randomLayout returns the layout of b random rows of 1 to t tokens at
// random starts (with random prompts when prompt is set).
func randomLayout(rng *rand.Rand, s support, b, t, ctx int, prompt bool) *Layout {
	lay := NewLayout(s.offsets, s.next, b, t, s.maxRow(), ctx, prompt)
	type row struct {
		prompt, start int
		tokens        []int
	}
	rows := make([]row, b)
	for i := range rows {
		rows[i] = row{rng.IntN(len(s.offsets) - 1), rng.IntN(10), s.walk(rng, 1+rng.IntN(t))}
	}
	lay.Fill(b, func(i int) (int, int, []int) { return rows[i].prompt, rows[i].start, rows[i].tokens })
	return lay
}

func randomVector(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * rng.NormFloat64()
	}
	return out
}
