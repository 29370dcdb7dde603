package trainers

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/ops"
	"github.com/rlvr-backtrack/backtrack/nn/stock"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

func constVec(g *G.ExprGraph, name string, x []float64) *G.Node {
	return G.NewVector(g, G.Float64, G.WithShape(len(x)), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(len(x)), tensor.WithBacking(append([]float64(nil), x...)))))
}

// TestStepRollouts: with step_tokens a step draws ceil(step_tokens / H)
// rollouts for the hitting time H its horizon comes from, capped at
// -rollouts, at least one per minibatch (ppo), in whole groups (grpo). A
// bigram PPO run at W=K=5, L=3 with step_tokens 40000 draws at each step
// the count of the exact hitting time before it: about 29 at H_0, and
// -rollouts once H is short.
func TestStepRollouts(t *testing.T) {
	ppo := Defaults(PPO, BigramModel)
	ppo.Rollouts, ppo.Minibatches, ppo.StepTokens = 128, 4, 10000
	grpo := Defaults(GRPO, BigramModel)
	grpo.Rollouts, grpo.GroupSize, grpo.StepTokens = 64, 8, 10000
	off := ppo
	off.StepTokens = 0
	for _, tc := range []struct {
		name string
		cfg  Config
		est  float64
		want int
	}{
		{"off", off, 5e4, 128}, {"far", ppo, 1000, 10}, {"ceil", ppo, 999, 11}, {"near", ppo, 50, 128},
		{"a rollout per minibatch", ppo, 1e6, 4}, {"below one", ppo, 0.5, 128},
		{"whole groups", grpo, 1000, 16}, {"one group", grpo, 1e6, 8}, {"grouped cap", grpo, 10, 64},
	} {
		if got := tc.cfg.stepRollouts(tc.est); got != tc.want {
			t.Errorf("%s: %d rollouts at H = %v, want %d", tc.name, got, tc.est, tc.want)
		}
	}

	g := graph(t, tasks.Config{W: 5, K: 5, L: 3})
	cfg := Defaults(PPO, BigramModel)
	cfg.StepTokens, cfg.LogEvery = 40000, 1
	rows := runRows(t, cfg, g, Setup{})
	capped := 0
	for i := 1; i < len(rows); i++ {
		drawn, want := rows[i].Rollouts-rows[i-1].Rollouts, cfg.stepRollouts(rows[i-1].HittingTime)
		if drawn != want {
			t.Fatalf("step %d drew %d rollouts at H = %v, want %d", i, drawn, rows[i-1].HittingTime, want)
		}
		if drawn == cfg.Rollouts {
			capped++
		}
	}
	if first := rows[1].Rollouts; first != int(math.Ceil(40000/rows[0].HittingTime)) || capped == 0 {
		t.Errorf("first step drew %d rollouts at H_0 = %v; %d of %d steps drew -rollouts", first, rows[0].HittingTime, capped, len(rows)-1)
	}
}

// TestPPOObjectiveKnownAnswer checks the clipped surrogate on four
// hand-computed items (eps = 0.2): ratio 2 with A+ = 1 is clipped to 1.2;
// ratio 2/3 with A- = -2 is clipped to 0.8; ratio 1 with A+ = 0.5 and
// ratio 1.1 with A- = -1 are not clipped. Objective 1.2 - 1.6 + 0.5 - 1.1
// = -1; gradient w.r.t. log pi: 0 where clipped, A r elsewhere.
func TestPPOObjectiveKnownAnswer(t *testing.T) {
	for name, surrogate := range map[string]func(logp, old, pos, neg *G.Node, eps float64) (*G.Node, error){
		"fused": ops.ClippedSurrogate, "stock": stock.ClippedSurrogate} {
		t.Run(name, func(t *testing.T) {
			g := G.NewGraph()
			logp := constVec(g, "logp", []float64{math.Log(0.5), math.Log(0.2), math.Log(0.9), math.Log(0.55)})
			old := constVec(g, "old", []float64{math.Log(0.25), math.Log(0.3), math.Log(0.9), math.Log(0.5)})
			pos := constVec(g, "pos", []float64{1, 0, 0.5, 0})
			neg := constVec(g, "neg", []float64{0, -2, 0, -1})
			obj, err := surrogate(logp, old, pos, neg, 0.2)
			if err != nil {
				t.Fatal(err)
			}
			grads, err := G.Grad(obj, logp)
			if err != nil {
				t.Fatal(err)
			}
			var objV, gradV G.Value
			G.Read(obj, &objV)
			G.Read(grads[0], &gradV)
			vm := G.NewTapeMachine(g)
			defer vm.Close()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			if got := objV.Data().(float64); math.Abs(got-(-1)) > 1e-12 {
				t.Errorf("objective: got %v, want -1", got)
			}
			want := []float64{0, 0, 0.5, -1.1}
			for i, got := range gradV.Data().([]float64) {
				if math.Abs(got-want[i]) > 1e-12 {
					t.Errorf("d objective / d log pi[%d]: got %v, want %v", i, got, want[i])
				}
			}
		})
	}
}

// TestAdvantagesKnownAnswer: two rollouts (hit in 2 transitions, missed a
// horizon of 3), beta 0.1: returns 0.8 0.9 | -0.3 -0.2 -0.1, mean 0.22,
// RMS of the centred values sqrt(0.2696); per-state means for states
// (0 1 | 0 2 1): 0.25, 0.4, -0.2.
func TestAdvantagesKnownAnswer(t *testing.T) {
	lens, hit := []int{2, 3}, []bool{true, false}
	states := []int32{0, 1, 0, 2, 1}
	std := math.Sqrt(0.2696)
	for _, tc := range []struct {
		baseline  string
		normalize bool
		want      []float64
	}{
		{"batch", true, []float64{0.58 / std, 0.68 / std, -0.52 / std, -0.42 / std, -0.32 / std}},
		{"batch", false, []float64{0.58, 0.68, -0.52, -0.42, -0.32}},
		{"state", false, []float64{0.55, 0.5, -0.55, 0, -0.5}},
		{"state-target", false, []float64{0, 0, 0, 0, 0}}, // each (state, target) seen once
	} {
		got := tokenAdvantages(lens, hit, states, 3, []int{1, 2}, 2, 0.1, tc.baseline, nil, tc.normalize, nil)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%s normalize=%v: token %d: got %v, want %v", tc.baseline, tc.normalize, i, got[i], tc.want[i])
			}
		}
	}
}

// TestPPOFirstEpochIsREINFORCE: at ratio 1 (pi_old = pi) the PPO
// surrogate's autodiff gradient through the bigram equals REINFORCE's.
func TestPPOFirstEpochIsREINFORCE(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 2, L: 2})
	logits := randomLogits(g, 11)
	m0, _ := graphBigram(g, logits, trainedRows(g, false))
	p := m0.NumParams()
	adv := make([]float64, p)
	pos, neg, w := make([]float64, p), make([]float64, p), make([]float64, p)
	for k := range adv {
		adv[k] = math.Sin(float64(3*k + 1))
		if adv[k] > 0 {
			pos[k] = adv[k]
		} else {
			neg[k] = adv[k]
		}
		w[k] = -adv[k]
	}
	old := make([]float64, p)
	probs := m0.Probs()
	for k, e := range m0.TrainableEntries() {
		old[k] = math.Log(probs[e])
	}
	grad := func(build func(m *nn.Bigram) (*G.Node, error)) []float64 {
		m, _ := graphBigram(g, logits, trainedRows(g, false))
		cost, err := build(m)
		if err != nil {
			t.Fatal(err)
		}
		c := &captureSolver{}
		st, err := nn.NewStep(cost, m.Learnables(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Run(); err != nil {
			t.Fatal(err)
		}
		return c.grad
	}
	ppo := grad(func(m *nn.Bigram) (*G.Node, error) {
		gr := m.Graph()
		obj, err := ops.ClippedSurrogate(m.LogProbs(), constVec(gr, "old", old), constVec(gr, "pos", pos), constVec(gr, "neg", neg), 0.2)
		if err != nil {
			return nil, err
		}
		return G.Neg(obj)
	})
	rf := grad(func(m *nn.Bigram) (*G.Node, error) {
		return reinforceLoss(m.LogProbs(), constVec(m.Graph(), "w", w))
	})
	for k := range ppo {
		if math.Abs(ppo[k]-rf[k]) > 1e-12*math.Max(1, math.Abs(rf[k])) {
			t.Fatalf("parameter %d: PPO gradient %v, REINFORCE %v", k, ppo[k], rf[k])
		}
	}
}

// TestSampledRLVRConverges: at W=K=5, L=3 with the paper's horizon (twice
// the hitting time) and beta = 3e-4, PPO from the pretrained bigram reaches

// TestSampledRLVRConverges: PPO and REINFORCE on the bigram at W=K=5, L=3,
// with their defaults (the fork baseline, Adam at the rates of
// docs/defaults.md), stop by their rule, within 1% of the limit 99.
func TestSampledRLVRConverges(t *testing.T) {
	g := graph(t, tasks.Config{W: 5, K: 5, L: 3})
	for _, k := range []Kind{PPO, Reinforce} {
		tr, err := New(Defaults(k, BigramModel), g, Setup{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		last, err := tr.Run(context.Background(), Hooks{})
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		if tr.Stop() != StopUntil || math.Abs(last.HittingTime-tr.Limit()) > 0.01*tr.Limit() {
			t.Errorf("%s: stopped by %s at %v, want within 1%% of %v", k, tr.Stop(), last.HittingTime, tr.Limit())
		}
		t.Logf("%s: hitting time %.4g (limit %v) after %d steps, %d rollouts, %d tokens, %v",
			k, last.HittingTime, tr.Limit(), tr.Steps(), last.Rollouts, last.Tokens, time.Since(start).Round(time.Millisecond))
	}
}

// BenchmarkPPOStep times PPO iterations of the bigram from the pretrained
// policy: at W=K=5, L=3 with the defaults (256 rollouts, 2 epochs of 2
// minibatches), and at the paper's size with fig6-ppo's 128 rollouts
// (about 6.4M tokens a step). The rate is tiny, so the policy (and the
// batch size) stays fixed; tokens/s counts sampled tokens per second of
// step (sampling, advantages and the updates).
func BenchmarkPPOStep(b *testing.B) {
	for _, c := range []struct {
		name     string
		graph    tasks.Config
		rollouts int
	}{{"W5K5L3", tasks.Config{W: 5, K: 5, L: 3}, 0}, {"W15K15L5", tasks.DefaultConfig(), 128}} {
		b.Run(c.name, func(b *testing.B) {
			g := graph(b, c.graph)
			cfg := Defaults(PPO, BigramModel)
			cfg.Optim.LR = 1e-9 // keep the policy (and the batch size) fixed
			if c.rollouts > 0 {
				cfg.Rollouts = c.rollouts
			}
			tr, err := New(cfg, g, Setup{})
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			tokens := 0
			for b.Loop() {
				before := tr.smp.tokens
				if err := tr.Step(context.Background()); err != nil {
					b.Fatal(err)
				}
				tokens += tr.smp.tokens - before
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens), "ns/token")
		})
	}
}

// TestGAEKnownAnswer: lambda = 1 and a critic that has seen nothing (so
// it values each (state, target) at the batch's mean return there). Beta
// 0.1; rollouts 0 and 2 hit target 1 in two transitions (returns 0.8, 0.9
// at states 0, 1 and 0, 2), rollout 1 misses target 2 after three (returns
// -0.3, -0.2, -0.1 at states 0, 2, 1) and is cut in state 2, so it
// bootstraps from V(2, t2) = -0.2. The TD residuals telescope: each
// advantage is the return to go (plus the bootstrap) minus V(s_t, x):
// 0, 0 | -0.2, -0.2, -0.2 | 0, 0. The critic then holds the batch means.
// Valued by the batch's own means, every (state, target) of this batch is
// seen with one return only: value loss 0, explained variance 1. The
// second batch's one token returns 0.9 where V = 0.8: loss 0.01, and its
// returns do not vary (explained variance 0).
func TestGAEKnownAnswer(t *testing.T) {
	lens, hit := []int{2, 3, 2}, []bool{true, false, true}
	states := []int32{0, 1, 0, 2, 1, 0, 2}
	last := []int32{3, 2, 3}
	targets := []int{1, 2, 1}
	c := newCritic(4, 2, 0.5, 1)
	var st BatchStats
	got := c.advantages(lens, hit, states, last, targets, 0.1, &st)
	if st.ValueLoss > 1e-24 || math.Abs(st.ExplainedVariance-1) > 1e-12 {
		t.Errorf("value loss %v, explained variance %v; want 0, 1", st.ValueLoss, st.ExplainedVariance)
	}
	want := []float64{0, 0, -0.2, -0.2, -0.2, 0, 0}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("token %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if v := c.v[0]; math.Abs(v-0.8) > 1e-12 { // V(state 0, target 1)
		t.Errorf("critic V(0, t1) = %v, want 0.8", v)
	}
	// A second batch moves the critic halfway (rate 0.5) toward its means.
	c.advantages([]int{1}, []bool{true}, []int32{0}, []int32{3}, []int{1}, 0.1, &st)
	if v := c.v[0]; math.Abs(v-0.85) > 1e-12 { // return 0.9: 0.8 + 0.5 (0.9 - 0.8)
		t.Errorf("critic V(0, t1) after a second batch = %v, want 0.85", v)
	}
	if math.Abs(st.ValueLoss-0.01) > 1e-12 || st.ExplainedVariance != 0 {
		t.Errorf("second batch: value loss %v, explained variance %v; want 0.01, 0", st.ValueLoss, st.ExplainedVariance)
	}
}

// forkReturns is the fork baseline's bootstrap (targetAdvantages) as its
// own pass over returns to go g: the reference the fused passes are
// checked against. The means are taken per target, the bootstraps per
// rollout.
func forkReturns(g []float64, lens []int, states []int32, fork []bool, targets []int, w int) {
	starts, _ := rolloutStarts(lens)
	byTarget := rolloutsByTarget(targets, w)
	vf := make([]float64, w) // NaN: no fork-incoming token
	kernels.ParallelFor(len(byTarget), 1, func(lo, hi int) {
		for x := lo; x < hi; x++ {
			sum, count := 0.0, 0.0
			for _, r := range byTarget[x] {
				for t := starts[r]; t < starts[r]+lens[r]; t++ {
					if fork[states[t]] {
						sum += g[t]
						count++
					}
				}
			}
			vf[x] = sum / count
		}
	})
	kernels.ParallelFor(len(lens), 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			v := vf[targets[r]-1]
			if math.IsNaN(v) {
				continue
			}
			next := math.NaN() // return at the next fork-incoming token
			for t := starts[r] + lens[r] - 1; t >= starts[r]; t-- {
				if fork[states[t]] {
					next = g[t]
					continue
				}
				if !math.IsNaN(next) {
					g[t] += v - next
				}
			}
		}
	})
}

// advantagesBySteps is tokenAdvantages for "state-target" (fork nil) and
// "fork" computed step by step: the returns to go, forkReturns, the
// (state, target) means subtracted target by target, then scale.
func advantagesBySteps(lens []int, hit []bool, states []int32, nStates int, targets []int, w int, beta float64, fork []bool, normalize bool) []float64 {
	adv := returnsToGo(lens, hit, beta)
	if fork != nil {
		forkReturns(adv, lens, states, fork, targets, w)
	}
	starts, _ := rolloutStarts(lens)
	for _, rs := range rolloutsByTarget(targets, w) {
		sum, count := make([]float64, nStates), make([]float64, nStates)
		for _, r := range rs {
			for k := starts[r]; k < starts[r]+lens[r]; k++ {
				sum[states[k]] += adv[k]
				count[states[k]]++
			}
		}
		for s, c := range count {
			if c > 0 {
				sum[s] /= c
			}
		}
		for _, r := range rs {
			for k := starts[r]; k < starts[r]+lens[r]; k++ {
				adv[k] -= sum[states[k]]
			}
		}
	}
	if normalize {
		scale(adv)
	}
	return adv
}

// TestTargetAdvantagesMatchSteps: the fused passes of targetAdvantages
// give the steps' advantages bit for bit, on random batches of over three
// token blocks (rollouts crossing the blocks' edges, one of length 0, one
// target that never reaches a fork-incoming state), with and without the
// fork bootstrap and normalisation, into reused memory.
func TestTargetAdvantagesMatchSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	const nStates, w = 40, 4
	fork := make([]bool, nStates)
	for s := 0; s < nStates; s += 7 {
		fork[s] = true
	}
	var lens []int
	var hit []bool
	var targets []int
	var states []int32
	for total := 0; total < 3*tokenBlock+1000; {
		l := 1 + rng.IntN(3000)
		if len(lens) == 5 {
			l = 0
		}
		x := 1 + rng.IntN(w)
		lens, hit, targets = append(lens, l), append(hit, rng.IntN(3) == 0), append(targets, x)
		for range l {
			s := int32(rng.IntN(nStates))
			for x == w && fork[s] { // target w's rollouts never meet the fork
				s = int32(rng.IntN(nStates))
			}
			states = append(states, s)
		}
		total += l
	}
	// The fork-incoming tokens of each rollout, as a step lists them
	// (eval.Batch.StatesMarkedInto).
	starts, _ := rolloutStarts(lens)
	at := make([][]int32, len(lens))
	for r, l := range lens {
		for t, s := range states[starts[r] : starts[r]+l] {
			if fork[s] {
				at[r] = append(at[r], int32(t))
			}
		}
	}
	var dst []float64
	for _, tc := range []struct {
		name      string
		fork      []bool
		normalize bool
	}{{"state-target", nil, false}, {"state-target", nil, true}, {"fork", fork, false}, {"fork", fork, true}} {
		want := advantagesBySteps(lens, hit, states, nStates, targets, w, 0.001, tc.fork, tc.normalize)
		dst = tokenAdvantages(lens, hit, states, nStates, targets, w, 0.001, tc.name, fork, tc.normalize, dst)
		if len(dst) != len(want) {
			t.Fatalf("%s normalize=%v: %d advantages, want %d", tc.name, tc.normalize, len(dst), len(want))
		}
		for k := range want {
			if math.Float64bits(dst[k]) != math.Float64bits(want[k]) {
				t.Fatalf("%s normalize=%v: token %d: %v, want %v (bit for bit)", tc.name, tc.normalize, k, dst[k], want[k])
			}
		}
		// A step's path: the listed fork-incoming tokens, and the scale
		// applied where each advantage is read (advantages.at).
		v, scale := tokenAdvantagesScale(lens, hit, states, nStates, targets, w, 0.001, tc.name, fork, func(r int) []int32 { return at[r] }, tc.normalize, nil)
		a := &advantages{v: v, scale: scale}
		for k := range want {
			if got := a.at(k); math.Float64bits(got) != math.Float64bits(want[k]) {
				t.Fatalf("%s normalize=%v, listed fork tokens, scale where read: token %d: %v, want %v (bit for bit)", tc.name, tc.normalize, k, got, want[k])
			}
		}
	}
}

// TestForkReturnsKnownAnswer: beta 0.1, state 2 is the fork-incoming state.
// Target 1: a hit of length 4 over states 0 1 2 3 (returns 0.6 0.7 0.8 0.9)
// and a miss of length 3 over 0 2 1 (-0.3 -0.2 -0.1); target 2: a hit of
// length 2 over 2 1 (0.8 0.9). V_F(1) = (0.8 - 0.2) / 2 = 0.3, so a token
// before a fork-incoming token gets its reward up to it plus 0.3 (first
// rollout: -0.2 + 0.3, -0.1 + 0.3; second: -0.1 + 0.3); fork-incoming
// tokens and tokens after a rollout's last one keep their returns, and
// target 2's fork value does not enter target 1's.
func TestForkReturnsKnownAnswer(t *testing.T) {
	lens, hit := []int{4, 3, 2}, []bool{true, false, true}
	states := []int32{0, 1, 2, 3, 0, 2, 1, 2, 1}
	fork := []bool{false, false, true, false}
	g := returnsToGo(lens, hit, 0.1)
	forkReturns(g, lens, states, fork, []int{1, 1, 2}, 2)
	want := []float64{0.1, 0.2, 0.8, 0.9, 0.2, -0.2, -0.1, 0.8, 0.9}
	for i := range want {
		if math.Abs(g[i]-want[i]) > 1e-12 {
			t.Errorf("token %d: got %v, want %v", i, g[i], want[i])
		}
	}
}

// TestNormalizeDropsRoundingNoise: advantages that are only rounding noise
// (the baseline cancelled identical returns) stay at 0 after
// normalisation instead of being blown up to unit scale; real ones get
// unit root mean square.
func TestNormalizeDropsRoundingNoise(t *testing.T) {
	noise := []float64{1e-17, -2e-17, 3e-18, 0}
	normalize(noise)
	for i, a := range noise {
		if a != 0 {
			t.Errorf("noise advantage %d normalised to %v, want 0", i, a)
		}
	}
	real := []float64{0.5, -0.25, 0.125, -0.375}
	normalize(real)
	sq := 0.0
	for _, a := range real {
		sq += a * a
	}
	if math.Abs(sq/4-1) > 1e-12 {
		t.Errorf("mean square %v after normalisation, want 1", sq/4)
	}
}

// TestSumAdvantagesSplitsSigns checks sumAdvantages's sign split against
// the sums it stands for, acc[3k] += max(a, 0) and acc[3k+1] += min(a, 0),
// bit for bit, over advantages that include +0, -0 and NaN, and skips
// tokens whose entry is not a parameter.
func TestSumAdvantagesSplitsSigns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const params, entries, n = 5, 8, 4000
	paramOf := []int32{0, -1, 1, 2, -1, 3, 4, 4}
	ents, adv := make([]int32, n), make([]float64, n)
	for i := range ents {
		ents[i] = int32(rng.IntN(entries))
		switch rng.IntN(8) {
		case 0:
			adv[i] = 0
		case 1:
			adv[i] = math.Copysign(0, -1)
		default:
			adv[i] = rng.NormFloat64()
		}
	}
	check := func(adv []float64, scale, d float64) {
		t.Helper()
		got, want := make([]float64, 3*params), make([]float64, 3*params)
		sumAdvantages(got, paramOf, ents, adv, scale, d)
		for i, e := range ents {
			k := paramOf[e]
			if k < 0 {
				continue
			}
			a := adv[i] * scale / d
			want[3*k] += max(a, 0)
			want[3*k+1] += min(a, 0)
			want[3*k+2]++
		}
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
				t.Fatalf("acc[%d] = %v (bits %x), want %v (bits %x)", i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
			}
		}
	}
	check(adv, 1.7, 3)
	check(adv, 0.25, 1)
	for _, k := range []int{0, 2, 4} { // only zeros of both signs at parameter k's entries: +0 in both sums, as max and min give
		zeros := make([]float64, n)
		for i, e := range ents {
			if paramOf[e] == int32(k) && i%2 == 1 {
				zeros[i] = math.Copysign(0, -1)
			}
		}
		check(zeros, 1, 2)
	}
	adv[17], adv[18] = math.NaN(), math.Inf(-1)
	check(adv, 1, 1)
}
