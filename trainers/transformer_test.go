package trainers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

func newTrainer(t testing.TB, cfg Config, opts TransformerOptions, g *tasks.Graph, init []float64) *Trainer {
	t.Helper()
	tr, err := New(cfg, g, Setup{Model: TransformerModel, Transformer: opts, Init: init})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// TestTransformerStartsAtBigram: at step 0 the transformer's Monte Carlo
// hitting time agrees with the exact hitting time of the bigram it was
// initialised from (within 4 standard errors), with and without a prompt
// and layer norm, from the pretrained world model and from random logits.
func TestTransformerStartsAtBigram(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]float64, len(g.Next))
	for s := range g.States {
		for i := g.Offsets[s]; i < g.Offsets[s+1] && g.Trained(s); i++ { // fixed rows stay uniform
			random[i] = rng.NormFloat64()
		}
	}
	for _, init := range [][]float64{nil, random} {
		bg, err := graphBigram(g, init, trainedRows(g, false))
		if err != nil {
			t.Fatal(err)
		}
		exact, err := eval.NewAnalyzer(g).Analyze(bg.Probs())
		if err != nil {
			t.Fatal(err)
		}
		for _, variant := range []struct{ prompt, layerNorm bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			prompt := variant.prompt
			opts := DefaultTransformerOptions(PPO)
			opts.Prompt, opts.LayerNorm, opts.EvalRollouts = prompt, variant.layerNorm, 5000
			cfg := ppoConfig()
			row, err := newTrainer(t, cfg, opts, g, init).measure(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if se := row.HittingTimeCI95 / 1.96; math.Abs(row.HittingTime-exact.HittingTime) > 4*se || row.MCSuccessRate != 1 {
				t.Errorf("random init %v, %+v: Monte Carlo %.4g ± %.2g (success %v), bigram's exact %.6g",
					init != nil, variant, row.HittingTime, row.HittingTimeCI95, row.MCSuccessRate, exact.HittingTime)
			}
		}
	}
}

// TestTransformerWindowsGradient is a known answer for the windows: from
// either exact initialisation the logits of token x are the bigram's
// exactly (identity: E = I, P = 0, W_O = 0, U[x] the logits; table: U = 0,
// B the logits), so one SGD step on sum_items w_i log pi(a_i|x_i) moves the
// logit x -> a (U[x][a], or B) by -lr sum over x's trained items of w_i
// (1{a = a_i} - pi(a|x)), the bigram's gradient, however the sequences
// are cut into windows and filled.
func TestTransformerWindowsGradient(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	for _, tc := range []struct {
		init   string
		prompt bool
	}{{"identity", false}, {"identity", true}, {"table", false}, {"table", true}} {
		prompt := tc.prompt
		cfg := Defaults(SFT, TransformerModel)
		cfg.Optim = solvers.Config{Name: "sgd", LR: 0.5}
		opts := TransformerOptions{TransformerArch: nn.TransformerArch{Init: tc.init, Heads: 1, Context: 3, Positional: "learned", Prompt: prompt}, Ops: nn.Fused, Stride: 5, Windows: 4, EvalRollouts: 2, FinalRollouts: 2}
		if tc.init == "table" {
			opts.Dim, opts.TableLR = 8, cfg.Optim.LR
		}
		tr := newTrainer(t, cfg, opts, g, nil)
		tf := tr.l.(*transformer)
		b, err := eval.AgentRollouts(context.Background(), g, tf.newAgent(), 9, 60, 5)
		if err != nil {
			t.Fatal(err)
		}
		seqs, err := tf.sequences(&b.Batch)
		if err != nil {
			t.Fatal(err)
		}
		lens := make([]int, len(seqs))
		for i, s := range seqs {
			lens[i] = len(s.tokens)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		w := make([]float64, b.Tokens())
		for i := range w {
			w[i] = rng.NormFloat64()
		}
		probs := tf.ref
		want := make([]float64, len(g.Next)) // expected change of U at each transition
		for i, seq := range seqs {
			for p := 0; p+1 < len(seq.tokens); p++ {
				s, e := seq.tokens[p], int(b.Entries[b.Starts[i]+p])
				if !tr.Trained(s) {
					continue
				}
				for k := g.Offsets[s]; k < g.Offsets[s+1]; k++ {
					ind := 0.0
					if k == e {
						ind = 1
					}
					want[k] -= cfg.Optim.LR * w[b.Starts[i]+p] * (ind - probs[k])
				}
			}
		}
		before := uOf(tr, g)
		if _, err := tf.trainWindows(seqs, b.Starts, cutWindows(lens, opts.Stride, opts.Context), func(c *consts, pos, _, item int, _ float64) {
			c.w[pos] = w[item]
		}); err != nil {
			t.Fatal(err)
		}
		after := uOf(tr, g)
		for k := range want {
			if got := after[k] - before[k]; math.Abs(got-want[k]) > 1e-12 {
				t.Fatalf("%+v: %s -> %s: the logit moved by %.15g, want %.15g", tc, g.Name(support(g).RowOf(k)), g.Name(g.Next[k]), got, want[k])
			}
		}
	}
}

// uOf reads the logit parameter of each valid transition x -> a: B (the
// table initialisation's last learnable, one per transition) or U[x][a].
func uOf(tr *Trainer, g *tasks.Graph) []float64 {
	ls := tr.l.(*transformer).tr.Learnables()
	u := ls[len(ls)-1].Value().Data().([]float64)
	if ls[len(ls)-1].Name() == "B" {
		return append([]float64(nil), u[:len(g.Next)]...)
	}
	v := ls[len(ls)-1].Shape()[1]
	out := make([]float64, len(g.Next))
	for x := range g.States {
		for k := g.Offsets[x]; k < g.Offsets[x+1]; k++ {
			out[k] = u[x*v+g.Next[k]]
		}
	}
	return out
}

// TestTransformerResume: a transformer run stopped, snapshotted and
// restored into a new trainer continues exactly as the uninterrupted run
// (ppo with a KL term and entropy bonus, ppo with hindsight targets,
// reinforce, sft, distill from fixed traces).
func TestTransformerResume(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 2, L: 2})
	teacher := eval.PolicyRLVRLimit(g)
	for _, name := range []string{"ppo", "ppo-hindsight", "reinforce", "sft", "distill"} {
		hindsight := name == "ppo-hindsight"
		name = strings.TrimSuffix(name, "-hindsight")
		cfg := Defaults(Kind(name), TransformerModel)
		cfg.Hindsight = hindsight
		cfg.Rollouts, cfg.Steps, cfg.Until, cfg.LogEvery = 8, 6, 0, 2
		if name == "ppo" {
			cfg.KLCoef, cfg.EntropyCoef = 0.1, 0.01
		}
		if name == "sft" || name == "distill" {
			cfg.Optim = solvers.Config{Name: "adam", LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
		}
		if name == "distill" {
			cfg.DistillTraces = 20
		}
		opts := DefaultTransformerOptions(Kind(name))
		opts.EvalRollouts, opts.Prompt = 50, name == "ppo" && !hindsight
		build := func() *Trainer {
			tr, err := New(cfg, g, Setup{Model: TransformerModel, Transformer: opts, Teacher: teacher})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			return tr
		}
		var rows []Row
		full := build()
		if _, err := full.Run(context.Background(), Hooks{Row: func(r Row) error { rows = append(rows, r); return nil }}); err != nil {
			t.Fatal(err)
		}
		first := build()
		for range 3 {
			if _, err := first.measure(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := first.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		st, err := first.Checkpoint(nil)
		if err != nil {
			t.Fatal(err)
		}
		second := build()
		if err := second.Restore(st); err != nil {
			t.Fatal(err)
		}
		var resumed []Row
		if _, err := second.Run(context.Background(), Hooks{Row: func(r Row) error { resumed = append(resumed, r); return nil }}); err != nil {
			t.Fatal(err)
		}
		want := rows[len(rows)-len(resumed):]
		if !reflect.DeepEqual(fmtRows(resumed), fmtRows(want)) {
			t.Errorf("%s: resumed rows %v, uninterrupted %v", name, fmtRows(resumed), fmtRows(want))
		}
		a, b := full.l.(*transformer).tr.ParamValues(), second.l.(*transformer).tr.ParamValues()
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: parameters differ after resume", name)
		}
	}
}

// fmtRows prints rows exactly (NaN-safe comparison).
func fmtRows(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%d %v %v %v %v %+v", r.Step, r.HittingTime, r.HittingTimeCI95, r.Objective, r.Tokens, r.Batch))
	}
	return out
}

// TestRunsDoNotDependOnCores: a sampled PPO run of each learner at W=K=5,
// L=3 logs the same rows, bit for bit, on 1, 2 and 3 goroutines. Its
// batches (tens of thousands of tokens) are split between goroutines by
// the rollouts, the table pass and the windows pass; every reduction over
// them must be in an order fixed by the data, not by the split.
func TestRunsDoNotDependOnCores(t *testing.T) {
	if testing.Short() {
		t.Skip("6 short sampled runs at W=K=5, L=3")
	}
	g := graph(t, tasks.Config{W: 5, K: 5, L: 3})
	for _, model := range []Model{BigramModel, TransformerModel} {
		cfg := Defaults(PPO, model)
		cfg.Steps, cfg.LogEvery, cfg.Until = 3, 1, 0
		run := func(procs int) []string {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			return fmtRows(runRows(t, cfg, g, Setup{Model: model, Transformer: DefaultTransformerOptions(PPO)}))
		}
		one := run(1)
		for _, procs := range []int{2, 3} {
			if got := run(procs); !reflect.DeepEqual(got, one) {
				t.Errorf("%s: rows on %d goroutines %v, on 1 %v", model, procs, got, one)
			}
		}
	}
}

// TestTransformerRLVR is the acceptance run of the transformer figure: PPO
// from the pretrained bigram at W=K=3, L=2 brings the transformer's Monte
// Carlo hitting time to at most the bigram's converged value plus the
// estimate's confidence interval.
func TestTransformerRLVR(t *testing.T) {
	if testing.Short() {
		t.Skip("about two minutes")
	}
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	cfg := ppoConfig()
	cfg.Steps, cfg.Until = 400, 0.02
	tr := newTrainer(t, cfg, DefaultTransformerOptions(PPO), g, nil)
	start := time.Now()
	last, err := tr.Run(context.Background(), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if last.MCSuccessRate != 1 || last.HittingTime > tr.Limit()+last.HittingTimeCI95 {
		t.Errorf("final hitting time %.4g ± %.2g (success %v), bigram's converged value %v", last.HittingTime, last.HittingTimeCI95, last.MCSuccessRate, tr.Limit())
	}
	t.Logf("hitting time %.4g ± %.2g (limit %v) after %d steps, %d rollouts, %d tokens, %v",
		last.HittingTime, last.HittingTimeCI95, tr.Limit(), tr.Steps(), last.Rollouts, last.Tokens, time.Since(start).Round(time.Millisecond))
}

// ppoConfig is the transformer's PPO with its defaults but the paper's
// independent rollouts (the tests written for them; the hindsight tests
// set Hindsight, the default).
func ppoConfig() Config {
	c := Defaults(PPO, TransformerModel)
	c.Hindsight = false
	return c
}

// TestSubsampledGradientIsUnbiased: training on a random subset of a
// batch's windows, weighted by the inverse sampling rate (subsample, the
// -train-tokens budget), gives on average the gradient of the whole batch:
// the mean of 400 subsampled SGD steps is within 4 standard errors of the
// full step.
func TestSubsampledGradientIsUnbiased(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	cfg := Defaults(SFT, TransformerModel)
	cfg.Optim = solvers.Config{Name: "sgd", LR: 1}
	opts := TransformerOptions{TransformerArch: nn.TransformerArch{Init: "table", Dim: 8, Heads: 1, Context: 3, Positional: "learned"}, Ops: nn.Fused, Stride: 4, Windows: 8, EvalRollouts: 2, FinalRollouts: 2, TableLR: 1}
	tr := newTrainer(t, cfg, opts, g, nil)
	tf := tr.l.(*transformer)
	b, err := eval.AgentRollouts(context.Background(), g, tf.newAgent(), 12, 80, 3)
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := tf.sequences(&b.Batch)
	if err != nil {
		t.Fatal(err)
	}
	lens := make([]int, len(seqs))
	for i, s := range seqs {
		lens[i] = len(s.tokens)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	w := make([]float64, b.Tokens())
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	flat := func() []float64 {
		var out []float64
		for _, p := range tf.tr.ParamValues() {
			out = append(out, p...)
		}
		return out
	}
	start := tf.tr.ParamValues()
	step := func(wins []window) []float64 { // the SGD step at lr 1: minus the gradient
		before := flat()
		if _, err := tf.trainWindows(seqs, b.Starts, wins, func(c *consts, pos, _, item int, weight float64) { c.w[pos] = w[item] * weight }); err != nil {
			t.Fatal(err)
		}
		after := flat()
		if err := tf.tr.SetParamValues(start); err != nil {
			t.Fatal(err)
		}
		for i := range after {
			after[i] -= before[i]
		}
		return after
	}
	all := cutWindows(lens, opts.Stride, opts.Context)
	full := step(all)
	total := 0
	for _, win := range all {
		total += win.to - win.train
	}
	checkUnbiased(t, full, 400, func(d int) []float64 {
		part := subsample(all, total/4, rand.New(rand.NewPCG(11, uint64(d))))
		if len(part) >= len(all) {
			t.Fatalf("a budget of a quarter kept %d of %d windows", len(part), len(all))
		}
		return step(part)
	})
}

// TestTransformerMemoryRefused: a transformer too large for the memory
// budget is refused before anything is allocated, naming the budget and
// what to lower: a huge context, and at the paper's size a batch of
// rollouts that would not fit (a million rollouts of about 50,000 tokens).
func TestTransformerMemoryRefused(t *testing.T) {
	for _, c := range []struct {
		name     string
		g        tasks.Config
		rollouts int
		context  int
		want     string
	}{
		{"context", tasks.Config{W: 3, K: 2, L: 2}, 0, 100_000_000, "lower -rollouts, -context"},
		{"batch", tasks.Config{W: 15, K: 15, L: 5}, 1_000_000, 0, "1000000 rollouts of about 50141 tokens"},
	} {
		cfg := ppoConfig()
		if c.rollouts > 0 {
			cfg.Rollouts = c.rollouts
		}
		opts := DefaultTransformerOptions(PPO)
		if c.context > 0 {
			opts.Context = c.context
		}
		_, err := New(cfg, graph(t, c.g), Setup{Model: TransformerModel, Transformer: opts})
		if err == nil || !strings.Contains(err.Error(), "max_bytes") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a refusal naming max_bytes and %q", c.name, err, c.want)
		}
	}
}

// checkUnbiased fails unless the mean of draws subsampled steps (draw(d)
// for d < draws) is within 4 standard errors of the full step, with a
// standard error that is not 0 (the draws differ) and below a fifth of
// the full step's norm (the test can tell).
func checkUnbiased(t *testing.T, full []float64, draws int, draw func(d int) []float64) {
	t.Helper()
	mean, sq := make([]float64, len(full)), make([]float64, len(full))
	n := float64(draws)
	for d := range draws {
		for i, x := range draw(d) {
			mean[i] += x / n
			sq[i] += x * x / n
		}
	}
	var diff, se2, norm float64
	for i := range full {
		diff += (mean[i] - full[i]) * (mean[i] - full[i])
		se2 += (sq[i] - mean[i]*mean[i]) / (n - 1)
		norm += full[i] * full[i]
	}
	diff, se, norm := math.Sqrt(diff), math.Sqrt(se2), math.Sqrt(norm)
	if diff > 4*se || se > 0.2*norm || norm == 0 || se == 0 {
		t.Errorf("mean of %d subsampled steps is %.3g from the full step (norm %.3g), standard error %.3g", draws, diff, norm, se)
	}
	t.Logf("|mean - full| = %.3g, standard error %.3g, |full| = %.3g", diff, se, norm)
}

// TestMissedBatchRowIsMeasuredAfresh: GRPO's horizon of 2 hitting times
// cuts some rollouts of its batches; a row whose batch missed is measured
// afresh, so every row is an estimate (all its fresh rollouts hit, with an
// interval), never the batch's lower bound, and the fresh tokens are
// counted apart from training's.
func TestMissedBatchRowIsMeasuredAfresh(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	cfg := Defaults(GRPO, TransformerModel)
	cfg.Steps, cfg.LogEvery, cfg.Until, cfg.Patience = 60, 10, 0, 0
	tr := newTrainer(t, cfg, DefaultTransformerOptions(GRPO), g, nil)
	l := tr.l.(*transformer)
	missed, rows := 0, 0
	_, err := tr.Run(context.Background(), Hooks{Row: func(r Row) error {
		rows++
		if l.st.Bound > 0 {
			missed++
			if r.HittingTime <= l.st.Bound*0.5 {
				t.Errorf("step %d: row %.6g far below its batch's bound %.6g", r.Step, r.HittingTime, l.st.Bound)
			}
		}
		if r.MCSuccessRate != 1 || !(r.HittingTimeCI95 > 0) {
			t.Errorf("step %d: row %.6g ± %.3g, success rate %.3g: a bound, not an estimate", r.Step, r.HittingTime, r.HittingTimeCI95, r.MCSuccessRate)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if missed == 0 || l.st.Measured == 0 {
		t.Fatalf("%d of %d rows from a batch that missed, %d tokens measured: the case is not exercised", missed, rows, l.st.Measured)
	}
	t.Logf("%d of %d rows measured afresh after a batch that missed; %d tokens measured", missed, rows, l.st.Measured)
}

// TestHindsightRowsHaveIntervals: a transformer run with hindsight targets
// measures its rows on its batches' walks with an interval taken over the
// walks, and afresh when a batch holds a single walk (whose correlated
// rollouts give no interval): every row's interval is finite and positive.
func TestHindsightRowsHaveIntervals(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	for _, rollouts := range []int{2, 12} { // one walk a step; four
		cfg := Defaults(PPO, TransformerModel)
		cfg.Rollouts, cfg.Steps, cfg.Until, cfg.LogEvery, cfg.Hindsight = rollouts, 12, 0, 4, true
		opts := DefaultTransformerOptions(PPO)
		opts.EvalRollouts = 50
		tr := newTrainer(t, cfg, opts, g, nil)
		var rows []Row
		if _, err := tr.Run(context.Background(), Hooks{Row: func(r Row) error { rows = append(rows, r); return nil }}); err != nil {
			t.Fatalf("rollouts %d: %v", rollouts, err)
		}
		for _, r := range rows {
			if !(r.HittingTimeCI95 > 0) || math.IsInf(r.HittingTimeCI95, 0) {
				t.Errorf("rollouts %d, step %d: hitting time %v ± %v", rollouts, r.Step, r.HittingTime, r.HittingTimeCI95)
			}
		}
		if len(rows) < 3 {
			t.Fatalf("rollouts %d: %d rows", rollouts, len(rows))
		}
	}
}

// TestHindsightMeasuresOnWalks: a run on walks with hindsight targets
// takes its fresh measurements (periodic, rechecks, the stop's
// confirmation) on walks too, the same draws as eval's
// AgentWalkMonteCarlo, and counts the tokens the walks drew; its final
// value is measured on independent rollouts, FinalRollouts of them, as
// every run's. Without hindsight every measurement is independent.
func TestHindsightMeasuresOnWalks(t *testing.T) {
	ctx := context.Background()
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	for _, hindsight := range []bool{false, true} {
		cfg := Defaults(PPO, TransformerModel)
		cfg.Rollouts, cfg.Steps, cfg.Until, cfg.Hindsight = 12, 2, 0, hindsight
		opts := DefaultTransformerOptions(PPO)
		opts.EvalRollouts, opts.FinalRollouts = 50, 1000
		tr := newTrainer(t, cfg, opts, g, nil)
		if _, err := tr.Run(ctx, Hooks{}); err != nil {
			t.Fatal(err)
		}
		l := tr.l.(*transformer)
		walks, tokens, err := eval.AgentWalkMonteCarlo(ctx, g, l.newAgent(), 1000, l.mcCap, 7)
		if err != nil {
			t.Fatal(err)
		}
		indep, err := eval.AgentMonteCarlo(ctx, g, l.newAgent(), 1000, l.mcCap, 7)
		if err != nil {
			t.Fatal(err)
		}
		before := l.st.Measured
		m, err := l.fresh(ctx, 7, false)
		if err != nil {
			t.Fatal(err)
		}
		want, wantTokens := indep, int(math.Round(indep.MeanLength*float64(indep.N)))
		if hindsight {
			want, wantTokens = walks, tokens
		}
		if m != want || l.st.Measured-before != wantTokens {
			t.Errorf("hindsight %v: a fresh measurement %+v on %d tokens, want %+v on %d", hindsight, m, l.st.Measured-before, want, wantTokens)
		}
		if m, err := l.fresh(ctx, 7, true); err != nil || m != indep {
			t.Errorf("hindsight %v: an independent fresh measurement %+v (%v), want %+v", hindsight, m, err, indep)
		}
		if hindsight && !(float64(tokens) < 0.8*indep.MeanLength*float64(indep.N)) { // at W=3 a walk takes about 1.8 hitting times where 3 rollouts take 3
			t.Errorf("1000 rollouts as walks drew %d tokens, independently about %.0f", tokens, indep.MeanLength*float64(indep.N))
		}
		f, err := tr.Final(ctx)
		if err != nil || f.Rollouts != 1000 {
			t.Errorf("hindsight %v: final value on %d rollouts (%v), want 1000 independent ones", hindsight, f.Rollouts, err)
		}

		// A run the stop rule ends: its last row is the confirmation, of
		// FinalRollouts rounded up to whole walks with hindsight.
		cfg.Steps, cfg.Until = 200, 0.5
		tr = newTrainer(t, cfg, opts, g, nil)
		if _, err := tr.Run(ctx, Hooks{}); err != nil || tr.Stop() != StopUntil {
			t.Fatalf("hindsight %v: stopped for %q (%v), want until", hindsight, tr.Stop(), err)
		}
		wantN := 1000
		if hindsight {
			wantN = 1002 // 334 walks of W=3
		}
		if n := tr.l.(*transformer).st.MC.N; n != wantN {
			t.Errorf("hindsight %v: the stop rule's confirmation on %d rollouts, want %d", hindsight, n, wantN)
		}
	}
}

// TestWalkWindowsSumRollouts: with hindsight targets the windows pass
// trains each walk's windows once, on the sums of its rollouts' terms
// (sumWalkWindows); with every window trained (no budget), a PPO step
// (2 epochs of 2 minibatches, clipped after the first) leaves every
// parameter where the pass over every rollout's windows leaves it, to
// rounding.
func TestWalkWindowsSumRollouts(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	step := func(summed bool) [][]float64 {
		defer func(v bool) { sumWalkWindows = v }(sumWalkWindows)
		sumWalkWindows = summed
		cfg := Defaults(PPO, TransformerModel)
		cfg.Rollouts, cfg.Hindsight = 12, true
		cfg.Optim = solvers.Config{Name: "sgd", LR: 0.5}
		opts := DefaultTransformerOptions(PPO)
		opts.Dim, opts.TrainTokens, opts.TableLR, opts.EvalRollouts = 16, 0, 0.5, 50
		tr := newTrainer(t, cfg, opts, g, nil)
		for range 3 {
			if _, err := tr.measure(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := tr.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		return tr.l.(*transformer).tr.ParamValues()
	}
	got, want := step(true), step(false)
	moved := false
	for i := range want {
		for k := range want[i] {
			if math.Abs(got[i][k]-want[i][k]) > 1e-9*(1+math.Abs(want[i][k])) {
				t.Fatalf("parameter %d[%d]: %v by walk, %v by rollout", i, k, got[i][k], want[i][k])
			}
			moved = moved || want[i][k] != 0
		}
	}
	if !moved {
		t.Fatal("no parameter moved")
	}
}
