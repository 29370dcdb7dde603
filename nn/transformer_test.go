package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/tasks"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomSupport returns a support over v tokens whose rows hold 1 to 4
// distinct next tokens.
func randomSupport(rng *rand.Rand, v int) Support {
	s := Support{Offsets: []int{0}}
	for x := 0; x < v; x++ {
		k := 1 + rng.IntN(min(4, v))
		s.Next = append(s.Next, rng.Perm(v)[:k]...)
		s.Offsets = append(s.Offsets, len(s.Next))
	}
	return s
}

// randomWalk returns a sequence of n tokens following the support.
func randomWalk(rng *rand.Rand, s Support, n int) []int {
	seq := []int{rng.IntN(s.Rows())}
	for len(seq) < n {
		row := s.Row(seq[len(seq)-1])
		seq = append(seq, row[rng.IntN(len(row))])
	}
	return seq
}

func randomVector(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * rng.NormFloat64()
	}
	return out
}

// randomizeParams overwrites every parameter with N(0, scale^2) values.
func randomizeParams(t *testing.T, tr *Transformer, rng *rand.Rand, scale float64) {
	t.Helper()
	vals := tr.ParamValues()
	for i := range vals {
		vals[i] = randomVector(rng, len(vals[i]), scale)
	}
	if err := tr.SetParamValues(vals); err != nil {
		t.Fatal(err)
	}
}

// harness runs one TransformerBatch graph: log-probs, taken log-probs and,
// when weights are given, the weighted loss and its gradients.
type harness struct {
	fw          *TransformerBatch
	vm          G.VM
	logp, taken G.Value
	loss        G.Value
	grads       []G.Value
}

func newHarness(t testing.TB, tr *Transformer, b, n int, weights []float64) *harness {
	t.Helper()
	fw, err := tr.Forward(b, n, Fused)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{fw: fw}
	G.Read(fw.LogProbs(), &h.logp)
	G.Read(fw.Taken(), &h.taken)
	if weights != nil {
		w := G.NewVector(tr.Graph(), G.Float64, G.WithShape(b*n), G.WithName("w"),
			G.WithValue(tensor.New(tensor.WithShape(b*n), tensor.WithBacking(weights)))) // (N)
		loss, err := fw.WeightedTakenLogLik(w)
		if err != nil {
			t.Fatal(err)
		}
		G.Read(loss, &h.loss)
		grads, err := G.Grad(loss, tr.Learnables()...)
		if err != nil {
			t.Fatal(err)
		}
		h.grads = make([]G.Value, len(grads))
		for i, g := range grads {
			G.Read(g, &h.grads[i])
		}
	}
	h.vm = G.NewTapeMachine(tr.Graph())
	t.Cleanup(func() { h.vm.Close() })
	return h
}

func (h *harness) run(t testing.TB, tokens [][]int) {
	t.Helper()
	if err := h.fw.Set(tokens); err != nil {
		t.Fatal(err)
	}
	defer h.vm.Reset()
	if err := h.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

// logProbsAt returns the log-probs of the support row of position (b, t).
func (h *harness) logProbsAt(b, t, rowLen int) []float64 {
	_, n, r := h.fw.Shape()
	p := b*n + t
	return h.logp.Data().([]float64)[p*r : p*r+rowLen]
}

func closeTo(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestTransformerConfigValidate(t *testing.T) {
	s := DenseSupport(4)
	ok := DefaultTransformerConfig(s)
	if err := ok.Validate(); err != nil {
		t.Fatalf("default config: got %v, want nil", err)
	}
	tests := []struct {
		name string
		edit func(*TransformerConfig)
		want string
	}{
		{"vocab", func(c *TransformerConfig) { c.Vocab = 0 }, "vocab 0"},
		{"support", func(c *TransformerConfig) { c.Support = DenseSupport(3) }, "support"},
		{"heads", func(c *TransformerConfig) { c.Heads = 0 }, "heads 0"},
		{"dim", func(c *TransformerConfig) { c.Heads = 3 }, "dim 64"},
		{"init", func(c *TransformerConfig) { c.Init = "random" }, `init "random"`},
		{"identity-dim", func(c *TransformerConfig) { c.Init = "identity" }, `init "identity" needs dim = vocab = 4`},
		{"context", func(c *TransformerConfig) { c.Context = 0 }, "context 0"},
		{"positional", func(c *TransformerConfig) { c.Positional = "sine" }, `positional "sine"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "nn: transformer: ") {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	for _, c := range []TransformerConfig{
		{Vocab: 4, Support: s, TransformerArch: TransformerArch{Dim: 64, Heads: 1, Context: 8, Positional: "learned", LayerNorm: true, Init: "table"}},
		{Vocab: 4, Support: s, TransformerArch: TransformerArch{Dim: 4, Heads: 1, Context: 8, Positional: "learned"}},
		{Vocab: 4, Support: s, TransformerArch: TransformerArch{Dim: 3, Heads: 1, Context: 1, Positional: "none", Init: "table"}},
		{Vocab: 4, Support: s, TransformerArch: TransformerArch{Dim: 4, Heads: 2, Context: 8, Positional: "learned", Init: "identity"}},
	} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: got %v, want nil", c, err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	c := ok
	c.Dim, c.Init = 8, "identity"
	if _, err := NewTransformerFromBigram(c, make([]float64, s.NNZ()), rng); err == nil || !strings.Contains(err.Error(), "dim 8") {
		t.Errorf("dim != vocab with init identity: got %v, want an error naming the dim", err)
	}
	for _, tc := range []struct {
		cfg  TransformerConfig
		want string
	}{{ok, "table"}, {TransformerConfig{Vocab: 4, Support: s, TransformerArch: TransformerArch{Dim: 4, Heads: 1, Context: 2, Positional: "none"}}, "identity"}} {
		tr, err := NewTransformerFromBigram(tc.cfg, make([]float64, s.NNZ()), rng)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.Config().Init; got != tc.want {
			t.Errorf("init %q: got resolved init %q, want %q", tc.cfg.Init, got, tc.want)
		}
	}
}

// The autodiff gradient of a weighted sum of taken log-probs matches
// central finite differences for every parameter, W_O away from zero.
func TestTransformerGradientFiniteDifference(t *testing.T) {
	for _, tc := range []struct {
		name  string
		heads int
		pos   string
		init  string
		dim   int
	}{
		{"table-2heads-learned", 2, "learned", "table", 4},
		{"table-1head-none", 1, "none", "table", 3},
		{"identity-2heads-learned", 2, "learned", "identity", 6},
		{"identity-1head-none", 1, "none", "identity", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			v := 6
			s := randomSupport(rng, v)
			cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: tc.dim, Heads: tc.heads, Context: 2, Positional: tc.pos, Init: tc.init}}
			tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
			if err != nil {
				t.Fatal(err)
			}
			randomizeParams(t, tr, rng, 0.7)
			const b, n = 2, 4
			seqs := [][]int{randomWalk(rng, s, n), randomWalk(rng, s, n-1)}
			w := randomVector(rng, b*n, 1)
			for i := range w {
				if !(i%n+1 < len(seqs[i/n])) {
					w[i] = 0
				}
			}
			h := newHarness(t, tr, b, n, w)
			h.checkFiniteDifferences(t, tr, func() { h.run(t, seqs) })
		})
	}
}

// checkFiniteDifferences fills and runs the graph with run, then checks
// that no parameter's autodiff gradient is all zeros and that each equals
// the central finite difference of the loss (relative 1e-6).
func (h *harness) checkFiniteDifferences(t *testing.T, tr *Transformer, run func()) {
	t.Helper()
	run()
	grads := make([][]float64, len(h.grads))
	for i, g := range h.grads {
		grads[i] = slices.Clone(g.Data().([]float64))
	}
	loss := func() float64 {
		run()
		return h.loss.Data().(float64)
	}
	const eps = 1e-5
	for k, node := range tr.Learnables() {
		if maxAbs(grads[k]) == 0 {
			t.Errorf("d loss / d %s: got all zeros, want a gradient", node.Name())
		}
		data := node.Value().Data().([]float64)
		for i := range data {
			x := data[i]
			data[i] = x + eps
			up := loss()
			data[i] = x - eps
			down := loss()
			data[i] = x
			fd := (up - down) / (2 * eps)
			if g := grads[k][i]; math.Abs(g-fd) > 1e-6*(math.Abs(g)+math.Abs(fd))+1e-9 {
				t.Errorf("d loss / d %s[%d]: got autodiff %v, want finite difference %v", node.Name(), i, g, fd)
			}
		}
	}
}

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

// With random parameters and sequences longer than the window, the
// sampler's cached incremental log-probs equal the graph's to 1e-12, for
// both initialisations; the samplers of one snapshot share its tables.
func TestTransformerSamplerMatchesGraph(t *testing.T) {
	for _, tc := range []struct {
		init string
		dim  int
	}{{"table", 8}, {"identity", 10}} {
		t.Run(tc.init, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			v := 10
			s := randomSupport(rng, v)
			cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: tc.dim, Heads: 2, Context: 3, Positional: "learned", Init: tc.init}}
			tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
			if err != nil {
				t.Fatal(err)
			}
			const b, n = 3, 9
			h := newHarness(t, tr, b, n, nil)
			for round := 0; round < 3; round++ {
				randomizeParams(t, tr, rng, 0.8)
				seqs := [][]int{randomWalk(rng, s, n), randomWalk(rng, s, 1+rng.IntN(n)), randomWalk(rng, s, n)}
				h.run(t, seqs)
				sn := tr.Snapshot()
				for i, seq := range seqs {
					smp := sn.Sampler()
					for k, x := range seq {
						sp, err := smp.Push(x)
						if err != nil {
							t.Fatal(err)
						}
						got := h.logProbsAt(i, k, len(sp))
						for j := range sp {
							if !closeTo(sp[j], got[j], 1e-12) {
								t.Fatalf("round %d seq %d pos %d entry %d: got sampler %v, want graph %v", round, i, k, j, sp[j], got[j])
							}
						}
					}
				}
			}
		})
	}
}

// Changing a later token leaves earlier positions unchanged; tokens older
// than the window leave later positions unchanged, while tokens inside it
// matter.
func TestTransformerCausalAndWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	v, ctx := 6, 3
	s := DenseSupport(v)
	cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: v, Heads: 2, Context: ctx, Positional: "learned"}}
	tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
	if err != nil {
		t.Fatal(err)
	}
	randomizeParams(t, tr, rng, 0.8)
	const n, k = 8, 3 // sequences differ at positions <= k (window) or >= k (causal)
	base := make([]int, n)
	for i := range base {
		base[i] = rng.IntN(v)
	}
	later, older := append([]int(nil), base...), append([]int(nil), base...)
	for i := k; i < n; i++ {
		later[i] = (base[i] + 1 + rng.IntN(v-1)) % v
	}
	for i := 0; i <= k; i++ {
		older[i] = (base[i] + 1 + rng.IntN(v-1)) % v
	}
	h := newHarness(t, tr, 3, n, nil)
	h.run(t, [][]int{base, later, older})
	differs := false
	for pos := 0; pos < n; pos++ {
		want := h.logProbsAt(0, pos, v)
		lat, old := h.logProbsAt(1, pos, v), h.logProbsAt(2, pos, v)
		for j := range want {
			if pos < k && !closeTo(lat[j], want[j], 1e-12) {
				t.Errorf("causal: pos %d entry %d after changing tokens >= %d: got %v, want %v", pos, j, k, lat[j], want[j])
			}
			if pos >= k+ctx && !closeTo(old[j], want[j], 1e-12) {
				t.Errorf("window: pos %d entry %d after changing tokens <= %d: got %v, want %v", pos, j, k, old[j], want[j])
			}
			if pos > k && pos < k+ctx && !closeTo(old[j], want[j], 1e-9) {
				differs = true
			}
		}
	}
	if !differs {
		t.Errorf("window: tokens inside the window changed nothing: want attention to matter")
	}
}

// TestSamplerAttention: with W_Q = 0 every score is 0, so each head
// attends uniformly over the prompt and the window; the reported weights
// are 1/(keys) each, prompt first, and sum to 1.
func TestSamplerAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	v := 10
	s := randomSupport(rng, v)
	for _, prompt := range []bool{false, true} {
		cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: v, Heads: 2, Context: 3, Positional: "learned", Prompt: prompt}}
		tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
		if err != nil {
			t.Fatal(err)
		}
		clear(tr.wq.Value().Data().([]float64))
		sp := tr.Sampler()
		if err := sp.ResetAt(0, 1); err != nil {
			t.Fatal(err)
		}
		x := 0
		for n := 1; n <= 6; n++ {
			if _, err := sp.Push(x); err != nil {
				t.Fatal(err)
			}
			keys := min(n, 3)
			if prompt {
				keys++
			}
			a := sp.Attention()
			if len(a) != keys {
				t.Fatalf("prompt %v, push %d: %d weights, want %d", prompt, n, len(a), keys)
			}
			for i, w := range a {
				if math.Abs(w-1/float64(keys)) > 1e-15 {
					t.Errorf("prompt %v, push %d: weight %d is %v, want %v", prompt, n, i, w, 1/float64(keys))
				}
			}
			x = s.Row(x)[0]
		}
	}
}

// TestSamplerWithoutAVX reruns the sampler against the graph on gonum's
// kernels, the path of machines without AVX2 and FMA.
func TestSamplerWithoutAVX(t *testing.T) {
	defer kernels.UseAVX(kernels.UseAVX(false))
	TestTransformerSamplerMatchesGraph(t)
}

// TestSamplerRunsAreRowByRow: the sampler's logits of a row whose next
// tokens are consecutive, one Dots over their block of output embeddings,
// are bit for bit those taken one next token at a time (the rows that are
// not runs), on the task's graph, whose rows are nearly all runs.
func TestSamplerRunsAreRowByRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	g, err := tasks.New(tasks.Config{W: 5, K: 5, L: 3})
	if err != nil {
		t.Fatal(err)
	}
	s := Support{Offsets: g.Offsets, Next: g.Next}
	cfg := TransformerConfig{Vocab: s.Rows(), Support: s, TransformerArch: TransformerArch{Dim: 24, Heads: 2, Context: 4, Positional: "learned", Init: "table"}}
	tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
	if err != nil {
		t.Fatal(err)
	}
	vals := tr.ParamValues() // away from the initialisation's zero unembedding
	for _, v := range vals {
		for i := range v {
			v[i] += 0.3 * rng.NormFloat64()
		}
	}
	if err := tr.SetParamValues(vals); err != nil {
		t.Fatal(err)
	}
	sn := tr.Snapshot()
	runs := 0
	for x, r := range sn.runs {
		if r && len(s.Row(x)) > 1 {
			runs++
		}
	}
	if runs < s.Rows()/2 {
		t.Fatalf("%d of %d rows are runs: the test needs the run path", runs, s.Rows())
	}
	rowByRow := *sn
	rowByRow.runs = make([]bool, len(sn.runs))
	a, b := sn.Sampler(), rowByRow.Sampler()
	for i, x := range randomWalk(rng, s, 200) {
		la, err := a.Push(x)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := b.Push(x)
		if err != nil {
			t.Fatal(err)
		}
		for j := range la {
			if math.Float64bits(la[j]) != math.Float64bits(lb[j]) {
				t.Fatalf("token %d (%d), slot %d: %v by runs, %v row by row", i, x, j, la[j], lb[j])
			}
		}
	}
}
