package trainers

import (
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestAttentionByDistance is a known answer: with W_Q = 0 every score is 0,
// so a query at position q spreads its attention evenly over the q+1
// tokens it sees and the prompt, 1/(q+2) each; at a full window (the last
// row, Context 4) over 4 tokens and the prompt, 1/5 each. The summary's
// shares follow from the rows. Position 0 (s0 -> f, a fixed row) has
// no positions.
func TestAttentionByDistance(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	opts := DefaultTransformerOptions(PPO)
	opts.Prompt, opts.Context = true, 4
	tr := newTrainer(t, ppoConfig(), opts, g, nil)
	l := tr.l.(*transformer)
	vals := l.tr.ParamValues()
	for i, p := range l.tr.Learnables() {
		if p.Name() == "WQ" {
			clear(vals[i])
		}
	}
	if err := l.tr.SetParamValues(vals); err != nil {
		t.Fatal(err)
	}
	st, err := tr.Attention(30, 7)
	if err != nil {
		t.Fatal(err)
	}
	off, prompt, n := 0.0, 0.0, 0
	for q, row := range st.ByDistance {
		if (st.Counts[q] == 0) != (q == 0) { // position 0 is s0 -> f, whose row is fixed
			t.Fatalf("row %d: %d positions", q, st.Counts[q])
		}
		if q == 0 {
			continue
		}
		want := 1 / float64(q+2)
		for d, w := range row {
			if math.Abs(w-want) > 1e-12 {
				t.Errorf("position %d, distance %d: got %v, want %v", q, d, w, want)
			}
		}
		if p := st.PromptByPosition[q]; math.Abs(p-want) > 1e-12 {
			t.Errorf("position %d, prompt: got %v, want %v", q, p, want)
		}
		off += float64(st.Counts[q]) * (1 - want)
		prompt += float64(st.Counts[q]) * want
		n += st.Counts[q]
	}
	if n != st.Positions || math.Abs(st.OffCurrent-off/float64(n)) > 1e-12 || math.Abs(st.OnPrompt-prompt/float64(n)) > 1e-12 {
		t.Errorf("got %d positions, off current %v, on prompt %v; want %d, %v, %v", st.Positions, st.OffCurrent, st.OnPrompt, n, off/float64(n), prompt/float64(n))
	}
}
