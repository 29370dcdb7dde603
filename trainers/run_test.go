package trainers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// BenchmarkRLVRStep times one exact RLVR step at the paper's size (exact
// analysis, advantages, the autodiff step, the sign update), from the
// pretrained policy (every branch alike: solved once) and from random
// logits (every branch solved).
func BenchmarkRLVRStep(b *testing.B) {
	g := graph(b, tasks.DefaultConfig())
	for _, init := range []struct {
		name   string
		logits []float64
	}{{"symmetric", nil}, {"asymmetric", randomLogits(g, 1)}} {
		b.Run(init.name, func(b *testing.B) {
			tr, err := New(DefaultConfig(), g, Setup{Init: init.logits})
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.measure(context.Background()); err != nil {
					b.Fatal(err)
				}
				if err := tr.Step(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(modelOf(tr).NumParams()), "params")
		})
	}
}

// TestResumeIsBitIdentical: stopping after some steps, snapshotting into a
// fresh trainer and continuing gives the same metrics bit for bit as an
// uninterrupted run, for every optimiser and trainer.
func TestResumeIsBitIdentical(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	for _, tc := range []struct {
		trainer, opt, baseline string
		stepTokens             int
		hindsight              bool
	}{
		{"ppo", "adam", "fork", 0, true}, {"reinforce", "sgd", "state", 60, true},
		{"rlvr-exact", "sign", "", 0, false}, {"rlvr-exact", "sgd", "", 0, false}, {"rlvr-exact", "adam", "", 0, false}, {"pretrain", "adam", "", 0, false},
		{"sft", "adam", "", 0, false}, {"ppo", "adam", "state", 0, false}, {"ppo", "adam", "gae", 0, false}, {"ppo", "adam", "exact", 0, false}, {"reinforce", "sgd", "state-target", 0, false},
		{"grpo", "adam", "", 0, false}, {"dr-grpo", "sgd", "", 0, false},
		{"ppo", "adam", "fork", 60, false}, {"grpo", "adam", "", 60, false}, // batches whose size follows the hitting time
	} {
		cfg := Defaults(Kind(tc.trainer), BigramModel)
		cfg.Optim = DefaultOptim(cfg.Trainer, BigramModel, tc.opt)
		cfg.Steps, cfg.Until, cfg.LogEvery = 40, 0, 1
		if tc.baseline != "" {
			cfg.Baseline = tc.baseline
		}
		cfg.Rollouts, cfg.Minibatches, cfg.StepTokens, cfg.Hindsight = 8, 2, tc.stepTokens, tc.hindsight
		if tc.opt == "sgd" {
			cfg.Optim.LR = 1e-4
		}
		untimed := func(r Row) string { // a step's wall time is not reproduced
			r.StepSeconds = 0
			return fmt.Sprintf("%+v", r)
		}
		collect := func(tr *Trainer, ctx context.Context, out *[]string) {
			tr.Run(ctx, Hooks{Row: func(r Row) error { *out = append(*out, untimed(r)); return nil }})
		}
		a, _ := New(cfg, g, Setup{})
		var full []string
		collect(a, context.Background(), &full)
		a.Close()
		// Interrupted at step 23.
		b, _ := New(cfg, g, Setup{})
		var part []string
		ctx, cancel := context.WithCancel(context.Background())
		b.Run(ctx, Hooks{Row: func(r Row) error {
			part = append(part, untimed(r))
			if r.Step == 23 {
				cancel()
			}
			return nil
		}})
		st, err := b.Checkpoint(nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		c, _ := New(cfg, g, Setup{})
		if err := c.Restore(st); err != nil {
			t.Fatalf("%v: %v", tc, err)
		}
		var rest []string
		collect(c, context.Background(), &rest)
		c.Close()
		resumed := append(part[:len(part)-1], rest...) // step 23 is measured again
		if len(resumed) != len(full) || len(full) != 41 {
			t.Fatalf("%v: %d rows resumed, %d uninterrupted", tc, len(resumed), len(full))
		}
		for i := range full {
			if full[i] != resumed[i] {
				t.Fatalf("%v: row %d differs:\n%s\n%s", tc, i, full[i], resumed[i])
			}
		}
	}
}

// TestHeadlineExperiment is the default job (Figures 3-4): W=K=15, L=5,
// exact RLVR, sign descent with lr 0.01 from the pretrained bigram. It
// starts at H_0 = 50141, ends within 0.1% of the converged policy's 899,
// with every a_j, b_j, c_j, d_j above 0.999.
func TestHeadlineExperiment(t *testing.T) {
	if testing.Short() {
		t.Skip("about a second")
	}
	g := graph(t, tasks.DefaultConfig())
	tr, err := New(DefaultConfig(), g, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var first Row
	last, err := tr.Run(context.Background(), Hooks{Row: func(r Row) error {
		if r.Step == 0 {
			first = r
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(first.HittingTime-50141) > 1e-9*50141 {
		t.Errorf("initial hitting time %v, want H_0 = 50141", first.HittingTime)
	}
	if tr.Limit() != 899 || math.Abs(last.HittingTime-899) > 1e-3*899 {
		t.Errorf("final hitting time %v, limit %v: want within 0.1%% of 899", last.HittingTime, tr.Limit())
	}
	for _, d := range last.Depths {
		if min(d.A, d.B, d.C, d.D) <= 0.999 {
			t.Errorf("depth %d: a,b,c,d = %.6f %.6f %.6f %.6f, want all above 0.999", d.Depth, d.A, d.B, d.C, d.D)
		}
	}
	t.Logf("converged in %d steps: hitting time %.6f", tr.Steps(), last.HittingTime)
}

// TestStallDetected: at W=15, K=30, L=5 sign descent with lr 0.01 locks
// into a cycle of its discrete updates (the hitting time alternates between
// two values near 154308 while depths 4..27 oscillate around their initial
// probabilities); the run stops with ErrStalled instead of spending its
// whole budget. lr 0.001 converges (5987 steps, checked with train run).
func TestStallDetected(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	g := graph(t, tasks.Config{W: 15, K: 30, L: 5})
	cfg := DefaultConfig()
	cfg.Patience, cfg.LogEvery = 200, 100
	tr, err := New(cfg, g, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	last, err := tr.Run(context.Background(), Hooks{})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("got %v, want ErrStalled", err)
	}
	if last.HittingTime < 1e5 || tr.Steps() >= cfg.Steps {
		t.Errorf("stopped at step %d with hitting time %v", tr.Steps(), last.HittingTime)
	}
	if last.Depths == nil {
		t.Error("the last row has no a/b/c/d")
	}
}

// TestNumericalFaultStops: a step size that overflows the logits stops the
// run with an error naming the step and the quantity, and no NaN reaches
// the parameters.
func TestNumericalFaultStops(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 2, L: 2})
	cfg := DefaultConfig()
	cfg.Optim = solvers.Config{Name: "sgd", LR: 1e308}
	tr, err := New(cfg, g, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = tr.Run(context.Background(), Hooks{})
	if err == nil || !strings.Contains(err.Error(), "step ") || !(strings.Contains(err.Error(), "Inf") || strings.Contains(err.Error(), "NaN")) {
		t.Fatalf("got %v, want an error naming the step and the non-finite quantity", err)
	}
	for _, v := range modelOf(tr).Logits() {
		if math.IsNaN(v) {
			t.Fatal("a NaN reached the parameters")
		}
	}
	t.Log(err)
}

// TestDeterministic: the same configuration and seed give bit-identical
// metrics across runs (sampled distillation data included).
func TestDeterministic(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	teacher := eval.PolicyRLVRLimit(g)
	var runs [2][]Row
	for i := range runs {
		cfg := Defaults(Distill, BigramModel)
		cfg.DistillTraces, cfg.Seed, cfg.LogEvery = 300, 7, 1
		tr, err := New(cfg, g, Setup{Teacher: teacher})
		if err != nil {
			t.Fatal(err)
		}
		tr.Run(context.Background(), Hooks{Row: func(r Row) error { runs[i] = append(runs[i], r); return nil }})
		tr.Close()
	}
	if len(runs[0]) != len(runs[1]) || len(runs[0]) < 10 {
		t.Fatalf("%d and %d rows", len(runs[0]), len(runs[1]))
	}
	for k := range runs[0] {
		if runs[0][k].HittingTime != runs[1][k].HittingTime || runs[0][k].Objective != runs[1][k].Objective {
			t.Fatalf("row %d differs", k)
		}
	}
}

// TestResumeAfterUnloggedStep: a sampled run computes its batch's entropy
// only for the rows and checkpoints that need it; one interrupted right
// after a step whose row it has not measured yet (a checkpoint between two
// logged rows) and resumed logs that row with the entropy of the batch the
// uninterrupted run logs, as every other value.
func TestResumeAfterUnloggedStep(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	cfg := Defaults(PPO, BigramModel)
	cfg.Steps, cfg.Until, cfg.LogEvery, cfg.Rollouts = 40, 0, 5, 8
	rows := func(tr *Trainer, ctx context.Context, stepHook func(int) error) []string {
		var out []string
		tr.Run(ctx, Hooks{Row: func(r Row) error {
			r.StepSeconds = 0
			out = append(out, fmt.Sprintf("%+v", r))
			return nil
		}, Step: stepHook})
		return out
	}
	a, _ := New(cfg, g, Setup{})
	full := rows(a, context.Background(), nil)
	a.Close()
	b, _ := New(cfg, g, Setup{})
	ctx, cancel := context.WithCancel(context.Background())
	var st *checkpoints.Checkpoint
	part := rows(b, ctx, func(steps int) error {
		if steps == 25 { // step 25's batch is drawn, its row not measured: where the CLI checkpoints
			var err error
			st, err = b.Checkpoint(nil)
			cancel()
			return err
		}
		return nil
	})
	b.Close()
	if st == nil || len(part) == 0 {
		t.Fatal("no checkpoint at step 25")
	}
	part = part[:len(part)-1] // row 25, logged after the checkpoint, is measured again
	c, _ := New(cfg, g, Setup{})
	if err := c.Restore(st); err != nil {
		t.Fatal(err)
	}
	resumed := append(part, rows(c, context.Background(), nil)...)
	c.Close()
	if len(resumed) != len(full) || len(full) != 9 {
		t.Fatalf("%d rows resumed, %d uninterrupted", len(resumed), len(full))
	}
	for i := range full {
		if full[i] != resumed[i] {
			t.Fatalf("row %d differs:\n%s\n%s", i, full[i], resumed[i])
		}
	}
}

// TestBranchCopiesChangeNothing: exact RLVR that copies the advantages of
// a branch identical to an earlier one (eval its weights, the bigram its
// probabilities) trains bit
// for bit as one that computes them: the symmetric start at W=K=5, L=3,
// uneven branches of which some are alike, and a trained source row
// (entries differ by branch: no copy once it moves).
func TestBranchCopiesChangeNothing(t *testing.T) {
	run := func(c tasks.Config, trainSource, copying bool) []float64 {
		t.Helper()
		defer func(old, probs bool) { copyBranchAdvantages, copyBranchProbs = old, probs }(copyBranchAdvantages, copyBranchProbs)
		copyBranchAdvantages, copyBranchProbs = copying, copying
		cfg := DefaultConfig()
		cfg.Steps, cfg.Until, cfg.LogEvery, cfg.TrainSource = 60, 0, 1, trainSource
		tr, err := New(cfg, graph(t, c), Setup{})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		var hs []float64
		if _, err := tr.Run(context.Background(), Hooks{Row: func(r Row) error {
			hs = append(hs, r.HittingTime)
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
		return hs
	}
	for _, tc := range []struct {
		name        string
		c           tasks.Config
		trainSource bool
		repeats     int // branches whose rows have an earlier one's lengths
	}{
		{"W=K=5, L=3", tasks.Config{W: 5, K: 5, L: 3}, false, 4},
		{"uneven", tasks.Config{Branches: [][]int{{2, 2, 3}, {5, 1}, {2, 2, 3}, {5, 1}, {4}}}, false, 2},
		{"trained source row", tasks.Config{W: 4, K: 3, L: 2}, true, 3},
	} {
		a, b := run(tc.c, tc.trainSource, true), run(tc.c, tc.trainSource, false)
		if reps := len(branchRepeats(graph(t, tc.c))); reps != tc.repeats {
			t.Errorf("%s: %d branches repeat an earlier one's rows, want %d", tc.name, reps, tc.repeats)
		}
		if len(a) != len(b) {
			t.Fatalf("%s: %d rows copying, %d computing", tc.name, len(a), len(b))
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Fatalf("%s: step %d: hitting time %v copying, %v computing", tc.name, i, a[i], b[i])
			}
		}
		if a[len(a)-1] >= a[0] {
			t.Errorf("%s: no progress in %d steps (%v to %v)", tc.name, len(a)-1, a[0], a[len(a)-1])
		}
	}
}
