package trainers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// opsTwins returns a trainer of the transformer with fused ops and one with
// stock ops, both at the same random parameters (scale 0.3 about the
// exact initialisation, so that the attention shapes the logits), on
// small windows.
func opsTwins(t *testing.T, g *tasks.Graph, cfg Config, teacher []float64) (fused, stock *Trainer) {
	t.Helper()
	cfg.Hindsight = false // a prompted transformer sees its target
	return opsTwinsOf(t, g, cfg, teacher, true)
}

// opsTwinsOf is opsTwins with or without the prompt (without it, cfg's
// Hindsight is used as it is).
func opsTwinsOf(t *testing.T, g *tasks.Graph, cfg Config, teacher []float64, prompt bool) (fused, stock *Trainer) {
	t.Helper()
	opts := DefaultTransformerOptions(cfg.Trainer)
	opts.Dim, opts.Heads, opts.Context, opts.Stride, opts.Windows, opts.EvalRollouts = 8, 2, 4, 16, 128, 50
	opts.LayerNorm, opts.Prompt = true, prompt
	build := func(o nn.Ops) *Trainer {
		opts.Ops = o
		tr, err := New(cfg, g, Setup{Model: TransformerModel, Transformer: opts, Teacher: teacher})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	fused, stock = build(nn.Fused), build(nn.Stock)
	rng := rand.New(rand.NewPCG(cfg.Seed, 77))
	vals := fused.l.(*transformer).tr.ParamValues()
	for _, v := range vals {
		for i := range v {
			v[i] += 0.3 * rng.NormFloat64()
		}
	}
	for _, tr := range []*Trainer{fused, stock} {
		if err := tr.l.(*transformer).tr.SetParamValues(vals); err != nil {
			t.Fatal(err)
		}
	}
	return fused, stock
}

// checkPass compares a pass's last update on the stock trainer (want) with
// the fused one's (got): the summed loss to 1e-9 of scale (the sum of the
// absolute values of its terms, or 0 for the loss's own), and the gradient
// of every parameter to 1e-9 of its largest entry.
func checkPass(t *testing.T, what string, got, want *pass, names []string, scale float64) {
	t.Helper()
	scale = math.Max(scale, math.Abs(want.loss))
	if math.Abs(got.loss-want.loss) > 1e-9*scale || scale == 0 {
		t.Errorf("%s: loss %.17g, stock's %.17g", what, got.loss, want.loss)
	}
	gg, wg := got.step.Applied(), want.step.Applied()
	if gg == nil || wg == nil || len(gg) != len(names) || len(wg) != len(names) {
		t.Fatalf("%s: no applied gradient (%d, %d), want %d", what, len(gg), len(wg), len(names))
	}
	for k, name := range names {
		scale := 0.0
		for _, v := range wg[k] {
			scale = math.Max(scale, math.Abs(v))
		}
		if scale == 0 {
			t.Errorf("%s: stock's gradient of %s is all zeros: the test checks nothing", what, name)
		}
		for i := range gg[k] {
			if math.Abs(gg[k][i]-wg[k][i]) > 1e-9*scale {
				t.Fatalf("%s: d loss / d %s[%d]: %.17g, stock's %.17g", what, name, i, gg[k][i], wg[k][i])
			}
		}
	}
}

// TestStockMatchesFusedStep: the transformer with stock ops and with fused
// ops take the same PPO step (its table pass and its windows pass), SFT
// step and distillation step, in loss and in the autodiff gradient of
// every parameter, to 1e-9 relative (PPO's loss relative to the size of
// its terms: at ratio 1 it is the mean advantage, about 0), at W=K=3, L=2
// and on a heterogeneous graph (two heads, layer norm, prompt). The two
// table passes fill their graphs in chunks of different sizes.
func TestStockMatchesFusedStep(t *testing.T) {
	for _, c := range []tasks.Config{{W: 3, K: 3, L: 2}, {Branches: [][]int{{2, 2, 3}, {5, 1}}}} {
		g := graph(t, c)
		teacher := eval.PolicyRLVRLimit(g)
		for _, k := range []Kind{PPO, SFT, Distill} {
			t.Run(fmt.Sprintf("%s/%s", g.Config.Name(), k), func(t *testing.T) {
				cfg := Defaults(k, TransformerModel)
				cfg.Rollouts = 12
				if k == PPO {
					cfg.Epochs, cfg.Minibatches = 1, 1
				}
				if k != PPO {
					cfg.Optim = solvers.Config{Name: "adam", LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
				}
				fused, stock := opsTwins(t, g, cfg, teacher)
				lf, ls := fused.l.(*transformer), stock.l.(*transformer)
				var names []string
				for _, p := range lf.tr.Learnables() {
					names = append(names, p.Name())
				}
				ctx := context.Background()
				if k != PPO {
					for _, tr := range []*Trainer{fused, stock} {
						if err := tr.Step(ctx); err != nil {
							t.Fatal(err)
						}
					}
					checkPass(t, "windows pass", lf.windows, ls.windows, names, 0)
					return
				}
				ab, states, adv, div, err := fused.sampledBatch(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range []*transformer{lf, ls} {
					if _, err := l.update(ab, states, adv, div); err != nil {
						t.Fatal(err)
					}
				}
				scale := 0.0 // PPO's loss at ratio 1 is sum_t A_t / n, about 0: its terms' size
				for i, d := range perToken(div.rollout, div.lens) {
					scale += math.Abs(adv.at(i)) / d
				}
				checkPass(t, "table pass", lf.table, ls.table, names[len(names)-1:], scale)
				checkPass(t, "windows pass", lf.windows, ls.windows, names[:len(names)-1], scale)
			})
		}
	}
}

// TestStockRunMatchesFused: a 20-step PPO run of the transformer with stock
// ops gives the metrics of the same run with fused ops (the default), row
// by row, to 1e-6 relative: the Monte Carlo hitting time and its interval,
// the objective, the sampled and trained tokens and the batch statistics.
// Prompted, on independent rollouts; without a prompt, on the default's
// walks with hindsight targets (both passes' walk sums).
func TestStockRunMatchesFused(t *testing.T) {
	for _, prompt := range []bool{true, false} {
		t.Run(fmt.Sprintf("prompt=%v", prompt), func(t *testing.T) { stockRunMatchesFused(t, prompt) })
	}
}

func stockRunMatchesFused(t *testing.T, prompt bool) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	cfg := Defaults(PPO, TransformerModel)
	cfg.Rollouts, cfg.Steps, cfg.Until, cfg.LogEvery = 8, 20, 0, 1
	cfg.Hindsight = !prompt
	fused, stock := opsTwinsOf(t, g, cfg, nil, prompt)
	rows := func(tr *Trainer) []Row {
		var out []Row
		if _, err := tr.Run(context.Background(), Hooks{Row: func(r Row) error { out = append(out, r); return nil }}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, want := rows(fused), rows(stock)
	if len(got) != 21 || len(want) != 21 {
		t.Fatalf("rows: fused %d, stock %d, want 21", len(got), len(want))
	}
	close := func(a, b float64) bool { return a == b || math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b)) }
	for i := range got {
		a, b := got[i], want[i]
		for _, f := range []struct {
			name string
			x, y float64
		}{
			{"hitting_time", a.HittingTime, b.HittingTime}, {"ci95", a.HittingTimeCI95, b.HittingTimeCI95},
			{"objective", a.Objective, b.Objective}, {"tokens", float64(a.Tokens), float64(b.Tokens)},
			{"trained_tokens", float64(a.TrainedTokens), float64(b.TrainedTokens)},
			{"approx_kl", a.Batch.ApproxKL, b.Batch.ApproxKL}, {"clip_frac", a.Batch.ClipFrac, b.Batch.ClipFrac},
			{"entropy", a.Batch.Entropy, b.Batch.Entropy}, {"grad_norm", a.Batch.GradNorm, b.Batch.GradNorm},
			{"reward_mean", a.Batch.RewardMean, b.Batch.RewardMean},
		} {
			if !close(f.x, f.y) {
				t.Errorf("step %d: %s: fused %.10g, stock %.10g", a.Step, f.name, f.x, f.y)
			}
		}
	}
	if first, last := got[0].HittingTime, got[len(got)-1].HittingTime; !(last < first) {
		t.Errorf("hitting time %v at step 0, %v at step 20: want a run that learns", first, last)
	}
}
