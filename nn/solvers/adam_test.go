package solvers

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// softmaxRegression is a stock-op graph: the cross-entropy of a softmax
// regression, -(1/N) sum_n log softmax(x_n W + b)[y_n], with W (3, 4) and
// b (4) learnable, and its autodiff gradient, compiled on a tape machine.
// The log-softmax is the max-shifted one GORGONIA.md prescribes.
type softmaxRegression struct {
	params G.Nodes
	vm     G.VM
}

func newSoftmaxRegression(t *testing.T, w, b []float64) *softmaxRegression {
	t.Helper()
	const n, d, k = 6, 3, 4
	rng := rand.New(rand.NewPCG(7, 8))
	x, y := make([]float64, n*d), make([]float64, n*k)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range n {
		y[i*k+rng.IntN(k)] = 1
	}
	g := G.NewGraph()
	mat := func(name string, data []float64, r, c int) *G.Node {
		return G.NewMatrix(g, G.Float64, G.WithShape(r, c), G.WithName(name),
			G.WithValue(tensor.New(tensor.WithShape(r, c), tensor.WithBacking(append([]float64(nil), data...)))))
	}
	wn, xn, yn := mat("W", w, d, k), mat("x", x, n, d), mat("y", y, n, k)
	bn := G.NewVector(g, G.Float64, G.WithShape(k), G.WithName("b"),
		G.WithValue(tensor.New(tensor.WithShape(k), tensor.WithBacking(append([]float64(nil), b...)))))
	z := G.Must(G.BroadcastAdd(G.Must(G.Mul(xn, wn)), bn, nil, []byte{0})) // (N, D) x (D, K) + (K) -> (N, K)
	sh := G.Must(G.BroadcastSub(z, G.Must(G.Max(z, 1)), nil, []byte{1}))   // (N, K) - (N) -> (N, K)
	lse := G.Must(G.Log(G.Must(G.Sum(G.Must(G.Exp(sh)), 1))))              // (N, K) -> (N)
	logp := G.Must(G.BroadcastSub(sh, lse, nil, []byte{1}))                // (N, K) - (N) -> (N, K)
	cost := G.Must(G.Mul(G.Must(G.Sum(G.Must(G.HadamardProd(yn, logp)))), G.NewConstant(-1.0/n)))
	if _, err := G.Grad(cost, wn, bn); err != nil {
		t.Fatal(err)
	}
	r := &softmaxRegression{params: G.Nodes{wn, bn}, vm: G.NewTapeMachine(g)}
	t.Cleanup(func() { r.vm.Close() })
	return r
}

// step runs the graph and lets s update the parameters.
func (r *softmaxRegression) step(t *testing.T, s G.Solver) {
	t.Helper()
	defer r.vm.Reset()
	if err := r.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(G.NodesToValueGrads(r.params)); err != nil {
		t.Fatal(err)
	}
}

// TestAdamMatchesGorgonia: over 25 steps of a softmax regression, whose
// gradients change at every step, Adam moves both parameters as
// gorgonia's own AdamSolver does on an identical graph (same rate, betas,
// eps and bias correction), to 1e-12 relative at every step. At the first
// step any beta recurrence gives g/|g|; by the 25th the moments have mixed
// 25 gradients and 1 - Beta2^t has moved from 0.001 to 0.025.
func TestAdamMatchesGorgonia(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	w, b := make([]float64, 12), make([]float64, 4)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	cfg := Config{Name: "adam", LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	ours, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	theirs := G.NewAdamSolver(G.WithLearnRate(cfg.LR), G.WithBeta1(cfg.Beta1), G.WithBeta2(cfg.Beta2), G.WithEps(cfg.Eps))
	a, ref := newSoftmaxRegression(t, w, b), newSoftmaxRegression(t, w, b)
	moved := 0.0
	for step := range 25 {
		a.step(t, ours)
		ref.step(t, theirs)
		for k, p := range a.params {
			got, want := p.Value().Data().([]float64), ref.params[k].Value().Data().([]float64)
			checkClose(t, p.Name(), got, want, 1e-12, 1e-3)
			if t.Failed() {
				t.Fatalf("step %d", step+1)
			}
		}
	}
	for i, v := range a.params[0].Value().Data().([]float64) {
		moved = math.Max(moved, math.Abs(v-w[i]))
	}
	if moved < 0.5 {
		t.Errorf("W moved at most %v in 25 steps: want a run that goes somewhere", moved)
	}
	if got := ours.(*Adam).Steps(); got != 25 {
		t.Errorf("steps: got %d, want 25", got)
	}
}
