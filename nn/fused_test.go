package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The fused graph equals the reference built from stock ops (the
// transformer as it was before its fused ops), in log-probabilities and in
// the autodiff gradient of every parameter of a loss weighting every slot,
// masked ones included: both initialisations, with and without prompt,
// layer norm and positions, one and two heads.
func TestTransformerMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		init       string
		dim, heads int
		pos        string
		prompt, ln bool
	}{
		{"table", 6, 2, "learned", false, false},
		{"table", 4, 1, "learned", true, true},
		{"table", 8, 2, "none", true, false},
		{"table", 5, 1, "none", false, true},
		{"identity", 8, 1, "learned", true, true},
		{"identity", 8, 2, "learned", false, false},
	} {
		name := fmt.Sprintf("%s-D%d-H%d-%s-prompt=%v-ln=%v", tc.init, tc.dim, tc.heads, tc.pos, tc.prompt, tc.ln)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(61, 62))
			v := 8
			s := randomSupport(rng, v)
			cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: tc.dim, Heads: tc.heads, Context: 3, Positional: tc.pos, Prompt: tc.prompt, LayerNorm: tc.ln, Init: tc.init}}
			tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
			if err != nil {
				t.Fatal(err)
			}
			randomizeParams(t, tr, rng, 0.6)
			const b, n = 3, 6
			r := cfg.maxRow()
			w := randomVector(rng, b*n*r, 1)
			rows := randomWindows(rng, s, b, n, tc.prompt)
			ref := newReference(t, tr, b, n, rows, w)

			fw, err := tr.Forward(b, n)
			if err != nil {
				t.Fatal(err)
			}
			wn := G.NewVector(tr.Graph(), G.Float64, G.WithShape(len(w)), G.WithName("w"),
				G.WithValue(tensor.New(tensor.WithShape(len(w)), tensor.WithBacking(slices.Clone(w)))))
			loss := G.Must(G.Mul(wn, fw.LogProbs())) // ()
			var logp, lossV G.Value
			G.Read(fw.LogProbs(), &logp)
			G.Read(loss, &lossV)
			grads, err := G.Grad(loss, tr.Learnables()...)
			if err != nil {
				t.Fatal(err)
			}
			gv := make([]G.Value, len(grads))
			for i, g := range grads {
				G.Read(g, &gv[i])
			}
			vm := G.NewTapeMachine(tr.Graph())
			defer vm.Close()
			if err := fw.SetWindows(rows); err != nil {
				t.Fatal(err)
			}
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			got, want := logp.Data().([]float64), ref.logp.Data().([]float64)
			for sl, e := range fw.SlotEntries() {
				if e < 0 {
					if math.Exp(got[sl]) != 0 || math.Exp(want[sl]) != 0 {
						t.Fatalf("masked slot %d: got probs %v, reference %v, want 0", sl, math.Exp(got[sl]), math.Exp(want[sl]))
					}
					continue
				}
				if !closeTo(got[sl], want[sl], 1e-12) {
					t.Fatalf("slot %d: got log-prob %v, want reference %v", sl, got[sl], want[sl])
				}
			}
			if l, rl := lossV.Data().(float64), ref.loss.Data().(float64); math.Abs(l-rl) > 1e-12*math.Abs(rl) {
				t.Errorf("loss: got %v, want reference %v", l, rl)
			}
			for k, node := range tr.Learnables() {
				g, rg := gv[k].Data().([]float64), ref.grads[k].Data().([]float64)
				scale := maxAbs(rg)
				if scale == 0 && node.Name() != "WO" {
					t.Errorf("reference gradient of %s is all zeros", node.Name())
				}
				for i := range g {
					if math.Abs(g[i]-rg[i]) > 1e-9*scale+1e-12 {
						t.Fatalf("d loss / d %s[%d]: got %v, want reference %v", node.Name(), i, g[i], rg[i])
					}
				}
			}
		})
	}
}

// opInput is a float64 input node of a fused op test holding random
// values.
func opInput(g *G.ExprGraph, rng *rand.Rand, name string, scale float64, shape ...int) *G.Node {
	n := tensor.Shape(shape).TotalSize()
	return G.NewTensor(g, G.Float64, len(shape), G.WithShape(shape...), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(randomVector(rng, n, scale)))))
}

// checkOpGradients checks the autodiff gradient of loss = sum w * out with
// respect to every input of a fused op against central finite differences
// (relative 1e-6), and that none is all zeros.
func checkOpGradients(t *testing.T, out *G.Node, inputs G.Nodes, w []float64) {
	t.Helper()
	g := out.Graph()
	n := out.Shape().TotalSize()
	flat := G.Must(G.Reshape(out, tensor.Shape{n})) // (n)
	wn := G.NewVector(g, G.Float64, G.WithShape(n), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(w))))
	loss := G.Must(G.Mul(flat, wn)) // ()
	var lossV G.Value
	G.Read(loss, &lossV)
	grads, err := G.Grad(loss, inputs...)
	if err != nil {
		t.Fatal(err)
	}
	gv := make([]G.Value, len(grads))
	for i, gr := range grads {
		G.Read(gr, &gv[i])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	run := func() float64 {
		defer vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return lossV.Data().(float64)
	}
	run()
	want := make([][]float64, len(gv))
	for i, v := range gv {
		want[i] = slices.Clone(v.Data().([]float64))
	}
	const eps = 1e-5
	for k, in := range inputs {
		if maxAbs(want[k]) == 0 {
			t.Errorf("d loss / d %s: got all zeros, want a gradient", in.Name())
		}
		data := in.Value().Data().([]float64)
		for i := range data {
			x := data[i]
			data[i] = x + eps
			up := run()
			data[i] = x - eps
			down := run()
			data[i] = x
			fd := (up - down) / (2 * eps)
			if gr := want[k][i]; math.Abs(gr-fd) > 1e-6*(math.Abs(gr)+math.Abs(fd))+1e-9 {
				t.Errorf("d loss / d %s[%d]: got autodiff %v, want finite difference %v", in.Name(), i, gr, fd)
			}
		}
	}
}

// testLayout returns the layout of b random windows of at most n tokens.
func testLayout(rng *rand.Rand, s Support, b, n, ctx int, prompt bool) *windowLayout {
	r := TransformerConfig{Vocab: s.Rows(), Support: s}.maxRow()
	lay := newWindowLayout(s, b, n, r, ctx, prompt)
	lay.fill(randomWindows(rng, s, b, n, prompt))
	return lay
}

// The fused attention op's backward matches finite differences for every
// input: with and without prompt and positions, one and two heads.
func TestAttentionOpFiniteDifference(t *testing.T) {
	for _, tc := range []struct {
		heads       int
		pos, prompt bool
	}{{1, true, false}, {2, true, true}, {2, false, false}, {1, false, true}} {
		t.Run(fmt.Sprintf("H%d-pos=%v-prompt=%v", tc.heads, tc.pos, tc.prompt), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(63, 64))
			const v, d, ctx, b, n = 6, 4, 2, 3, 4
			s := randomSupport(rng, v)
			lay := testLayout(rng, s, b, n, ctx, tc.prompt)
			g := G.NewGraph()
			e := opInput(g, rng, "E", 0.8, v, d)
			var p *G.Node
			in := G.Nodes{e}
			if tc.pos {
				p = opInput(g, rng, "P", 0.8, ctx, d)
				in = append(in, p)
			}
			ws := G.Nodes{opInput(g, rng, "WQ", 0.8, d, d), opInput(g, rng, "WK", 0.8, d, d),
				opInput(g, rng, "WV", 0.8, d, d), opInput(g, rng, "WO", 0.8, d, d)}
			out, err := attend(lay, tc.heads, e, p, ws[0], ws[1], ws[2], ws[3])
			if err != nil {
				t.Fatal(err)
			}
			checkOpGradients(t, out, append(in, ws...), randomVector(rng, b*n*d, 1))
		})
	}
}

// The fused layer norm op's backward matches finite differences for h,
// gain and bias.
func TestLayerNormOpFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	const n, d = 5, 4
	g := G.NewGraph()
	h, gain, bias := opInput(g, rng, "h", 1, n, d), opInput(g, rng, "gain", 1, d), opInput(g, rng, "bias", 1, d)
	out, err := layerNorm(h, gain, bias)
	if err != nil {
		t.Fatal(err)
	}
	checkOpGradients(t, out, G.Nodes{h, gain, bias}, randomVector(rng, n*d, 1))
}

// The fused unembedding op's backward matches finite differences for hn,
// U and B, U stored by row (V, D) or by column (D, V), weights on the
// unmasked slots (a masked log-prob is about -1e9: too large for finite
// differences; TestTransformerMatchesReference weights those too).
func TestUnembedOpFiniteDifference(t *testing.T) {
	for _, tc := range []struct {
		transposed, bias bool
	}{{false, true}, {true, false}, {false, false}} {
		t.Run(fmt.Sprintf("transposed=%v-bias=%v", tc.transposed, tc.bias), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(67, 68))
			const v, d, b, n = 6, 3, 2, 4
			s := randomSupport(rng, v)
			lay := testLayout(rng, s, b, n, 2, false)
			g := G.NewGraph()
			h := opInput(g, rng, "h", 1, b*n, d)
			u := opInput(g, rng, "U", 1, v, d)
			if tc.transposed {
				u = opInput(g, rng, "U", 1, d, v)
			}
			in := G.Nodes{h, u}
			var bias *G.Node
			if tc.bias {
				bias = opInput(g, rng, "B", 1, s.NNZ())
				in = append(in, bias)
			}
			out, err := unembed(lay, h, u, bias, tc.transposed)
			if err != nil {
				t.Fatal(err)
			}
			w := randomVector(rng, len(lay.entries), 1)
			for sl, e := range lay.entries {
				if e < 0 {
					w[sl] = 0
				}
			}
			checkOpGradients(t, out, in, w)
		})
	}
}
