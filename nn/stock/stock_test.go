package stock

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// vec is a float64 vector holding a copy of x.
func vec(x []float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(x)), tensor.WithBacking(slices.Clone(x)))
}

// input adds a float64 input of the given shape holding a copy of data.
func input(g *G.ExprGraph, name string, data []float64, shape ...int) *G.Node {
	return G.NewTensor(g, G.Float64, len(shape), G.WithShape(shape...), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(slices.Clone(data)))))
}

// ints adds an Int vector input holding data.
func ints(g *G.ExprGraph, name string, data []int) *G.Node {
	return G.NewVector(g, G.Int, G.WithShape(len(data)), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(len(data)), tensor.WithBacking(slices.Clone(data)))))
}

// evaluate runs the graph of out and of the loss sum w * out, and returns
// out's values and the loss's autodiff gradients with respect to wrt.
func evaluate(t *testing.T, out *G.Node, w []float64, wrt ...*G.Node) ([]float64, [][]float64) {
	t.Helper()
	g := out.Graph()
	n := out.Shape().TotalSize()
	flat := G.Must(G.Reshape(out, tensor.Shape{n}))
	loss := G.Must(G.Mul(flat, input(g, "w", w, n))) // (n) . (n) -> ()
	var ov G.Value
	G.Read(out, &ov)
	var grads G.Nodes
	if len(wrt) > 0 {
		var err error
		if grads, err = G.Grad(loss, wrt...); err != nil {
			t.Fatal(err)
		}
	}
	gv := make([]G.Value, len(grads))
	for i, gr := range grads {
		G.Read(gr, &gv[i])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	res := make([][]float64, len(gv))
	for i, v := range gv {
		res[i] = slices.Clone(v.Data().([]float64))
	}
	return slices.Clone(ov.Data().([]float64)), res
}

// checkClose compares got with want element by element to tol times
// max(|want|, 1).
func checkClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*math.Max(math.Abs(want[i]), 1)) {
			t.Errorf("%s[%d]: got %.17g, want %.17g", what, i, got[i], want[i])
		}
	}
}

// TestGather: Gather (G.ByIndices) of a vector and of a matrix, with
// repeated indices and more indices than entries, picks the entries or
// rows, and its autodiff gradient is the scatter-add of the incoming
// gradient, both computed here in plain Go.
func TestGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	idx := []int{3, 0, 3, 2, 3, 1}
	for _, width := range []int{0, 4} { // a vector, a (5, 4) matrix
		shape, w := []int{5}, 1
		if width > 0 {
			shape, w = []int{5, width}, width
		}
		x := make([]float64, 5*w)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		weights := make([]float64, len(idx)*w)
		for i := range weights {
			weights[i] = rng.NormFloat64()
		}
		g := G.NewGraph()
		xn := input(g, "x", x, shape...)
		out, grads := evaluate(t, G.Must(Gather(xn, ints(g, "idx", idx))), weights, xn)
		want, wantGrad := make([]float64, len(idx)*w), make([]float64, len(x))
		for i, j := range idx {
			copy(want[i*w:(i+1)*w], x[j*w:(j+1)*w])
			for c := range w {
				wantGrad[j*w+c] += weights[i*w+c]
			}
		}
		checkClose(t, "Gather", out, want, 0)
		checkClose(t, "d/dx Gather", grads[0], wantGrad, 1e-15)
	}
}

// TestLogSoftmax: rows of very different scales, with logit gaps beyond
// 700 (where exp under- or overflows without the shift), ties and masked
// slots, against plain Go; the gradient of sum w * out is w - softmax *
// sum_row(w) in every row.
func TestLogSoftmax(t *testing.T) {
	const r = 4
	x := []float64{
		1000, 0, 0, -1e9,
		0, -800, 1, 2,
		5, 5, 5, 5,
		1e-3, 2e-3, -1e9, -1e9,
		-1e6, -1e6 + 1, -1e6 + 2, 0,
	}
	n := len(x) / r
	rng := rand.New(rand.NewPCG(3, 4))
	w := make([]float64, len(x))
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	g := G.NewGraph()
	xn := input(g, "x", x, n, r)
	out, grads := evaluate(t, G.Must(LogSoftmax(xn)), w, xn)
	want, wantGrad := make([]float64, len(x)), make([]float64, len(x))
	for i := range n {
		row := x[i*r : (i+1)*r]
		m := slices.Max(row)
		sum, wsum := 0.0, 0.0
		for j, v := range row {
			sum += math.Exp(v - m)
			wsum += w[i*r+j]
		}
		for j, v := range row {
			want[i*r+j] = (v - m) - math.Log(sum)
			wantGrad[i*r+j] = w[i*r+j] - math.Exp(v-m)/sum*wsum
		}
	}
	checkClose(t, "LogSoftmax", out, want, 1e-15)
	checkClose(t, "d/dx LogSoftmax", grads[0], wantGrad, 1e-14)
	if out[0] != 0 || out[8] != -math.Log(4) {
		t.Errorf("max of [1000 0 0 masked], tie of four: got %v and %v, want exactly 0 and %v", out[0], out[8], -math.Log(4))
	}
}

// TestLayerNorm: LN([1 2 3 4]) with gain g and bias b is (h - 2.5) /
// sqrt(1.25 + 1e-5) * g + b, and so on for a second row, written out.
func TestLayerNorm(t *testing.T) {
	h := []float64{1, 2, 3, 4, -2, 0, 2, 8}
	gain, bias := []float64{1, 2, -1, 0.5}, []float64{0, 1, 0, -3}
	want := make([]float64, len(h))
	for r, mean := range []float64{2.5, 2} {
		variance := []float64{1.25, 14}[r]
		for i := range 4 {
			want[r*4+i] = (h[r*4+i]-mean)/math.Sqrt(variance+1e-5)*gain[i] + bias[i]
		}
	}
	g := G.NewGraph()
	out, _ := evaluate(t, G.Must(LayerNorm(input(g, "h", h, 2, 4), input(g, "gain", gain, 4), input(g, "bias", bias, 4), 1e-5)), make([]float64, 8))
	checkClose(t, "LayerNorm", out, want, 1e-15)
}

// TestAttention: two heads over b = 2 sequences of 4 slots with a prompt
// and a window of 2, against the formula written out in plain Go loops.
func TestAttention(t *testing.T) {
	const b, l, d, heads, ctx = 2, 4, 4, 2, 2
	rng := rand.New(rand.NewPCG(5, 6))
	rnd := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		return x
	}
	h0, wq, wk, wv, wo := rnd(b*l*d), rnd(d*d), rnd(d*d), rnd(d*d), rnd(d*d)
	g := G.NewGraph()
	out, _ := evaluate(t, G.Must(Attention(input(g, "h0", h0, b*l, d), input(g, "WQ", wq, d, d), input(g, "WK", wk, d, d),
		input(g, "WV", wv, d, d), input(g, "WO", wo, d, d), b, l, heads, ctx, true, -1e9)), make([]float64, b*l*d))
	mul := func(x, w []float64) []float64 { // (b*l, d) x (d, d)
		y := make([]float64, len(x))
		for i := range b * l {
			for j := range d {
				for k := range d {
					y[i*d+j] += x[i*d+k] * w[k*d+j]
				}
			}
		}
		return y
	}
	q, k, v := mul(h0, wq), mul(h0, wk), mul(h0, wv)
	cat := make([]float64, b*l*d)
	dh := d / heads
	for s := range b {
		for i := range l {
			for hd := range heads {
				var keys []int // slot 0 is the prompt: it sees itself; the others see it and their window
				for j := range l {
					if j == 0 || (i > 0 && j <= i && j > i-ctx) || (i == 0 && j == 0) {
						keys = append(keys, j)
					}
				}
				sc := make([]float64, len(keys))
				for a, j := range keys {
					for c := range dh {
						sc[a] += q[(s*l+i)*d+hd*dh+c] * k[(s*l+j)*d+hd*dh+c]
					}
					sc[a] /= math.Sqrt(float64(dh))
				}
				m, z := slices.Max(sc), 0.0
				for _, x := range sc {
					z += math.Exp(x - m)
				}
				for a, j := range keys {
					for c := range dh {
						cat[(s*l+i)*d+hd*dh+c] += math.Exp(sc[a]-m) / z * v[(s*l+j)*d+hd*dh+c]
					}
				}
			}
		}
	}
	checkClose(t, "Attention", out, mul(cat, wo), 1e-13)
}
