package trainers

import (
	"context"
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestEntropyOfTheUniformPolicy: the pretrained policy is uniform over
// each state's valid next states, so the entropy at a token is log of its
// row's width, and the batch's entropy the mean of that over the tokens in
// trained rows. Checked for the bigram (its table's rows), the transformer
// with the table initialisation (the rows its agents report) and with the
// identity one (-log pi of the tokens drawn, exact here as every choice of
// a uniform row has the same log-probability). The batch, 400 rollouts of
// up to 200 transitions, spans several of the blocks the transformer's
// entropy is summed in.
func TestEntropyOfTheUniformPolicy(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	for _, tc := range []struct {
		name string
		s    Setup
	}{
		{"bigram", Setup{}},
		{"transformer table", Setup{Model: TransformerModel, Transformer: DefaultTransformerOptions(PPO)}},
		{"transformer identity", Setup{Model: TransformerModel, Transformer: func() TransformerOptions {
			o := DefaultTransformerOptions(PPO)
			o.Init, o.Dim = "identity", 0
			return o
		}()}},
	} {
		m := tc.s.Model
		if m == "" {
			m = BigramModel
		}
		tr, err := New(Defaults(PPO, m), g, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tr.sampled().rollouts(context.Background(), 400, 200, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		states, _ := b.States(g)
		want, n := 0.0, 0
		for _, s := range states {
			if tr.trained[s] {
				want += math.Log(float64(g.Offsets[s+1] - g.Offsets[s]))
				n++
			}
		}
		want /= float64(n)
		if got := tr.sampled().entropy(b, states)(); math.Abs(got-want) > 1e-12 || n <= 2*entropyBlock {
			t.Errorf("%s: entropy %v, want %v over %d tokens", tc.name, got, want, n)
		}
		tr.Close()
	}
}

// TestRecordBatchStats: a hit in 2 transitions and a miss cut at 4, beta
// 0.1: rewards 0.8 and -0.4 (mean 0.2, std 0.6), lengths 2..4, half
// truncated.
func TestRecordBatchStats(t *testing.T) {
	var s sampled
	s.record(&eval.Batch{Targets: []int{1, 2}, Starts: []int{0, 2, 6}, Entries: make([]int32, 6), Hit: []bool{true, false}}, 4, 0.1)
	b := s.batch
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"reward_mean", b.RewardMean, 0.2}, {"reward_std", b.RewardStd, 0.6}, {"reward_min", b.RewardMin, -0.4}, {"reward_max", b.RewardMax, 0.8},
		{"length_min", float64(b.LengthMin), 2}, {"length_max", float64(b.LengthMax), 4}, {"truncated", b.Truncated, 0.5}, {"sampled", float64(b.Sampled), 6},
	} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}
