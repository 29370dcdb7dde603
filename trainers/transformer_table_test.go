package trainers

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// tableFixture is a transformer with random parameters (so the attention's
// correction to the table's logits is not zero) whose table learns by SGD
// at rate 1, a batch of its rollouts with their rows, and random
// advantages.
type tableFixture struct {
	tf       *transformer
	ab       *eval.AgentBatch
	states   []int32
	rowStart []int
	b0, adv  []float64
}

func newTableFixture(t *testing.T, tableTokens int) *tableFixture {
	t.Helper()
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	cfg := Defaults(Reinforce, TransformerModel)
	cfg.Optim = nn.OptimConfig{Name: "sgd", LR: 1}
	opts := TransformerOptions{TransformerArch: nn.TransformerArch{Init: "table", Dim: 8, Heads: 1, Context: 3, Positional: "learned"},
		TableLR: 1, Stride: 4, Windows: 8, EvalRollouts: 2, FinalRollouts: 2, TableTokens: tableTokens}
	tr := newTrainer(t, cfg, opts, g, nil)
	tf := tr.l.(*transformer)
	rng := rand.New(rand.NewPCG(5, 6))
	vals := tf.tr.ParamValues()
	for _, v := range vals {
		for i := range v {
			v[i] += 0.3 * rng.NormFloat64()
		}
	}
	if err := tf.tr.SetParamValues(vals); err != nil {
		t.Fatal(err)
	}
	ab, err := tf.rollouts(context.Background(), 16, 60, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &tableFixture{tf: tf, ab: ab, b0: append([]float64(nil), vals[len(vals)-1]...)}
	f.states, _ = ab.States(g)
	f.rowStart = rowStarts(g, f.tf.t.trained, ab, f.states)
	for range ab.Entries {
		f.adv = append(f.adv, rng.NormFloat64())
	}
	return f
}

// step runs the table pass over every rollout of the batch as one
// minibatch and returns B's change (minus the gradient: SGD at rate 1),
// restoring B.
func (f *tableFixture) step(t *testing.T) []float64 {
	t.Helper()
	rs := make([]int, len(f.ab.Targets))
	for i := range rs {
		rs[i] = i
	}
	in := f.tf.tableTokensOf(f.ab, f.states, rs, 0, 1)
	div := make([]float64, f.ab.Tokens())
	for i := range div {
		div[i] = float64(f.ab.Tokens())
	}
	if err := f.tf.tableStep(f.tf.table, f.ab, f.states, f.rowStart, f.b0, in, f.adv, div); err != nil {
		t.Fatal(err)
	}
	ls := f.tf.tr.Learnables()
	b := ls[len(ls)-1].Value().Data().([]float64)
	out := make([]float64, len(b))
	for i := range b {
		out[i] = b[i] - f.b0[i]
	}
	copy(b, f.b0)
	return out
}

// TestTablePassGradient is a known answer for the table pass: one SGD step
// at rate 1 moves B's entry x -> a by sum over the batch's tokens at x of
// (A_t / n) (1{a = a_t} - pi_t(a)), the policy gradient, where pi_t is the
// transformer's own distribution at token t, computed here by replaying
// each rollout through a fresh sampler (not from the rows the batch
// recorded), and n the batch's tokens.
func TestTablePassGradient(t *testing.T) {
	f := newTableFixture(t, 0)
	g, tf := f.tf.t.g, f.tf
	want := make([]float64, len(f.b0))
	sp := tf.tr.Sampler()
	n := float64(f.ab.Tokens())
	for i, x := range f.ab.Targets {
		if err := sp.ResetAt(0, tf.prompt(x)); err != nil {
			t.Fatal(err)
		}
		s := 0
		for k := f.ab.Starts[i]; k < f.ab.Starts[i+1]; k++ {
			logp, err := sp.Push(s)
			if err != nil {
				t.Fatal(err)
			}
			if tf.t.trained[s] {
				lo := g.Offsets[s]
				for j, lp := range logp {
					d := -math.Exp(lp)
					if lo+j == int(f.ab.Entries[k]) {
						d++
					}
					want[lo+j] += f.adv[k] / n * d
				}
			}
			s = g.Next[f.ab.Entries[k]]
		}
	}
	got := f.step(t)
	moved := 0
	for e := range want {
		if math.Abs(got[e]-want[e]) > 1e-12 {
			t.Errorf("B[%d] moved %v, want %v", e, got[e], want[e])
		}
		if want[e] != 0 {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no entry of B moves: the test checks nothing")
	}
}

// TestTableTokensUnbiased: the table pass on a random subset of a
// minibatch's tokens (the -table-tokens budget), weighted by the inverse
// sampling rate, gives on average the full step: the mean of 400
// subsampled steps (each step's seed draws its own subset) is within 4
// standard errors of the full step.
func TestTableTokensUnbiased(t *testing.T) {
	full := newTableFixture(t, 0).step(t)
	f := newTableFixture(t, 0)
	f.tf.opts.TableTokens = f.ab.Tokens() / 6
	checkUnbiased(t, full, 400, func(d int) []float64 {
		f.tf.t.done = d
		return f.step(t)
	})
}
