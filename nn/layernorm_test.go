package nn

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// layerNormCases are the transformer variants the layer-norm tests run on.
var layerNormCases = []struct {
	name   string
	heads  int
	pos    string
	prompt bool
	init   string
}{
	{"2heads-learned", 2, "learned", false, "table"},
	{"2heads-learned-prompt", 2, "learned", true, "table"},
	{"1head-none", 1, "none", false, "table"},
	{"1head-none-prompt", 1, "none", true, "table"},
	{"identity-2heads-learned-prompt", 2, "learned", true, "identity"},
	{"identity-1head-none", 1, "none", false, "identity"},
}

// The parameters are E, [P,] WQ, WK, WV, WO, [LN_gain, LN_bias,] U and,
// with Init "table", B, with gain 1 and bias 0 at the exact
// initialisation, U (V, D) and 0 and B the bigram logits with Init
// "table", U (D, V) with Init "identity".
func TestTransformerLayerNormLearnables(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	v := 6
	s := randomSupport(rng, v)
	logits := randomVector(rng, s.NNZ(), 1)
	for _, tc := range []struct {
		pos, init string
		ln        bool
		dim       int
		want      []string
	}{
		{"learned", "identity", true, v, []string{"E", "P", "WQ", "WK", "WV", "WO", "LN_gain", "LN_bias", "U"}},
		{"none", "identity", true, v, []string{"E", "WQ", "WK", "WV", "WO", "LN_gain", "LN_bias", "U"}},
		{"learned", "identity", false, v, []string{"E", "P", "WQ", "WK", "WV", "WO", "U"}},
		{"learned", "table", true, 4, []string{"E", "P", "WQ", "WK", "WV", "WO", "LN_gain", "LN_bias", "U", "B"}},
		{"none", "table", false, 4, []string{"E", "WQ", "WK", "WV", "WO", "U", "B"}},
	} {
		cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: tc.dim, Heads: 1, Context: 2, Positional: tc.pos, LayerNorm: tc.ln, Init: tc.init}}
		tr, err := NewTransformerFromBigram(cfg, logits, rng)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range tr.Learnables() {
			names = append(names, n.Name())
			data := n.Value().Data().([]float64)
			switch n.Name() {
			case "LN_gain", "LN_bias":
				want := 1.0
				if n.Name() == "LN_bias" {
					want = 0
				}
				if len(data) != tc.dim || slices.ContainsFunc(data, func(x float64) bool { return x != want }) {
					t.Errorf("%s %s %s: got %v, want %d values %v", tc.init, tc.pos, n.Name(), data, tc.dim, want)
				}
			case "U":
				if tc.init == "table" && (!slices.Equal(n.Shape(), []int{v, tc.dim}) || maxAbs(data) != 0) {
					t.Errorf("table U: got shape %v, max |U| %v, want (%d, %d) zeros", n.Shape(), maxAbs(data), v, tc.dim)
				}
				if tc.init == "identity" && !slices.Equal(n.Shape(), []int{tc.dim, v}) {
					t.Errorf("identity U: got shape %v, want (%d, %d)", n.Shape(), tc.dim, v)
				}
			case "B":
				if !slices.Equal(data, logits) {
					t.Errorf("B: got %v, want the bigram logits %v", data, logits)
				}
			}
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%s %s ln=%v: got learnables %v, want %v", tc.init, tc.pos, tc.ln, names, tc.want)
		}
	}
}

// With LayerNorm, random parameters (gain and bias away from 1 and 0, W_O
// away from 0), a prompt or not and Start offsets, the autodiff gradient
// matches central finite differences for every parameter.
func TestTransformerLayerNormGradientFiniteDifference(t *testing.T) {
	for _, tc := range layerNormCases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(45, 46))
			v := 4
			s := randomSupport(rng, v)
			cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: v, Heads: tc.heads, Context: 2, Positional: tc.pos, LayerNorm: true, Prompt: tc.prompt, Init: tc.init}}
			tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
			if err != nil {
				t.Fatal(err)
			}
			randomizeParams(t, tr, rng, 0.7)
			const b, n = 2, 4
			rows := []Window{{Prompt: -1, Start: 5, Tokens: randomWalk(rng, s, n)}, {Prompt: -1, Start: 2, Tokens: randomWalk(rng, s, n-1)}}
			if tc.prompt {
				rows[0].Prompt, rows[1].Prompt = 3, 0
			}
			w := randomVector(rng, b*n, 1)
			for i := range w {
				if !(i%n+1 < len(rows[i/n].Tokens)) {
					w[i] = 0
				}
			}
			h := newHarness(t, tr, b, n, w)
			h.checkFiniteDifferences(t, tr, func() { h.runWindows(t, rows) })
		})
	}
}

// With LayerNorm and random parameters, a sampler started at each window's
// Start (and prompt) gives the graph's log-probs to 1e-12.
func TestTransformerLayerNormSamplerMatchesGraph(t *testing.T) {
	for _, tc := range layerNormCases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(47, 48))
			v := 10
			s := randomSupport(rng, v)
			cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: v, Heads: tc.heads, Context: 3, Positional: tc.pos, LayerNorm: true, Prompt: tc.prompt, Init: tc.init}}
			tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
			if err != nil {
				t.Fatal(err)
			}
			const b, n = 3, 9
			h := newHarness(t, tr, b, n, nil)
			for round := 0; round < 3; round++ {
				randomizeParams(t, tr, rng, 0.8)
				rows := randomWindows(rng, s, b, n, tc.prompt)
				h.runWindows(t, rows)
				for i, w := range rows {
					smp := tr.Sampler()
					if err := smp.ResetAt(w.Start, w.Prompt); err != nil {
						t.Fatal(err)
					}
					for k, x := range w.Tokens {
						sp, err := smp.Push(x)
						if err != nil {
							t.Fatal(err)
						}
						got := h.logProbsAt(i, k, len(sp))
						for j := range sp {
							if !closeTo(sp[j], got[j], 1e-12) {
								t.Fatalf("round %d row %d (start %d) pos %d entry %d: got sampler %v, want graph %v", round, i, w.Start, k, j, sp[j], got[j])
							}
						}
					}
				}
			}
		})
	}
}

// The identity initialisation with LayerNorm needs a masked transition
// into every token, and corrections far from the mask's scale; the table
// initialisation needs neither.
func TestTransformerLayerNormInitErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	// Token 2 follows every token; the other columns have masked rows.
	full := Support{Offsets: []int{0, 2, 4, 5, 7}, Next: []int{0, 2, 2, 3, 2, 1, 2}}
	big := Support{Offsets: []int{0, 1, 2, 3}, Next: []int{1, 1, 0}}
	tests := []struct {
		name   string
		s      Support
		logits []float64
		want   string
	}{
		{"dense", DenseSupport(4), make([]float64, 16), "token 0 follows every token"},
		{"one-full-column", full, make([]float64, full.NNZ()), "token 2 follows every token"},
		{"large-correction", big, []float64{6e6, 6e6, 0}, "token 1: the logits into it sum to 1.2e+07"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.s.Rows()
			cfg := TransformerConfig{Vocab: v, Support: tc.s, TransformerArch: TransformerArch{Dim: v, Heads: 1, Context: 2, Positional: "learned", LayerNorm: true, Init: "identity"}}
			_, err := NewTransformerFromBigram(cfg, tc.logits, rng)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "nn: transformer: layer_norm: ") {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
			cfg.LayerNorm = false
			if _, err := NewTransformerFromBigram(cfg, tc.logits, rng); err != nil {
				t.Errorf("without layer norm: got %v, want nil", err)
			}
			cfg.LayerNorm, cfg.Init = true, "table"
			if _, err := NewTransformerFromBigram(cfg, tc.logits, rng); err != nil {
				t.Errorf("table init with layer norm: got %v, want nil", err)
			}
		})
	}
}
