package trainers

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
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
	rowStart []int32
	b0, adv  []float64
}

func newTableFixture(t *testing.T, tableTokens int) *tableFixture {
	return newTableFixtureOf(t, Reinforce, tableTokens)
}

// newTableFixtureOf is newTableFixture for trainer k.
func newTableFixtureOf(t *testing.T, k Kind, tableTokens int) *tableFixture {
	return newTableFixtureWalks(t, k, tableTokens, false)
}

// newTableFixtureWalks is newTableFixtureOf whose batch, with walks, is 6
// walks with hindsight targets (18 rollouts) instead of 16 rollouts.
func newTableFixtureWalks(t *testing.T, k Kind, tableTokens int, walks bool) *tableFixture {
	t.Helper()
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	cfg := Defaults(k, TransformerModel)
	cfg.Optim, cfg.Hindsight = solvers.Config{Name: "sgd", LR: 1}, walks
	opts := TransformerOptions{TransformerArch: nn.TransformerArch{Init: "table", Dim: 8, Heads: 1, Context: 3, Positional: "learned"}, Ops: nn.Fused,
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
	if walks {
		ab, err = tf.walks(context.Background(), 6, 60, 9)
	}
	if err != nil {
		t.Fatal(err)
	}
	f := &tableFixture{tf: tf, ab: ab, b0: append([]float64(nil), vals[len(vals)-1]...)}
	f.states, _ = ab.States(g)
	f.rowStart = rowStartsInto(nil, g, f.tf.t.trained, ab, f.states)
	for range ab.Entries {
		f.adv = append(f.adv, rng.NormFloat64())
	}
	return f
}

// step runs the table pass over every rollout of the batch as one
// minibatch and returns B's change (minus the gradient: SGD at rate 1),
// restoring B.
func (f *tableFixture) step(t *testing.T) []float64 { return f.stepFrom(t, f.b0) }

// stepFrom is step with B at b when the pass runs (the batch sampled at
// f.b0).
func (f *tableFixture) stepFrom(t *testing.T, b []float64) []float64 {
	t.Helper()
	rs := make([]int, len(f.ab.Targets))
	for i := range rs {
		rs[i] = i
	}
	td := f.tf.newTableData(f.tf.batchTokens(f.ab, f.states), [][]int{rs}, nil)
	ls := f.tf.tr.Learnables()
	copy(ls[len(ls)-1].Value().Data().([]float64), b)
	div := make([]float64, len(f.ab.Targets)) // per rollout
	for i := range div {
		div[i] = float64(f.ab.Tokens())
	}
	if err := f.tf.trainTable(td, 0, f.adv, div); err != nil {
		t.Fatal(err)
	}
	after := ls[len(ls)-1].Value().Data().([]float64)
	out := make([]float64, len(after))
	for i := range after {
		out[i] = after[i] - b[i]
	}
	copy(after, f.b0)
	return out
}

// TestBatchIndicesRefused: a batch whose tokens, or one rollout's rows,
// the table pass's int32 indices cannot address is refused with an error
// naming what to lower, not indexed wrongly (the limit lowered here to
// the fixture's batch).
func TestBatchIndicesRefused(t *testing.T) {
	f := newTableFixture(t, 0)
	defer func(m int) { maxIndex = m }(maxIndex)
	rows := &eval.AgentBatch{Rows: [][]float64{make([]float64, 3), make([]float64, 5)}} // no tokens, a rollout of 5 values
	for _, tc := range []struct {
		b    *eval.AgentBatch
		max  int
		want string // "": accepted
	}{
		{f.ab, f.ab.Tokens(), ""},
		{f.ab, f.ab.Tokens() - 1, "sampled tokens is over"},
		{rows, 5, ""},
		{rows, 4, "rollout 1's rows hold 5 values"},
	} {
		maxIndex = tc.max
		err := checkIndices(tc.b)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("limit %d: %v", tc.max, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "lower -")):
			t.Errorf("limit %d: got %v, want an error with %q naming what to lower", tc.max, err, tc.want)
		}
	}
	maxIndex = 0 // and the sampler's draw refuses a batch over the limit
	if _, err := f.tf.rollouts(context.Background(), 16, 60, 10, nil); err == nil || !strings.Contains(err.Error(), "sampled tokens is over") {
		t.Errorf("rollouts over the limit: got %v", err)
	}
}

// TestTablePassGradient is a known answer for the table pass: one SGD step
// at rate 1 moves B's entry x -> a by sum over the batch's tokens at x of
// (A_t / n) (1{a = a_t} - pi_t(a)), the policy gradient, where pi_t is the
// transformer's own distribution at token t, computed here by replaying
// each rollout through a fresh sampler (not from the rows the batch
// recorded), and n the batch's tokens. REINFORCE's step is that; PPO's,
// at B as sampled (every ratio 1), too.
func TestTablePassGradient(t *testing.T) {
	for _, k := range []Kind{Reinforce, PPO} {
		t.Run(string(k), func(t *testing.T) {
			f := newTableFixtureOf(t, k, 0)
			checkTableStep(t, f, f.b0, 0.2)
		})
	}
}

// TestTablePassClipped: with B moved away from its value when the batch
// was sampled, PPO's table pass takes the clipped surrogate's step: a
// token whose ratio r_t = pi_t(a_t) / pi_old(a_t) left [1-eps, 1+eps] on
// its advantage's side adds nothing, every other token (A_t / n) r_t
// (1{a = a_t} - pi_t(a)), pi_t at the moved B.
func TestTablePassClipped(t *testing.T) {
	f := newTableFixtureOf(t, PPO, 0)
	rng := rand.New(rand.NewPCG(10, 11))
	b := append([]float64(nil), f.b0...)
	for i := range b {
		b[i] += 0.4 * rng.NormFloat64()
	}
	clipped := checkTableStep(t, f, b, 0.2)
	if clipped == 0 || clipped == f.ab.Tokens() {
		t.Errorf("%d of %d tokens clipped: want some, not all", clipped, f.ab.Tokens())
	}
}

// checkTableStep checks the table pass's step from B = b against the
// clipped surrogate's gradient (eps clip) written out, the distributions
// replayed through a sampler at b, the old log-probabilities the batch's;
// REINFORCE's is the same with no clipping. It returns the number of
// tokens clipped.
func checkTableStep(t *testing.T, f *tableFixture, b []float64, eps float64) int {
	t.Helper()
	g, tf := f.tf.t.g, f.tf
	ls := tf.tr.Learnables()
	copy(ls[len(ls)-1].Value().Data().([]float64), b)
	sp := tf.tr.Sampler()
	copy(ls[len(ls)-1].Value().Data().([]float64), f.b0)
	want := make([]float64, len(f.b0))
	n := float64(f.ab.Tokens())
	clipped := 0
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
				a := int(f.ab.Entries[k])
				r := 1.0
				if tf.t.cfg.Trainer.Clipped() {
					r = math.Exp(logp[a-lo] - f.ab.RowLogProb(g, i, k, int(f.rowStart[k]), s)) // the sampled log-probability, in its row
					if f.adv[k] > 0 && r > 1+eps || f.adv[k] < 0 && r < 1-eps {
						r = 0
						clipped++
					}
				}
				for j, lp := range logp {
					d := -math.Exp(lp)
					if lo+j == a {
						d++
					}
					want[lo+j] += f.adv[k] / n * r * d
				}
			}
			s = g.Next[f.ab.Entries[k]]
		}
	}
	got := f.stepFrom(t, b)
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
	return clipped
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

// TestRolloutSeqs: the windows pass's view of a batch (rolloutSeqs, read
// from the walk's states) gives every window [from, to] of every rollout
// the tokens the tokenizer gives it (sequences), the last token included.
func TestRolloutSeqs(t *testing.T) {
	f := newTableFixture(t, 0)
	want, err := f.tf.sequences(&f.ab.Batch)
	if err != nil {
		t.Fatal(err)
	}
	got := rolloutSeqs{b: &f.ab.Batch, states: f.states, next: f.tf.t.g.Next}
	windows := 0
	for i := range f.ab.Targets {
		n := len(want[i].tokens)
		if got.len(i) != n || got.target(i) != want.target(i) {
			t.Fatalf("rollout %d: %d tokens toward %d, want %d toward %d", i, got.len(i), got.target(i), n, want.target(i))
		}
		for from := 0; from < n; from++ {
			for to := from; to < n; to++ {
				g, w := got.window([]int{-1}, i, from, to), want.window([]int{-1}, i, from, to)
				if !slices.Equal(g, w) {
					t.Fatalf("rollout %d, window [%d, %d]: %v, want %v", i, from, to, g, w)
				}
				windows++
			}
		}
	}
	if windows == 0 {
		t.Fatal("no window compared")
	}
}

// TestTablesBesideWindowsChangeNothing: a transformer PPO run gives the
// same rows and parameters, bit for bit, whether its updates sum each
// next minibatch's table gradient beside the windows pass or after it
// (the table pass reads B and no other parameter; only its apply, which
// writes B, waits for the windows pass).
func TestTablesBesideWindowsChangeNothing(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	cfg := ppoConfig()
	cfg.Rollouts, cfg.Steps, cfg.Until, cfg.LogEvery = 16, 8, 0, 1
	run := func(beside bool) ([]string, [][]float64) {
		defer func(b bool) { tablesBesideWindows = b }(tablesBesideWindows)
		tablesBesideWindows = beside
		tr, err := New(cfg, g, Setup{Model: TransformerModel, Transformer: DefaultTransformerOptions(PPO)})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		return fmtRows(trainRows(t, tr)), tr.l.(*transformer).tr.ParamValues()
	}
	rowsA, paramsA := run(true)
	rowsB, paramsB := run(false)
	if len(rowsA) != len(rowsB) {
		t.Fatalf("%d rows beside, %d after", len(rowsA), len(rowsB))
	}
	for i := range rowsA {
		if rowsA[i] != rowsB[i] {
			t.Fatalf("row %d beside:\n%s\nafter:\n%s", i, rowsA[i], rowsB[i])
		}
	}
	for i := range paramsA {
		for j := range paramsA[i] {
			if math.Float64bits(paramsA[i][j]) != math.Float64bits(paramsB[i][j]) {
				t.Fatalf("parameter %d[%d]: %v beside, %v after", i, j, paramsA[i][j], paramsB[i][j])
			}
		}
	}
	if reflect.DeepEqual(paramsA, run0(t, cfg, g)) {
		t.Fatal("the run's parameters did not move from the start: the comparison proves nothing")
	}
}

// run0 is the starting parameters of cfg's transformer on g.
func run0(t *testing.T, cfg Config, g *tasks.Graph) [][]float64 {
	t.Helper()
	tr, err := New(cfg, g, Setup{Model: TransformerModel, Transformer: DefaultTransformerOptions(PPO)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	return tr.l.(*transformer).tr.ParamValues()
}

// TestRatioReplayWavesChangeNothing: PPO's ratio replay (ratios) sums the
// same statistics, bit for bit, whatever the waves its rollouts are
// replayed in, with the trained-token budget on and off.
func TestRatioReplayWavesChangeNothing(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	cfg := ppoConfig()
	cfg.Rollouts, cfg.Steps, cfg.Until, cfg.LogEvery = 16, 4, 0, 1
	for _, budget := range []int{0, 64} {
		run := func(wave int) []string {
			defer func(w int) { replayWave = w }(replayWave)
			replayWave = wave
			opts := DefaultTransformerOptions(PPO)
			opts.TrainTokens = budget
			tr, err := New(cfg, g, Setup{Model: TransformerModel, Transformer: opts})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			return fmtRows(trainRows(t, tr))
		}
		whole, waves := run(1<<30), run(5)
		if !reflect.DeepEqual(whole, waves) {
			t.Errorf("budget %d: rows in one wave\n%v\nin waves of 5 tokens\n%v", budget, whole, waves)
		}
		if !strings.Contains(whole[len(whole)-1], "ApproxKL:") {
			t.Fatalf("budget %d: no ratio statistics in %s", budget, whole[len(whole)-1])
		}
	}
}

// TestRowStartsFollowTheDraw: the row starts the passes read are those of
// the batch in the buffers, not of the batch drawn there before it. Until
// 2026-11-28 they were kept by step, batch and length, and a batch drawn
// at the step of the last computation (a logged row's entropy, resolved
// before the measurement drew the step's batch; a checkpoint's) with as
// many tokens as the one before got that one's row starts: its table pass
// read other tokens' rows, and `train sweep
// docs/sweeps/compare-learners.json` panicked on a slice out of range.
// Here every rollout is cut at 4 tokens, so every batch has 64.
func TestRowStartsFollowTheDraw(t *testing.T) {
	f := newTableFixture(t, 0)
	g, ctx := f.tf.t.g, context.Background()
	differ := false
	var prev []int32
	for seed := uint64(1); seed <= 8; seed++ {
		ab, err := f.tf.rollouts(ctx, 16, 4, seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ab.Tokens() != 64 {
			t.Fatalf("seed %d: %d tokens, want every rollout cut at 4", seed, ab.Tokens())
		}
		states, _ := ab.States(g)
		want := rowStartsInto(nil, g, f.tf.t.trained, ab, states)
		if got := f.tf.rowStarts(ab, states); !slices.Equal(got, want) {
			t.Fatalf("seed %d: row starts %v, want %v (the batch's)", seed, got, want)
		}
		differ = differ || (prev != nil && !slices.Equal(prev, want))
		prev = want
	}
	if !differ {
		t.Fatal("every batch had the same row starts: the test cannot tell one from another")
	}
}

// TestRatioReplayOnlyForRows: PPO's ratio replay runs only for a row that
// logs it (and a checkpoint that keeps it), on the batch and parameters
// its step left: each row's approximate KL and clip fraction are those of
// a replay taken right after its step, and a run of 10 steps logging every
// 3rd replays 4 times (steps 3, 6, 9 and the last).
func TestRatioReplayOnlyForRows(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	cfg := ppoConfig()
	cfg.Rollouts, cfg.Steps, cfg.Until, cfg.LogEvery = 16, 10, 0, 3
	tr, err := New(cfg, g, Setup{Model: TransformerModel, Transformer: DefaultTransformerOptions(PPO)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	l := tr.l.(*transformer)
	after := map[int]BatchStats{} // each step's statistics from a replay right after it
	var rows []Row
	_, err = tr.Run(context.Background(), Hooks{
		Row: func(r Row) error { rows = append(rows, r); return nil },
		Step: func(step int) error {
			rs, err := l.ratios(l.batchTokens(l.drawn.batch, tr.smp.states[:l.drawn.batch.Tokens()]))
			var b BatchStats
			rs.recordRatios(&b)
			after[step] = b
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.replays != 4 {
		t.Errorf("%d replays, want 4 (the rows of steps 3, 6, 9 and 10)", l.replays)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5", len(rows))
	}
	for _, r := range rows[1:] {
		want := after[r.Step]
		if want.ApproxKL == 0 || r.Batch.ApproxKL != want.ApproxKL || r.Batch.ClipFrac != want.ClipFrac {
			t.Errorf("step %d: approx_kl %v, clip_frac %v; a replay right after the step: %v, %v",
				r.Step, r.Batch.ApproxKL, r.Batch.ClipFrac, want.ApproxKL, want.ClipFrac)
		}
	}
}

// TestWalkTablePassSumsRollouts: with hindsight targets the table pass
// trains each token of a walk once, on the sums of its terms over the
// walk's rollouts that hold it (walkTableTokens); its step is the step of
// the pass over every rollout's tokens one by one (tableTokensOf), to
// rounding, for REINFORCE and for PPO's clipped objective away from B at
// sampling (ratios clipped both ways), over two minibatches that split a
// walk, and with the tokens subsampled.
func TestWalkTablePassSumsRollouts(t *testing.T) {
	for _, k := range []Kind{Reinforce, PPO} {
		f := newTableFixtureWalks(t, k, 0, true)
		if f.ab.Walk() != 3 || len(f.ab.Targets) != 18 {
			t.Fatalf("walk %d, %d rollouts: want 6 walks of 3", f.ab.Walk(), len(f.ab.Targets))
		}
		if f.ab.Drawn() >= f.ab.Tokens() {
			t.Fatalf("walks drew %d tokens for rollouts of %d", f.ab.Drawn(), f.ab.Tokens())
		}
		b := append([]float64(nil), f.b0...)
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range b {
			b[i] += 0.5 * rng.NormFloat64()
		}
		mini := [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15, 16, 17}} // walk 2 in both
		div := make([]float64, len(f.ab.Targets))
		for i := range div {
			div[i] = float64(f.ab.Tokens()) * (1 + float64(i%4)) // per rollout, unequal
		}
		bt := f.tf.batchTokens(f.ab, f.states)
		ls := f.tf.tr.Learnables()
		run := func(summed bool) []float64 {
			var walks []walkWindows
			for _, rs := range mini {
				sums, long := f.tf.walkSumsOf(f.ab, f.states, rs, f.adv, div)
				walks = append(walks, walkWindows{sums: sums, long: long})
			}
			td := f.tf.newTableData(bt, mini, walks)
			if !summed {
				td = f.tf.newTableData(bt, mini, nil)
			} else if td.mini[0].sums == nil || len(td.mini[1].tokens) >= len(f.tf.tableTokensOf(f.ab, f.states, mini[1], 1, 2, nil).tokens) {
				t.Fatalf("%s: the walks' table pass does not sum their tokens", k)
			}
			copy(ls[len(ls)-1].Value().Data().([]float64), b)
			for mb := range mini {
				if err := f.tf.trainTable(td, mb, f.adv, div); err != nil {
					t.Fatal(err)
				}
			}
			after := slices.Clone(ls[len(ls)-1].Value().Data().([]float64))
			copy(ls[len(ls)-1].Value().Data().([]float64), f.b0)
			return after
		}
		got, want := run(true), run(false)
		moved := 0.0
		for i := range got {
			moved = max(moved, math.Abs(want[i]-b[i]))
			if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
				t.Fatalf("%s: B[%d] %v after the summed pass, %v after the rollouts' one by one", k, i, got[i], want[i])
			}
		}
		if moved < 1e-6 {
			t.Fatalf("%s: the pass moved B by %g: the test compares nothing", k, moved)
		}
	}
}
