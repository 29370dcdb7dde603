package trainers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestTransformerInitExact: a transformer built by the trainer starts at
// the bigram it is given, token for token: on random walks of the graph
// (every prefix up to 40 tokens, beyond the context window) the sampler's
// row at each state equals the bigram's log-probabilities to 1e-9. From
// the pretrained world model and from an SFT-trained bigram (30 exact SFT
// steps, whose rows are far from uniform); at widths 16 and 64 (Init
// "table") and the vocabulary (Init "identity"); with and without the
// prompt and layer norm.
func TestTransformerInitExact(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	sft := Defaults(SFT, BigramModel)
	sft.Steps, sft.Until = 30, 0
	tr, _ := run(t, sft, g, nil, nil)
	trained := modelOf(tr).Logits()
	moved := 0.0
	for _, z := range trained {
		moved = math.Max(moved, math.Abs(z))
	}
	if moved < 0.1 {
		t.Fatalf("SFT moved no logit by 0.1 (largest %v): not a trained bigram", moved)
	}
	for _, start := range []struct {
		name   string
		logits []float64
	}{{"pretrained", nil}, {"sft", trained}} {
		bg, err := graphBigram(g, start.logits, trainedRows(g, false))
		if err != nil {
			t.Fatal(err)
		}
		want := bg.Probs()
		for _, width := range []struct {
			init string
			dim  int
		}{{"table", 16}, {"table", 64}, {"identity", 0}} {
			for _, prompt := range []bool{false, true} {
				for _, ln := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s-%d/prompt=%v/ln=%v", start.name, width.init, width.dim, prompt, ln)
					t.Run(name, func(t *testing.T) {
						opts := DefaultTransformerOptions(PPO)
						opts.Init, opts.Dim, opts.Prompt, opts.LayerNorm = width.init, width.dim, prompt, ln
						l := newTrainer(t, ppoConfig(), opts, g, start.logits).l.(*transformer)
						smp := l.tr.Snapshot().Sampler()
						rng := rand.New(rand.NewPCG(5, 6))
						checked := 0
						for walk := range 20 {
							target := 1 + walk%g.W()
							if err := smp.ResetAt(0, l.prompt(target)); err != nil {
								t.Fatal(err)
							}
							s := 0 // s0 -> f
							for step := 0; step < 40; step++ {
								logp, err := smp.Push(s)
								if err != nil {
									t.Fatal(err)
								}
								lo, hi := g.Offsets[s], g.Offsets[s+1]
								if len(logp) != hi-lo {
									t.Fatalf("walk %d step %d state %d: row of %d, want %d", walk, step, s, len(logp), hi-lo)
								}
								for e := lo; e < hi; e++ {
									if d := math.Abs(logp[e-lo] - math.Log(want[e])); d > 1e-9 {
										t.Fatalf("walk %d step %d state %d entry %d: log-prob %v, bigram's %v (off by %.2g)", walk, step, s, e-lo, logp[e-lo], math.Log(want[e]), d)
									}
									checked++
								}
								s = g.Next[lo+rng.IntN(hi-lo)]
							}
						}
						if checked < 20*40 {
							t.Fatalf("checked %d entries", checked)
						}
					})
				}
			}
		}
	}
}
