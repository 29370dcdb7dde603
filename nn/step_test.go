package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	G "gorgonia.org/gorgonia"
)

func TestNewStepErrors(t *testing.T) {
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := G.NewVector(b.Graph(), G.Float64, G.WithShape(b.NumParams()), G.WithName("c")) // (P)
	cost, err := b.ExpectedCost(c)
	if err != nil {
		t.Fatal(err)
	}
	other := G.NewGraph()
	stranger := G.NewVector(other, G.Float64, G.WithShape(2), G.WithName("stranger")) // (2)
	tests := []struct {
		name       string
		cost       *G.Node
		learnables G.Nodes
		solver     G.Solver
		want       string
	}{
		{"nil cost", nil, b.Learnables(), &solvers.Sign{LR: 1}, "cost must be a scalar"},
		{"vector cost", b.LogProbs(), b.Learnables(), &solvers.Sign{LR: 1}, "cost must be a scalar"},
		{"no learnables", cost, nil, &solvers.Sign{LR: 1}, "no learnables"},
		{"nil solver", cost, b.Learnables(), nil, "nil solver"},
		{"learnable of another graph", cost, G.Nodes{stranger}, &solvers.Sign{LR: 1}, "nn: step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewStep(tt.cost, tt.learnables, tt.solver)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRecoverGraph(t *testing.T) {
	build := func() (err error) {
		defer recoverGraph("build", &err)
		panic("shape mismatch")
	}
	err := build()
	if want := "nn: build: gorgonia panic: shape mismatch"; err == nil || err.Error() != want {
		t.Errorf("got error %v, want %q", err, want)
	}
}

func TestStepEvalDoesNotUpdate(t *testing.T) {
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport}, testLogits)
	if err != nil {
		t.Fatal(err)
	}
	c := G.NewVector(b.Graph(), G.Float64, G.WithShape(b.NumParams()), G.WithName("c")) // (P)
	cost, err := b.ExpectedCost(c)
	if err != nil {
		t.Fatal(err)
	}
	step, err := NewStep(cost, b.Learnables(), &solvers.Sign{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	cv := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	if err := G.Let(c, vec(cv)); err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for e, p := range b.Probs() {
		want += cv[e] * p
	}
	got, err := step.Eval()
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "eval cost", []float64{got}, []float64{want}, 1e-14, 1)
	if logits := b.Logits(); !reflect.DeepEqual(logits, testLogits) {
		t.Errorf("logits after Eval: got %v, want unchanged %v", logits, testLogits)
	}
	got, err = step.Run()
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "run cost", []float64{got}, []float64{want}, 1e-14, 1)
	if logits := b.Logits(); reflect.DeepEqual(logits, testLogits) {
		t.Errorf("logits after Run: got unchanged, want updated")
	}
}

// TestStepMatchesAnalytic runs several SGD steps through Step at a size
// where the tape machine reuses registers, and checks each update and cost.
func TestStepMatchesAnalytic(t *testing.T) {
	const rows, k, lr = 200, 6, 0.3
	s := ringSupport(rows, k)
	rng := rand.New(rand.NewPCG(5, 6))
	logits := make([]float64, s.NNZ())
	for i := range logits {
		logits[i] = rng.NormFloat64() * 3
	}
	frozen := make([]bool, rows)
	for r := range frozen {
		frozen[r] = r%7 == 0
	}
	b, err := NewBigram(BigramConfig{Vocab: rows, Support: s, Frozen: frozen}, logits)
	if err != nil {
		t.Fatal(err)
	}
	c := G.NewVector(b.Graph(), G.Float64, G.WithShape(b.NumParams()), G.WithName("c")) // (P)
	cost, err := b.ExpectedCost(c)
	if err != nil {
		t.Fatal(err)
	}
	step, err := NewStep(cost, b.Learnables(), &solvers.SGD{LR: lr})
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	cv := make([]float64, b.NumParams())
	for it := 0; it < 4; it++ {
		for i := range cv {
			cv[i] = rng.Float64()*10 - 2
		}
		if err := G.Let(c, vec(cv)); err != nil {
			t.Fatal(err)
		}
		before := b.Logits()
		grad := expectedCostGrad(b, cv)
		wantCost := 0.0
		probs := b.Probs()
		for i, e := range b.TrainableEntries() {
			wantCost += cv[i] * probs[e]
		}
		got, err := step.Run()
		if err != nil {
			t.Fatal(err)
		}
		checkClose(t, "cost", []float64{got}, []float64{wantCost}, 1e-13, 1)
		after := b.Logits()
		want := append([]float64(nil), before...)
		for i, e := range b.TrainableEntries() {
			want[e] -= lr * grad[i]
		}
		checkClose(t, "logits after step", after, want, 1e-12, 1)
		sq := 0.0
		for _, g := range grad {
			sq += g * g
		}
		checkClose(t, "gradient norm", []float64{step.GradNorm()}, []float64{math.Sqrt(sq)}, 1e-12, 1)
	}
}

// Example fits a three-token bigram to pair frequencies by cross-entropy
// with sign gradient descent.
func Example() {
	cfg := BigramConfig{
		Vocab: 3,
		Support: Support{ // 0 -> {1, 2}, 1 -> {2}, 2 -> {0, 1}
			Offsets: []int{0, 2, 3, 5},
			Next:    []int{1, 2, 2, 0, 1},
		},
	}
	b, err := NewBigram(cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	w := G.NewVector(b.Graph(), G.Float64, G.WithShape(b.NumParams()), G.WithName("w")) // (P)
	loss, err := b.WeightedLogLik(w)
	if err != nil {
		fmt.Println(err)
		return
	}
	solver, err := solvers.New(solvers.Config{Name: "sign", LR: 0.01})
	if err != nil {
		fmt.Println(err)
		return
	}
	step, err := NewStep(loss, b.Learnables(), solver)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer step.Close()
	// Minus the empirical pair frequencies q(s, a), in support order.
	minus := vec([]float64{-0.3, -0.1, -0.2, -0.1, -0.3})
	for i := 0; i < 300; i++ {
		if err := G.Let(w, minus); err != nil {
			fmt.Println(err)
			return
		}
		if _, err := step.Run(); err != nil {
			fmt.Println(err)
			return
		}
	}
	// pi(a|s) approaches q(s, a) / sum_a' q(s, a').
	fmt.Printf("%.2f\n", b.Probs())
	// Output:
	// [0.75 0.25 1.00 0.25 0.75]
}

// TestAccumulateSumsGradients: accumulating the losses with constants c1
// and c2 and applying once moves the parameters exactly as one Run with
// c1 + c2 (the loss is linear in the constants), leaves them unchanged
// until Apply, and Applied is the analytic gradient of the summed loss.
func TestAccumulateSumsGradients(t *testing.T) {
	c1 := []float64{1, -2, 3, 0.5, 5, -6, 7, 8, 0, 10, 1}
	c2 := []float64{0.5, 2, -1, 4, 0, 6, -3, 1, 9, 2, 2}
	sum := make([]float64, len(c1))
	for i := range sum {
		sum[i] = c1[i] + c2[i]
	}
	build := func() (*Bigram, *G.Node, *Step) {
		b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport}, testLogits)
		if err != nil {
			t.Fatal(err)
		}
		c := G.NewVector(b.Graph(), G.Float64, G.WithShape(b.NumParams()), G.WithName("c")) // (P)
		cost, err := b.ExpectedCost(c)
		if err != nil {
			t.Fatal(err)
		}
		step, err := NewStep(cost, b.Learnables(), &solvers.SGD{LR: 0.3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { step.Close() })
		return b, c, step
	}
	one, oneC, oneStep := build()
	two, c, step := build()
	if err := step.Apply(); err == nil {
		t.Error("apply before accumulate: got no error")
	}
	for round := 0; round < 2; round++ { // twice: Apply must empty the sum
		for _, cv := range [][]float64{c1, c2} {
			if err := G.Let(c, vec(cv)); err != nil {
				t.Fatal(err)
			}
			if _, err := step.Accumulate(); err != nil {
				t.Fatal(err)
			}
		}
		if round == 0 && !reflect.DeepEqual(two.Logits(), testLogits) {
			t.Fatalf("logits changed before Apply")
		}
		if err := step.Apply(); err != nil {
			t.Fatal(err)
		}
		if round == 0 { // one is still at the logits two's sum was taken at
			checkClose(t, "applied gradient", step.Applied()[0], expectedCostGrad(one, sum), 1e-12, 1e-12)
		}
		if err := step.Apply(); err == nil {
			t.Error("a second apply without an accumulate: got no error")
		}
		if err := G.Let(oneC, vec(sum)); err != nil {
			t.Fatal(err)
		}
		if _, err := oneStep.Run(); err != nil {
			t.Fatal(err)
		}
		checkClose(t, "accumulated update", two.Logits(), one.Logits(), 1e-14, 1)
	}
}

// BenchmarkTapeMachineRunAll is the fixed cost of one gorgonia RunAll, on a
// graph of two ops and their gradient: the floor under every Step.Run.
// gorgonia v0.9.18's tapeMachine.RunAll locks the caller's OS thread and
// runs the tape on a goroutine of its own, waiting on channels, so each call
// costs two switches between OS threads rather than goroutines
// (golang/go#18023). The headline job takes 565 steps, one RunAll each.
func BenchmarkTapeMachineRunAll(b *testing.B) {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float64, G.WithShape(4), G.WithName("x"), G.WithInit(G.Ones()))
	cost := G.Must(G.Sum(G.Must(G.Mul(x, x))))
	if _, err := G.Grad(cost, x); err != nil {
		b.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		vm.Reset()
	}
}
