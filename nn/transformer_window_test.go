package nn

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func (h *harness) runWindows(t testing.TB, rows []Window) {
	t.Helper()
	if err := h.fw.SetWindows(rows); err != nil {
		t.Fatal(err)
	}
	defer h.vm.Reset()
	if err := h.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

// twinTransformers returns two transformers of cfg with the same random
// parameters (scale 0.8), one graph each.
func twinTransformers(t *testing.T, cfg TransformerConfig, rng *rand.Rand) (*Transformer, *Transformer) {
	t.Helper()
	a, err := NewTransformerFromBigram(cfg, randomVector(rng, cfg.Support.NNZ(), 1), rng)
	if err != nil {
		t.Fatal(err)
	}
	randomizeParams(t, a, rng, 0.8)
	b, err := NewTransformerFromBigram(cfg, make([]float64, cfg.Support.NNZ()), rng)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetParamValues(a.ParamValues()); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// chunk is a window of a longer sequence that owns the positions
// [own, own+n) of it; the tokens before own are left context.
type chunk struct {
	seq    int
	w      Window
	own, n int
}

// cut cuts seq into windows of at most t tokens, each owning t-(ctx-1)
// positions and holding the ctx-1 tokens before them.
func cut(seqIdx int, seq []int, prompt, t, ctx int) []chunk {
	var out []chunk
	step := t - (ctx - 1)
	for own := 0; own < len(seq); own += step {
		start := max(0, own-(ctx-1))
		end := min(len(seq), own+step)
		out = append(out, chunk{seq: seqIdx, w: Window{Prompt: prompt, Start: start, Tokens: seq[start:end]}, own: own, n: end - own})
	}
	return out
}

// Windows of long sequences with Context-1 tokens of left context give the
// same log-probs and taken log-probs as the whole sequences (one long
// graph row and the sampler), with and without a prompt; a sampler started
// at a window's Start gives the window's log-probs at every position.
func TestTransformerWindowsMatchFullSequence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		heads  int
		pos    string
		prompt bool
		init   string
		dim    int
	}{
		{"2heads-learned", 2, "learned", false, "table", 8},
		{"2heads-learned-prompt", 2, "learned", true, "table", 6},
		{"1head-none-prompt", 1, "none", true, "table", 5},
		{"identity-2heads-learned-prompt", 2, "learned", true, "identity", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			v, ctx := 10, 3
			s := randomSupport(rng, v)
			cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: tc.dim, Heads: tc.heads, Context: ctx, Positional: tc.pos, Prompt: tc.prompt, Init: tc.init}}
			trChunk, trFull := twinTransformers(t, cfg, rng)
			const b, n, long, nseq = 4, 8, 23, 3
			hc := newHarness(t, trChunk, b, n, nil)
			hf := newHarness(t, trFull, nseq, long, nil)
			seqs, prompts := make([][]int, nseq), make([]int, nseq)
			full := make([]Window, nseq)
			var chunks []chunk
			for i := range seqs {
				seqs[i] = randomWalk(rng, s, long-rng.IntN(4))
				prompts[i] = -1
				if tc.prompt {
					prompts[i] = rng.IntN(v)
				}
				full[i] = Window{Prompt: prompts[i], Tokens: seqs[i]}
				chunks = append(chunks, cut(i, seqs[i], prompts[i], n, ctx)...)
			}
			hf.runWindows(t, full)
			fullLogp := append([]float64(nil), hf.logp.Data().([]float64)...)
			fullTaken := append([]float64(nil), hf.taken.Data().([]float64)...)
			_, _, r := hc.fw.Shape()
			for lo := 0; lo < len(chunks); lo += b {
				batch := chunks[lo:min(len(chunks), lo+b)]
				rows := make([]Window, len(batch))
				for i, c := range batch {
					rows[i] = c.w
				}
				hc.runWindows(t, rows)
				for i, c := range batch {
					smp := trChunk.Sampler()
					if err := smp.ResetAt(c.w.Start, c.w.Prompt); err != nil {
						t.Fatal(err)
					}
					for k, x := range c.w.Tokens {
						sp, err := smp.Push(x)
						if err != nil {
							t.Fatal(err)
						}
						got := hc.logProbsAt(i, k, len(sp))
						abs := c.w.Start + k
						for j := range sp {
							if !closeTo(sp[j], got[j], 1e-12) {
								t.Fatalf("seq %d window at %d pos %d entry %d: got sampler from start %v, want window graph %v", c.seq, c.w.Start, abs, j, sp[j], got[j])
							}
							if abs >= c.own && !closeTo(got[j], fullLogp[(c.seq*long+abs)*r+j], 1e-12) {
								t.Fatalf("seq %d window at %d pos %d entry %d: got window %v, want full sequence %v", c.seq, c.w.Start, abs, j, got[j], fullLogp[(c.seq*long+abs)*r+j])
							}
						}
						if abs >= c.own && hc.fw.HasTaken(i, k) {
							got, want := hc.taken.Data().([]float64)[i*n+k], fullTaken[c.seq*long+abs]
							if !closeTo(got, want, 1e-12) || !hf.fw.HasTaken(c.seq, abs) {
								t.Fatalf("seq %d pos %d: got window taken %v, want full %v", c.seq, abs, got, want)
							}
						}
					}
				}
			}
			for i, seq := range seqs {
				smp := trChunk.Sampler()
				if err := smp.ResetAt(0, prompts[i]); err != nil {
					t.Fatal(err)
				}
				for k, x := range seq {
					sp, err := smp.Push(x)
					if err != nil {
						t.Fatal(err)
					}
					for j := range sp {
						if want := fullLogp[(i*long+k)*r+j]; !closeTo(sp[j], want, 1e-12) {
							t.Fatalf("seq %d pos %d entry %d: got sampler %v, want full graph %v", i, k, j, sp[j], want)
						}
					}
				}
			}
		})
	}
}

// Every position sees the prompt, however far past the window; the window
// still counts only real tokens: the first token stops mattering Context
// positions later.
func TestTransformerPromptSeenEverywhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	v, ctx := 6, 3
	s := DenseSupport(v)
	cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: v, Heads: 2, Context: ctx, Positional: "learned", Prompt: true}}
	tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
	if err != nil {
		t.Fatal(err)
	}
	randomizeParams(t, tr, rng, 0.8)
	const n = 9
	seq := randomWalk(rng, s, n)
	first := append([]int{(seq[0] + 1) % v}, seq[1:]...)
	h := newHarness(t, tr, 3, n, nil)
	h.runWindows(t, []Window{{Prompt: 1, Tokens: seq}, {Prompt: 4, Tokens: seq}, {Prompt: 1, Tokens: first}})
	for pos := 0; pos < n; pos++ {
		base, other, changed := h.logProbsAt(0, pos, v), h.logProbsAt(1, pos, v), h.logProbsAt(2, pos, v)
		if closeTo(base[0], other[0], 1e-9) {
			t.Errorf("pos %d: got the same log-prob %v under prompts 1 and 4, want the prompt to matter", pos, base[0])
		}
		if pos >= ctx && !closeTo(base[0], changed[0], 1e-12) {
			t.Errorf("pos %d: got %v after changing token 0, want %v (outside the window)", pos, changed[0], base[0])
		}
	}
}

// With a prompt, Start offsets and W_O away from zero, the autodiff
// gradient matches central finite differences for every parameter; W_Q
// and W_K get a gradient through the prompt's attention weight.
func TestTransformerPromptGradientFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	v := 5
	s := randomSupport(rng, v)
	cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: v, Heads: 1, Context: 2, Positional: "learned", Prompt: true}}
	tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
	if err != nil {
		t.Fatal(err)
	}
	randomizeParams(t, tr, rng, 0.7)
	const b, n = 2, 4
	rows := []Window{{Prompt: 3, Start: 5, Tokens: randomWalk(rng, s, n)}, {Prompt: 0, Start: 2, Tokens: randomWalk(rng, s, n-1)}}
	w := randomVector(rng, b*n, 1)
	for i := range w {
		if !(i%n+1 < len(rows[i/n].Tokens)) {
			w[i] = 0
		}
	}
	h := newHarness(t, tr, b, n, w)
	h.checkFiniteDifferences(t, tr, func() { h.runWindows(t, rows) })
}

func TestTransformerWindowErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	v := 6
	s := randomSupport(rng, v)
	cfg := TransformerConfig{Vocab: v, Support: s, TransformerArch: TransformerArch{Dim: v, Heads: 1, Context: 2, Positional: "learned", Prompt: true}}
	tr, err := NewTransformerFromBigram(cfg, randomVector(rng, s.NNZ(), 1), rng)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := tr.Forward(2, 3, Fused)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0 // a token with a missing transition from token 0
	for s.Entry(0, bad) >= 0 {
		bad++
	}
	tests := []struct {
		name string
		rows []Window
		want string
	}{
		{"rows", make([]Window, 3), "3 rows"},
		{"start", []Window{{Start: -1}}, "start -1"},
		{"prompt", []Window{{Prompt: v}}, "prompt 6"},
		{"length", []Window{{Tokens: []int{0, 0, 0, 0}}}, "4 tokens"},
		{"token", []Window{{Tokens: []int{v}}}, "token 0 is 6"},
		{"transition", []Window{{Tokens: []int{0, bad}}}, "not in the support"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := fw.SetWindows(tc.rows)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "nn: transformer batch: ") {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	if err := fw.Set([][]int{{0}}); err == nil || !strings.Contains(err.Error(), "prompt") {
		t.Errorf("Set with a prompt config: got %v, want an error naming the prompt", err)
	}
	smp := tr.Sampler()
	if _, err := smp.Push(0); err == nil || !strings.Contains(err.Error(), "no prompt") {
		t.Errorf("push without a prompt: got %v, want an error naming the prompt", err)
	}
	if err := smp.ResetAt(-1, 0); err == nil || !strings.Contains(err.Error(), "start -1") {
		t.Errorf("negative start: got %v, want an error naming the start", err)
	}
	if err := smp.ResetPrompt(v); err == nil || !strings.Contains(err.Error(), "prompt 6") {
		t.Errorf("prompt out of range: got %v, want an error naming the prompt", err)
	}
}
