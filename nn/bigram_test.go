package nn

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/ops"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	G "gorgonia.org/gorgonia"
)

// testSupport has ragged rows, including a row of one.
var testSupport = Support{
	Offsets: []int{0, 3, 5, 6, 9, 11},
	Next:    []int{1, 2, 3, 0, 4, 2, 0, 1, 4, 2, 3},
}

// testLogits has gaps beyond 700 in rows 0 and 3.
var testLogits = []float64{1000, 0, 0, 0.5, -0.25, 3, 0, -800, 1, 2, 2}

// refSoftmax is the plain-Go reference row-wise softmax over a support.
func refSoftmax(logits []float64, s Support) []float64 {
	p := make([]float64, len(logits))
	for r := 0; r < s.Rows(); r++ {
		lo, hi := s.Offsets[r], s.Offsets[r+1]
		m := math.Inf(-1)
		for _, v := range logits[lo:hi] {
			m = math.Max(m, v)
		}
		sum := 0.0
		for e := lo; e < hi; e++ {
			p[e] = math.Exp(logits[e] - m)
			sum += p[e]
		}
		for e := lo; e < hi; e++ {
			p[e] /= sum
		}
	}
	return p
}

// bigramRunner runs a loss built by a Bigram with an input weight vector.
type bigramRunner struct {
	b    *Bigram
	w    *G.Node
	vm   G.VM
	cost G.Value
}

func newBigramRunner(t testing.TB, b *Bigram, loss func(*Bigram, *G.Node) (*G.Node, error)) *bigramRunner {
	t.Helper()
	r := &bigramRunner{b: b, w: G.NewVector(b.Graph(), G.Float64, G.WithShape(b.NumParams()), G.WithName("w"))} // (P)
	cost, err := loss(b, r.w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(cost, b.Learnables()...); err != nil {
		t.Fatal(err)
	}
	G.Read(cost, &r.cost)
	r.vm = G.NewTapeMachine(b.Graph())
	t.Cleanup(func() { r.vm.Close() })
	return r
}

// run returns the cost and its gradient with respect to Theta at logits.
func (r *bigramRunner) run(t testing.TB, logits, w []float64) (float64, []float64) {
	t.Helper()
	if err := r.b.SetLogits(logits); err != nil {
		t.Fatal(err)
	}
	if err := G.Let(r.w, vec(w)); err != nil {
		t.Fatal(err)
	}
	defer r.vm.Reset()
	if err := r.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	cost, err := ops.Scalar(r.cost)
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.b.Theta().Grad()
	if err != nil {
		t.Fatal(err)
	}
	return cost, append([]float64(nil), g.Data().([]float64)...)
}

func TestBigramProbs(t *testing.T) {
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport}, testLogits)
	if err != nil {
		t.Fatal(err)
	}
	got := b.Probs()
	want := refSoftmax(testLogits, testSupport)
	checkClose(t, "probs", got, want, 1e-15, 1e-300)
	for r := 0; r < testSupport.Rows(); r++ {
		sum := 0.0
		for e := testSupport.Offsets[r]; e < testSupport.Offsets[r+1]; e++ {
			sum += got[e]
		}
		if math.Abs(sum-1) > 1e-15 {
			t.Errorf("row %d sums to %.17g, want 1", r, sum)
		}
	}
	if got[0] != 1 || got[1] != 0 || got[2] != 0 {
		t.Errorf("row [1000 0 0]: got %v, want exactly [1 0 0]", got[:3])
	}
	if got[5] != 1 {
		t.Errorf("row of one: got %v, want exactly 1", got[5])
	}

	// exp(LogProbs) evaluated by the graph agrees with Probs.
	var logp G.Value
	G.Read(b.LogProbs(), &logp)
	vm := G.NewTapeMachine(b.Graph())
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	graph := make([]float64, len(want))
	for i, v := range logp.Data().([]float64) {
		graph[b.TrainableEntries()[i]] = math.Exp(v)
	}
	checkClose(t, "exp(LogProbs)", graph, want, 1e-15, 1e-300)
}

func TestBigramUniformInit(t *testing.T) {
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for e, p := range b.Probs() {
		r := testSupport.RowOf(e)
		if want := 1 / float64(len(testSupport.Row(r))); math.Abs(p-want) > 1e-16 {
			t.Errorf("entry %d: got %v, want uniform %v", e, p, want)
		}
	}
}

func TestBigramFrozenRows(t *testing.T) {
	frozen := []bool{false, true, false, true, false}
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport, Frozen: frozen}, testLogits)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries := []int{0, 1, 2, 5, 9, 10} // rows 0, 2 and 4
	if got := b.TrainableEntries(); !reflect.DeepEqual(got, wantEntries) {
		t.Errorf("trainable entries: got %v, want %v", got, wantEntries)
	}
	if got, want := b.NumParams(), len(wantEntries); got != want {
		t.Errorf("parameters: got %d, want %d", got, want)
	}
	if got, want := b.Theta().Shape().TotalSize(), len(wantEntries); got != want {
		t.Errorf("theta size: got %d, want %d", got, want)
	}

	c := G.NewVector(b.Graph(), G.Float64, G.WithShape(b.NumParams()), G.WithName("c")) // (P)
	cost, err := b.ExpectedCost(c)
	if err != nil {
		t.Fatal(err)
	}
	step, err := NewStep(cost, b.Learnables(), &solvers.SGD{LR: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	for i := 0; i < 5; i++ {
		if err := G.Let(c, vec([]float64{1, -2, 3, 4, -5, 6})); err != nil {
			t.Fatal(err)
		}
		if _, err := step.Run(); err != nil {
			t.Fatal(err)
		}
	}
	got := b.Logits()
	changed := 0
	for e := range got {
		if frozen[testSupport.RowOf(e)] {
			if got[e] != testLogits[e] {
				t.Errorf("frozen entry %d: got %v, want unchanged %v", e, got[e], testLogits[e])
			}
		} else if got[e] != testLogits[e] {
			changed++
		}
	}
	if changed == 0 {
		t.Errorf("trainable entries changed: got 0, want some")
	}
}

// expectedCostGrad is the analytic gradient of sum_e c[e] pi[e] with respect
// to the logits: pi(a|s) (c(s,a) - sum_a' pi(a'|s) c(s,a')), per trainable row.
func expectedCostGrad(b *Bigram, c []float64) []float64 {
	probs, s := b.Probs(), b.Config().Support
	grad := make([]float64, len(c))
	for i := 0; i < len(c); {
		r := s.RowOf(b.TrainableEntries()[i])
		n := len(s.Row(r))
		mean := 0.0
		for k := 0; k < n; k++ {
			mean += probs[b.TrainableEntries()[i+k]] * c[i+k]
		}
		for k := 0; k < n; k++ {
			grad[i+k] = probs[b.TrainableEntries()[i+k]] * (c[i+k] - mean)
		}
		i += n
	}
	return grad
}

func TestBigramExpectedCostGrad(t *testing.T) {
	logits := []float64{2, 0, -1, 0.5, -0.25, 3, 0, -8, 1, 2, 2.5} // moderate gaps: every entry has gradient
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport, Frozen: []bool{false, false, false, false, true}}, logits)
	if err != nil {
		t.Fatal(err)
	}
	c := []float64{3, -1, 7, 0.5, 2, 9, 1, 4, -3}
	r := newBigramRunner(t, b, (*Bigram).ExpectedCost)
	cost, got := r.run(t, logits, c)
	checkClose(t, "gradient vs analytic", got, expectedCostGrad(b, c), 1e-9, 1e-12)

	wantCost := 0.0
	probs := b.Probs()
	for i, e := range b.TrainableEntries() {
		wantCost += c[i] * probs[e]
	}
	checkClose(t, "cost", []float64{cost}, []float64{wantCost}, 1e-14, 1)

	f := func(theta []float64) float64 {
		full := append([]float64(nil), logits...)
		for i, e := range b.TrainableEntries() {
			full[e] = theta[i]
		}
		cost, _ := r.run(t, full, c)
		return cost
	}
	theta := make([]float64, b.NumParams())
	for i, e := range b.TrainableEntries() {
		theta[i] = logits[e]
	}
	checkClose(t, "gradient vs finite differences", got, centralDiff(f, theta, 1e-5), 1e-6, 1e-3)
	if got[5] != 0 {
		t.Errorf("row of one: got gradient %v, want exactly 0", got[5])
	}
}

func TestBigramCrossEntropyGrad(t *testing.T) {
	// Empirical pair frequencies q(s,a) summing to 1; d(s) = sum_a q(s,a) and
	// p(a|s) = q(s,a)/d(s). The gradient of -sum q log pi is d(s)(pi - p),
	// row by row (the paper's row-wise lemma).
	q := []float64{0.1, 0.05, 0, 0.2, 0, 0.05, 0.1, 0.1, 0.1, 0.3, 0}
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport}, testLogits)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, len(q))
	for i := range q {
		w[i] = -q[i]
	}
	r := newBigramRunner(t, b, (*Bigram).WeightedLogLik)
	_, got := r.run(t, testLogits, w)
	probs := b.Probs()
	want := make([]float64, len(q))
	for s := 0; s < testSupport.Rows(); s++ {
		lo, hi := testSupport.Offsets[s], testSupport.Offsets[s+1]
		d := 0.0
		for e := lo; e < hi; e++ {
			d += q[e]
		}
		for e := lo; e < hi; e++ {
			want[e] = d*probs[e] - q[e] // d(s) (pi(a|s) - q(s,a)/d(s))
		}
	}
	checkClose(t, "gradient vs d(s)(pi - p)", got, want, 1e-12, 1e-3)
}

func TestBigramSetLogits(t *testing.T) {
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport, Frozen: []bool{true, false, false, false, false}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetLogits(testLogits); err != nil {
		t.Fatal(err)
	}
	if got := b.Logits(); !reflect.DeepEqual(got, testLogits) {
		t.Errorf("logits: got %v, want %v", got, testLogits)
	}
	theta := b.Theta().Value().Data().([]float64)
	for i, e := range b.TrainableEntries() {
		if theta[i] != testLogits[e] {
			t.Errorf("theta[%d]: got %v, want %v", i, theta[i], testLogits[e])
		}
	}
	bad := append([]float64(nil), testLogits...)
	bad[3] = math.Inf(-1)
	if err := b.SetLogits(bad); err == nil || !strings.Contains(err.Error(), "logit 3 is -Inf") {
		t.Errorf("-Inf logit: got error %v, want one naming logit 3", err)
	}
	if err := b.SetLogits(testLogits[:4]); err == nil {
		t.Errorf("short logits: got nil error, want one")
	}
}

func TestBigramConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		cfg    BigramConfig
		logits []float64
		want   string
	}{
		{"zero vocab", BigramConfig{Support: testSupport}, nil, "vocab 0"},
		{"bad support", BigramConfig{Vocab: 4, Support: testSupport}, nil, "len(Offsets) 6"},
		{"frozen length", BigramConfig{Vocab: 5, Support: testSupport, Frozen: []bool{true}}, nil, "len(frozen) 1"},
		{"all frozen", BigramConfig{Vocab: 5, Support: testSupport, Frozen: []bool{true, true, true, true, true}}, nil, "every row is frozen"},
		{"logits length", BigramConfig{Vocab: 5, Support: testSupport}, []float64{1, 2}, "got 2 logits"},
		{"NaN logit", BigramConfig{Vocab: 5, Support: testSupport}, append([]float64{math.NaN()}, testLogits[1:]...), "logit 0 is NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBigram(tt.cfg, tt.logits)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
	b, err := NewBigram(BigramConfig{Vocab: 5, Support: testSupport}, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := G.NewGraph()
	wrongGraph := G.NewVector(other, G.Float64, G.WithShape(b.NumParams()), G.WithName("w"))      // (P)
	wrongShape := G.NewVector(b.Graph(), G.Float64, G.WithShape(3), G.WithName("short"))          // (3)
	wrongType := G.NewVector(b.Graph(), G.Float32, G.WithShape(b.NumParams()), G.WithName("f32")) // (P)
	for _, w := range []*G.Node{wrongGraph, wrongShape, wrongType} {
		if _, err := b.ExpectedCost(w); err == nil {
			t.Errorf("expected cost on %v: got nil error, want one", w.Name())
		}
		if _, err := b.WeightedLogLik(w); err == nil {
			t.Errorf("weighted log-likelihood on %v: got nil error, want one", w.Name())
		}
	}
}

// benchStep times one full training step (Let the weights, RunAll, sign
// update, Reset) of the loss at the paper's main size: P = 16500 trainable
// entries in rows of length 6.
func benchStep(b *testing.B, loss func(*Bigram, *G.Node) (*G.Node, error)) {
	const rows, k = 2750, 6
	bg, err := NewBigram(BigramConfig{Vocab: rows, Support: ringSupport(rows, k)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := bg.NumParams()
	w := G.NewVector(bg.Graph(), G.Float64, G.WithShape(p), G.WithName("w")) // (P)
	cost, err := loss(bg, w)
	if err != nil {
		b.Fatal(err)
	}
	step, err := NewStep(cost, bg.Learnables(), &solvers.Sign{LR: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	defer step.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	wv := make([]float64, p)
	for i := range wv {
		wv[i] = rng.Float64() * 100
	}
	wt := vec(wv)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := G.Let(w, wt); err != nil {
			b.Fatal(err)
		}
		if _, err := step.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(p)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkExpectedCostStep times a policy-gradient step (ExpectedCost).
func BenchmarkExpectedCostStep(b *testing.B) { benchStep(b, (*Bigram).ExpectedCost) }

// BenchmarkWeightedLogLikStep times a cross-entropy step (WeightedLogLik).
func BenchmarkWeightedLogLikStep(b *testing.B) { benchStep(b, (*Bigram).WeightedLogLik) }

// BenchmarkProbs times the policy of the paper's main size (ProbsInto: the
// softmax of each row of 6 entries), which the exact trainers compute
// every step to measure it.
func BenchmarkProbs(b *testing.B) {
	const rows, k = 2750, 6
	bg, err := NewBigram(BigramConfig{Vocab: rows, Support: ringSupport(rows, k)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float64, bg.NumParams())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bg.ProbsInto(dst)
	}
	b.ReportMetric(float64(len(dst))*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// TestBigramRepeats: a bigram given repeats (rows 4-6 repeating rows 1-3,
// rows 2 and 5 frozen, a last row of 2 so that no row falls in the
// softmax's one-by-one tail) takes the runs trainable in both as Theta's repeats,
// and its probabilities, weighted log-likelihood and gradient are those of
// the same bigram without repeats, bit for bit, whether the rows repeat or
// not. Repeats set after the log-likelihood is built are refused.
func TestBigramRepeats(t *testing.T) {
	s := Support{Offsets: []int{0, 2, 5, 7, 8, 11, 13, 14, 16}, Next: []int{1, 4, 0, 2, 3, 1, 3, 4, 4, 5, 6, 4, 6, 0, 0, 1}}
	cfg := BigramConfig{Vocab: 8, Support: s, Frozen: []bool{false, false, true, false, false, true, false, false}}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, repeat := range []bool{true, false} {
		logits, w := make([]float64, s.NNZ()), make([]float64, 0, s.NNZ())
		for e := range logits {
			logits[e] = rng.NormFloat64()
		}
		if repeat {
			copy(logits[8:14], logits[2:8])
		}
		plain, err := NewBigram(cfg, logits)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := NewBigram(cfg, logits)
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.SetRepeats([]kernels.Repeat{{Row: 4, From: 1, Rows: 3}}); err != nil {
			t.Fatal(err)
		}
		// Trainable rows 0, 1, 3, 4, 6, 7 are Theta's rows 0 to 5.
		if want := []kernels.Repeat{{Row: 3, From: 1, Rows: 1}, {Row: 4, From: 2, Rows: 1}}; !reflect.DeepEqual(rep.thetaReps, want) {
			t.Fatalf("Theta's repeats %v, want %v", rep.thetaReps, want)
		}
		for range plain.NumParams() {
			w = append(w, rng.NormFloat64())
		}
		if repeat { // the weights of Theta's repeated rows too: the backward copies their gradient
			copy(w[6:10], w[2:6])
		}
		bits := func(name string, got, want []float64) {
			t.Helper()
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("repeat %v: %s %d: got %v, want %v", repeat, name, i, got[i], want[i])
				}
			}
		}
		bits("probability", rep.Probs(), plain.Probs())
		c1, g1 := newBigramRunner(t, plain, (*Bigram).WeightedLogLik).run(t, logits, w)
		c2, g2 := newBigramRunner(t, rep, (*Bigram).WeightedLogLik).run(t, logits, w)
		bits("log-likelihood", []float64{c2}, []float64{c1})
		bits("gradient", g2, g1)
		if repeat && !rep.copied[0] {
			t.Error("the repeated rows were not copied")
		}
		if err := rep.SetRepeats(nil); err == nil || !strings.Contains(err.Error(), "before") {
			t.Errorf("repeats after the log-likelihood: got %v, want an error", err)
		}
	}
}
