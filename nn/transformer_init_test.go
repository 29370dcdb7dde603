package nn

import (
	"fmt"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bigramRow returns the bigram's log-softmax over the support row of x.
func bigramRow(s Support, logits []float64, x int) []float64 {
	row := slices.Clone(logits[s.Offsets[x]:s.Offsets[x+1]])
	kernels.LogSoftmaxRows(row, nil, row, []int{0, len(row)}, nil)
	return row
}

// At initialisation the transformer is the bigram: on random windows
// (random starts and prompts), graph and sampler give the bigram's row
// log-softmax to 1e-9, masked slots have probability exactly 0 and entry
// -1, and Taken is the taken token's slot. Both initialisations, the table
// one at widths 16 and 64, the identity one at width V; with and without
// prompt and layer norm; from the uniform bigram (all logits 0) and from
// random, trained-like logits.
func TestTransformerInitEqualsBigram(t *testing.T) {
	const v = 12
	for _, init := range []struct {
		name  string
		init  string
		dim   int
		heads int
	}{{"table-D16", "table", 16, 2}, {"table-D64", "table", 64, 1}, {"identity-DV", "identity", v, 2}} {
		for _, prompt := range []bool{false, true} {
			for _, ln := range []bool{false, true} {
				for _, uniform := range []bool{true, false} {
					name := fmt.Sprintf("%s/prompt=%v/ln=%v/uniform=%v", init.name, prompt, ln, uniform)
					t.Run(name, func(t *testing.T) {
						rng := rand.New(rand.NewPCG(3, 4))
						s := randomSupport(rng, v)
						logits := make([]float64, s.NNZ())
						if !uniform {
							logits = randomVector(rng, s.NNZ(), 3)
						}
						cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: init.dim, Heads: init.heads, Context: 3, Positional: "learned", Prompt: prompt, LayerNorm: ln, Init: init.init}}
						tr, err := NewTransformerFromBigram(cfg, logits, rng)
						if err != nil {
							t.Fatal(err)
						}
						checkInitEqualsBigram(t, tr, logits, rng)
					})
				}
			}
		}
	}
}

func checkInitEqualsBigram(t *testing.T, tr *Transformer, logits []float64, rng *rand.Rand) {
	t.Helper()
	cfg := tr.Config()
	s := cfg.Support
	const b, n = 4, 7
	h := newHarness(t, tr, b, n, nil)
	_, _, r := h.fw.Shape()
	sn := tr.Snapshot()
	for round := 0; round < 4; round++ {
		rows := randomWindows(rng, s, b, n, cfg.Prompt)
		h.runWindows(t, rows)
		entries := h.fw.SlotEntries()
		logp, taken := h.logp.Data().([]float64), h.taken.Data().([]float64)
		for i, w := range rows {
			smp := sn.Sampler()
			if err := smp.ResetAt(w.Start, w.Prompt); err != nil {
				t.Fatal(err)
			}
			for k, x := range w.Tokens {
				want := bigramRow(s, logits, x)
				got := h.logProbsAt(i, k, len(want))
				sp, err := smp.Push(x)
				if err != nil {
					t.Fatal(err)
				}
				for j := range want {
					if !closeTo(got[j], want[j], 1e-9) || !closeTo(sp[j], want[j], 1e-9) {
						t.Fatalf("round %d row %d pos %d entry %d: got graph %v, sampler %v, want %v", round, i, k, j, got[j], sp[j], want[j])
					}
				}
				p := i*n + k
				for j := len(want); j < r; j++ {
					if lp := logp[p*r+j]; math.Exp(lp) != 0 || entries[p*r+j] != -1 {
						t.Fatalf("masked slot %d of row %d pos %d: got prob %v entry %d, want 0 and -1", j, i, k, math.Exp(lp), entries[p*r+j])
					}
				}
				if k+1 < len(w.Tokens) {
					e := s.Entry(x, w.Tokens[k+1]) - s.Offsets[x]
					if taken[p] != logp[p*r+e] || entries[p*r+e] != s.Offsets[x]+e {
						t.Fatalf("taken at row %d pos %d: got %v, want slot %d = %v", i, k, taken[p], e, logp[p*r+e])
					}
				}
			}
		}
	}
}

// The table initialisation's gradient flow: at step 0 (U = 0) only U and B
// get a gradient (h reaches the logits through U only), both non-zero;
// after one update every parameter gets a non-zero gradient, attention's
// included.
func TestTransformerTableInitGradientFlow(t *testing.T) {
	for _, tc := range []struct {
		name         string
		prompt, ln   bool
		positional   string
		heads, width int
	}{{"plain", false, false, "learned", 1, 8}, {"prompt-ln-2heads", true, true, "learned", 2, 8}, {"no-positions", false, false, "none", 1, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(13, 14))
			v := 8
			s := randomSupport(rng, v)
			cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: tc.width, Heads: tc.heads, Context: 3, Positional: tc.positional, Prompt: tc.prompt, LayerNorm: tc.ln, Init: "table"}}
			tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
			if err != nil {
				t.Fatal(err)
			}
			const b, n = 2, 5
			w := randomVector(rng, b*n, 1)
			for i := range w {
				if i%n+1 >= n {
					w[i] = 0
				}
			}
			h := newHarness(t, tr, b, n, w)
			rows := randomWindows(rng, s, b, n, tc.prompt)
			for i := range rows {
				rows[i].Tokens = randomWalk(rng, s, n)
			}
			h.runWindows(t, rows)
			for k, node := range tr.Learnables() {
				g := maxAbs(h.grads[k].Data().([]float64))
				switch node.Name() {
				case "U", "B":
					if g == 0 {
						t.Errorf("step 0: max |d loss / d %s|: got 0, want > 0", node.Name())
					}
				default:
					if g != 0 {
						t.Errorf("step 0: max |d loss / d %s|: got %v, want 0 while U = 0", node.Name(), g)
					}
				}
			}
			// One SGD step on this gradient, then every parameter learns.
			vals := tr.ParamValues()
			for k := range vals {
				for i, g := range h.grads[k].Data().([]float64) {
					vals[k][i] -= 0.1 * g
				}
			}
			if err := tr.SetParamValues(vals); err != nil {
				t.Fatal(err)
			}
			h.runWindows(t, rows)
			for k, node := range tr.Learnables() {
				if g := maxAbs(h.grads[k].Data().([]float64)); g == 0 {
					t.Errorf("step 1: max |d loss / d %s|: got 0, want > 0", node.Name())
				}
			}
		})
	}
}

// With the identity initialisation W_O = 0 cuts attention off, so W_Q, W_K
// and W_V get no gradient, but W_O does: attention can start to learn.
func TestTransformerIdentityInitGradientReachesWO(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	v := 8
	s := randomSupport(rng, v)
	cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: v, Heads: 2, Context: 3, Positional: "learned", Init: "identity"}}
	tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
	if err != nil {
		t.Fatal(err)
	}
	const b, n = 2, 5
	w := make([]float64, b*n)
	for i := range w {
		if i%n+1 < n {
			w[i] = 1
		}
	}
	h := newHarness(t, tr, b, n, w)
	h.run(t, [][]int{randomWalk(rng, s, n), randomWalk(rng, s, n)})
	for k, node := range tr.Learnables() {
		g := maxAbs(h.grads[k].Data().([]float64))
		switch node.Name() {
		case "WQ", "WK", "WV":
			if g != 0 {
				t.Errorf("max |d loss / d %s|: got %v, want 0 while W_O = 0", node.Name(), g)
			}
		case "WO":
			if g == 0 {
				t.Errorf("max |d loss / d WO|: got 0, want > 0")
			}
		}
	}
}
