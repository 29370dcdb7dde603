package nn

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

// forwardRun is one forward graph of a transformer and the autodiff
// gradients of a loss weighting every slot of its log-probabilities and
// every taken token.
type forwardRun struct {
	logp, taken []float64
	loss        float64
	grads       [][]float64
}

// runForward builds tr's forward of the given ops for rows, with the loss
// sum_s ws[s] logp[s] + sum_p wt[p] taken[p], and runs it once.
func runForward(t *testing.T, tr *Transformer, o Ops, b, n int, rows []Window, ws, wt []float64) forwardRun {
	t.Helper()
	fw, err := tr.Forward(b, n, o)
	if err != nil {
		t.Fatal(err)
	}
	g := tr.Graph()
	vecNode := func(name string, x []float64) *G.Node {
		return G.NewVector(g, G.Float64, G.WithShape(len(x)), G.WithName(name), G.WithValue(tensor.New(tensor.WithShape(len(x)), tensor.WithBacking(slices.Clone(x)))))
	}
	taken, err := fw.WeightedTakenLogLik(vecNode("wt", wt))
	if err != nil {
		t.Fatal(err)
	}
	loss := G.Must(G.Add(G.Must(G.Mul(vecNode("ws", ws), fw.LogProbs())), taken)) // ()
	var lv, pv, tv G.Value
	G.Read(fw.LogProbs(), &pv)
	G.Read(fw.Taken(), &tv)
	G.Read(loss, &lv)
	grads, err := G.Grad(loss, tr.Learnables()...)
	if err != nil {
		t.Fatal(err)
	}
	gv := make([]G.Value, len(grads))
	for i, gr := range grads {
		G.Read(gr, &gv[i])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := fw.SetWindows(rows); err != nil {
		t.Fatal(err)
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	r := forwardRun{logp: slices.Clone(pv.Data().([]float64)), taken: slices.Clone(tv.Data().([]float64)), loss: lv.Data().(float64)}
	for _, v := range gv {
		r.grads = append(r.grads, slices.Clone(v.Data().([]float64)))
	}
	return r
}

// TestForwardStockMatchesFused: the fused transformer graph equals the
// one built from stock ops (Ops Stock), in log-probabilities, taken
// log-probabilities, loss and the autodiff gradient of every parameter of
// a loss weighting every slot (masked ones included) and every taken
// token: both initialisations, with and without prompt, layer norm and
// positions, one and two heads, on the AVX2 kernels and on gonum's.
func TestForwardStockMatchesFused(t *testing.T) {
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
		for _, avx := range []bool{true, false} {
			name := fmt.Sprintf("%s-D%d-H%d-%s-prompt=%v-ln=%v-avx=%v", tc.init, tc.dim, tc.heads, tc.pos, tc.prompt, tc.ln, avx)
			t.Run(name, func(t *testing.T) {
				defer kernels.UseAVX(kernels.UseAVX(avx))
				rng := rand.New(rand.NewPCG(61, 62))
				v := 8
				s := randomSupport(rng, v)
				cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: tc.dim, Heads: tc.heads, Context: 3, Positional: tc.pos, Prompt: tc.prompt, LayerNorm: tc.ln, Init: tc.init}}
				fused, stock := twinTransformers(t, cfg, rng)
				randomizeParams(t, fused, rng, 0.6)
				if err := stock.SetParamValues(fused.ParamValues()); err != nil {
					t.Fatal(err)
				}
				const b, n = 3, 6
				ws, wt := randomVector(rng, b*n*cfg.maxRow(), 1), randomVector(rng, b*n, 1)
				rows := randomWindows(rng, s, b, n, tc.prompt)
				got := runForward(t, fused, Fused, b, n, rows, ws, wt)
				want := runForward(t, stock, Stock, b, n, rows, ws, wt)
				checkClose(t, "log-probs", got.logp, want.logp, 1e-12, 1)
				checkClose(t, "taken", got.taken, want.taken, 1e-12, 1)
				if math.Abs(got.loss-want.loss) > 1e-12*math.Abs(want.loss) {
					t.Errorf("loss: got %v, want stock's %v", got.loss, want.loss)
				}
				for k, node := range fused.Learnables() {
					scale := maxAbs(want.grads[k])
					if scale == 0 && node.Name() != "WO" {
						t.Errorf("stock's gradient of %s is all zeros", node.Name())
					}
					for i := range got.grads[k] {
						if math.Abs(got.grads[k][i]-want.grads[k][i]) > 1e-9*scale {
							t.Fatalf("d loss / d %s[%d]: got %v, want stock's %v", node.Name(), i, got.grads[k][i], want.grads[k][i])
						}
					}
				}
			})
		}
	}
}
