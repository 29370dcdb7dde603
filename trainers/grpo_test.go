package trainers

import (
	"context"
	"math"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestGroupAdvantagesKnownAnswer: two groups of three rollouts with
// rewards (1, 0, 0.5) and (0.2, 0.2, 0.2). The first group's mean is 0.5,
// its unbiased standard deviation sqrt((0.25 + 0.25 + 0) / 2) = 0.5, its
// leave-one-out means 0.25, 0.75, 0.5; the second group has no spread, so
// every trainer gives it 0 and counts it flat.
func TestGroupAdvantagesKnownAnswer(t *testing.T) {
	r := []float64{1, 0, 0.5, 0.2, 0.2, 0.2}
	for _, tc := range []struct {
		k    Kind
		want []float64
	}{
		{GRPO, []float64{0.5 / 0.5001, -0.5 / 0.5001, 0, 0, 0, 0}},
		{RLOO, []float64{0.75, -0.75, 0, 0, 0, 0}},
		{DrGRPO, []float64{0.5, -0.5, 0, 0, 0, 0}},
	} {
		got, flat := groupAdvantages(tc.k, r, 3)
		if flat != 1 {
			t.Errorf("%s: got %d flat groups, want 1", tc.k, flat)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%s: rollout %d: got %v, want %v", tc.k, i, got[i], tc.want[i])
			}
		}
	}
}

// TestSequenceRewards: a hit in 4 transitions and a miss cut at 10, beta
// 0.01: 1 - 0.04 and -0.1.
func TestSequenceRewards(t *testing.T) {
	got := sequenceRewards([]int{4, 10}, []bool{true, false}, 0.01)
	for i, want := range []float64{0.96, -0.1} {
		if math.Abs(got[i]-want) > 1e-15 {
			t.Errorf("rollout %d: got %v, want %v", i, got[i], want)
		}
	}
}

// TestLossDivisors: rollouts of lengths 2, 3, 1, 4 dealt into 2
// minibatches: rollouts 0 and 2 (3 tokens) and 1 and 3 (7 tokens), two
// rollouts each; horizon 10.
func TestLossDivisors(t *testing.T) {
	lens := []int{2, 3, 1, 4}
	for _, tc := range []struct {
		agg  string
		want []float64
	}{
		{"token", []float64{3, 3, 7, 7, 7, 3, 7, 7, 7, 7}},
		{"", []float64{3, 3, 7, 7, 7, 3, 7, 7, 7, 7}},
		{"sequence", []float64{4, 4, 6, 6, 6, 2, 8, 8, 8, 8}},
		{"constant", []float64{20, 20, 20, 20, 20, 20, 20, 20, 20, 20}},
	} {
		var d lossDivs
		d.lossDivisors(tc.agg, lens, 2, 10)
		got := perToken(d.rollout, d.lens)
		if len(got) != len(tc.want) {
			t.Fatalf("%q: got %d lossDivs, want %d", tc.agg, len(got), len(tc.want))
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: token %d: got %v, want %v", tc.agg, i, got[i], tc.want[i])
			}
		}
	}
}

// TestGroupTargets: every group shares one target in 1..W, the draw is
// seeded, and over many groups every target appears.
func TestGroupTargets(t *testing.T) {
	a, b := groupTargets(400, 4, 5, 7), groupTargets(400, 4, 5, 7)
	seen := map[int]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("rollout %d: target %d, then %d with the same seed", i, a[i], b[i])
		}
		if a[i] < 1 || a[i] > 5 || a[i] != a[i-i%4] {
			t.Fatalf("rollout %d: target %d, its group's first %d", i, a[i], a[i-i%4])
		}
		seen[a[i]] = true
	}
	if len(seen) != 5 {
		t.Errorf("got targets %v, want all of 1..5", seen)
	}
}

// TestK3PenaltyKnownAnswer: p = log(0.5, 0.25), q = log(0.25, 0.5),
// w = (1, 2): k3 = (0.5 + ln 2 - 1) + 2 (2 - ln 2 - 1) = 1.5 - ln 2, and
// its gradient w.r.t. p is w (1 - exp(q - p)) = (0.5, -2).
func TestK3PenaltyKnownAnswer(t *testing.T) {
	g := G.NewGraph()
	logp := constVec(g, "p", []float64{math.Log(0.5), math.Log(0.25)})
	kl, err := k3Penalty(logp, constVec(g, "q", []float64{math.Log(0.25), math.Log(0.5)}), constVec(g, "w", []float64{1, 2}))
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(kl, logp)
	if err != nil {
		t.Fatal(err)
	}
	var v, gv G.Value
	G.Read(kl, &v)
	G.Read(grads[0], &gv)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got, want := v.Data().(float64), 1.5-math.Ln2; math.Abs(got-want) > 1e-12 {
		t.Errorf("k3: got %v, want %v", got, want)
	}
	for i, want := range []float64{0.5, -2} {
		if got := gv.Data().([]float64)[i]; math.Abs(got-want) > 1e-12 {
			t.Errorf("d k3 / d p[%d]: got %v, want %v", i, got, want)
		}
	}
}

// groupConfig is a one-epoch, one-minibatch sampled config with plain SGD,
// whose step is linear in the advantages.
func groupConfig(k Kind, rollouts int) Config {
	cfg := Defaults(k, BigramModel)
	cfg.Rollouts, cfg.Epochs, cfg.Minibatches, cfg.Steps = rollouts, 1, 1, 1
	cfg.Optim = solvers.Config{Name: "sgd", LR: 0.5}
	cfg.NormalizeAdvantages = false
	return cfg
}

// TestGroupOfTheBatchIsREINFORCE: with one group the size of the batch,
// one epoch of one minibatch and token-level aggregation, a group-relative
// step is REINFORCE's step (the clipped objective at ratio 1 has its
// gradient) with every token of rollout i given the sequence advantage
// r_i - mean r (dr-grpo), (G/(G-1)) (r_i - mean r) (rloo, the leave-one-out
// mean), or (r_i - mean r)/(std + 1e-4) (grpo), and each term divided by
// the batch's token count. The REINFORCE side is built here by hand from
// the same rollouts. (This tool's reinforce trainer uses returns to go and
// a per-token baseline, which the group trainers do not: it is the
// estimator, not the advantage, that must agree.)
func TestGroupOfTheBatchIsREINFORCE(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 2, L: 2})
	const n = 16
	for _, k := range []Kind{DrGRPO, RLOO, GRPO} {
		cfg := groupConfig(k, n)
		cfg.GroupSize, cfg.LossAgg = n, "token"
		gt, err := New(cfg, g, Setup{})
		if err != nil {
			t.Fatal(err)
		}
		rcfg := groupConfig(Reinforce, n)
		rcfg.Beta = cfg.Beta
		rt, err := New(rcfg, g, Setup{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		est, err := rt.sampled().estimate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		horizon := int(math.Ceil(rt.cfg.HorizonFactor * est))
		b, err := rt.sampled().rollouts(ctx, n, horizon, rt.stepSeed(), groupTargets(n, n, g.W(), rt.stepSeed()))
		if err != nil {
			t.Fatal(err)
		}
		lens := make([]int, n)
		for i := range lens {
			lens[i] = b.Len(i)
		}
		r := sequenceRewards(lens, b.Hit, cfg.Beta)
		mean, sq := 0.0, 0.0
		for _, x := range r {
			mean += x / n
		}
		for _, x := range r {
			sq += (x - mean) * (x - mean)
		}
		scale := map[Kind]float64{DrGRPO: 1, RLOO: n / (n - 1.0), GRPO: 1 / (math.Sqrt(sq/(n-1)) + 1e-4)}[k]
		adv := make([]float64, n)
		for i := range adv {
			adv[i] = scale * (r[i] - mean)
		}
		div := &lossDivs{lens: lens}
		for range lens {
			div.rollout = append(div.rollout, float64(b.Tokens()))
		}
		states, _ := b.States(g)
		before := append([]float64(nil), modelOf(rt).Logits()...)
		if _, err := rt.sampled().update(b, states, &advantages{v: perToken(adv, lens), scale: 1}, div); err != nil {
			t.Fatal(err)
		}
		if err := gt.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if gt.smp.tokens != b.Tokens() {
			t.Fatalf("%s: sampled %d tokens, the hand-made batch %d: not the same rollouts", k, gt.smp.tokens, b.Tokens())
		}
		want, got := modelOf(rt).Logits(), modelOf(gt).Logits()
		moved := 0.0
		for i := range got {
			moved = math.Max(moved, math.Abs(want[i]-before[i]))
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("%s: logit %d: got %v, REINFORCE %v", k, i, got[i], want[i])
			}
		}
		if moved == 0 {
			t.Errorf("%s: the step moved no logit", k)
		}
		gt.Close()
		rt.Close()
	}
}

// TestGroupTrainersOnTheTransformer: each group-relative trainer, with the
// k3 KL term, takes steps on a tiny transformer: groups share targets, the
// flat-group share is a fraction, tokens are trained, and the hitting time
// stays finite.
func TestGroupTrainersOnTheTransformer(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 2, L: 2})
	for _, k := range []Kind{GRPO, RLOO, DrGRPO} {
		cfg := Defaults(k, TransformerModel)
		cfg.Steps, cfg.Rollouts, cfg.GroupSize, cfg.KLCoef, cfg.LogEvery = 3, 8, 4, 0.1, 1
		s := Setup{Model: TransformerModel, Transformer: DefaultTransformerOptions(k)}
		s.Transformer.EvalRollouts = 50
		tr, err := New(cfg, g, s)
		if err != nil {
			t.Fatal(err)
		}
		last, err := tr.Run(context.Background(), Hooks{})
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		if tr.Steps() != 3 || last.TrainedTokens == 0 || !(last.Batch.FlatGroups >= 0 && last.Batch.FlatGroups <= 1) || math.IsNaN(last.HittingTime) {
			t.Errorf("%s: %d steps, %d trained tokens, flat groups %v, hitting time %v", k, tr.Steps(), last.TrainedTokens, last.Batch.FlatGroups, last.HittingTime)
		}
	}
}

// TestGroupConfig: the group-relative trainers default to the group
// baseline, groups of 8 and their aggregation, and refuse values they do
// not take, naming the field; their fields do not apply to the others.
func TestGroupConfig(t *testing.T) {
	for _, k := range []Kind{GRPO, RLOO, DrGRPO} {
		for _, m := range []Model{BigramModel, TransformerModel} {
			r := Defaults(k, m)
			want := map[Kind]string{GRPO: "token", RLOO: "token", DrGRPO: "constant"}[k]
			if r.Baseline != "group" || r.GroupSize != 8 || r.LossAgg != want {
				t.Errorf("%s on %s: baseline %q, group_size %d, loss_agg %q; want group, 8, %s", k, m, r.Baseline, r.GroupSize, r.LossAgg, want)
			}
			if err := r.Validate(m); err != nil {
				t.Errorf("%s on %s: %v", k, m, err)
			}
		}
	}
	for _, key := range []string{"train.group_size", "train.loss_agg", "train.entropy_coef"} {
		if Applies(key, Choice{Model: BigramModel, Trainer: GRPO}) == (key == "train.entropy_coef") {
			t.Errorf("%s applies to grpo: %v", key, key != "train.entropy_coef")
		}
		if key != "train.entropy_coef" && Applies(key, Choice{Model: BigramModel, Trainer: PPO}) {
			t.Errorf("%s applies to ppo", key)
		}
	}
	for _, tc := range []struct {
		trainer Kind
		mut     func(*Config)
		field   string
	}{
		{GRPO, func(c *Config) { c.GroupSize = 1 }, "group_size"},
		{GRPO, func(c *Config) { c.GroupSize = 7 }, "group_size"}, // does not divide 256
		{RLOO, func(c *Config) { c.LossAgg = "mean" }, "loss_agg"},
		{DrGRPO, func(c *Config) { c.Baseline = "state" }, "baseline"},
		{Reinforce, func(c *Config) { c.Baseline = "group" }, "baseline"},
	} {
		c := Defaults(tc.trainer, BigramModel)
		tc.mut(&c)
		if err := c.Validate(BigramModel); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an error naming %s", tc.trainer, err, tc.field)
		}
	}
}

// TestMaxTokens: a sampled run stops at the first step whose total reaches
// the token budget, with stop reason tokens; the budget does not apply to
// an exact trainer.
func TestMaxTokens(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 2, L: 2})
	cfg := Defaults(RLOO, BigramModel)
	cfg.Rollouts, cfg.Until, cfg.MaxTokens = 16, 0, 5000
	tr, last := run(t, cfg, g, nil, nil)
	perStep := float64(last.Tokens) / float64(tr.Steps())
	if tr.Stop() != StopTokens || last.Tokens < 5000 || float64(last.Tokens) >= 5000+3*perStep {
		t.Errorf("stopped (%s) after %d steps at %d tokens, want just past 5000", tr.Stop(), tr.Steps(), last.Tokens)
	}
	if Applies("train.max_tokens", Choice{Model: BigramModel, Trainer: RLVRExact}) {
		t.Error("max_tokens applies to rlvr-exact")
	}
}

// TestStdScalingDropsBeta: once every rollout of a group hits, its rewards
// 1 - beta |y| differ by the length term alone, and GRPO's advantage is
// -(|y| - mean)/(std(|y|) + 1e-4/beta): beta drops out (but for the
// 1e-4/beta against the lengths' spread), so the length differences get
// advantages of order 1 however small beta is, where Dr. GRPO's (and
// RLOO's) advantages scale with beta. Measured on the converged
// backtracking policy of W=K=5, L=3 (every rollout hits): 32 groups of 8.
func TestStdScalingDropsBeta(t *testing.T) {
	g := graph(t, tasks.Config{W: 5, K: 5, L: 3})
	sp, err := eval.NewSampler(g, eval.PolicyRLVRLimit(g))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sp.RolloutsTo(context.Background(), groupTargets(256, 8, g.W(), 1), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	lens := make([]int, 256)
	for i := range lens {
		lens[i] = b.Len(i)
		if !b.Hit[i] {
			t.Fatalf("rollout %d missed", i)
		}
	}
	meanAbs := func(k Kind, beta float64) float64 {
		a, _ := groupAdvantages(k, sequenceRewards(lens, b.Hit, beta), 8)
		s := 0.0
		for _, x := range a {
			s += math.Abs(x) / float64(len(a))
		}
		return s
	}
	grpo, grpoSmall := meanAbs(GRPO, 3e-4), meanAbs(GRPO, 3e-6)
	dr, drSmall := meanAbs(DrGRPO, 3e-4), meanAbs(DrGRPO, 3e-6)
	// The closed form, group by group.
	a, _ := groupAdvantages(GRPO, sequenceRewards(lens, b.Hit, 3e-4), 8)
	stdLen := 0.0 // the groups' mean standard deviation of lengths
	for s := 0; s < 256; s += 8 {
		m, sq := 0.0, 0.0
		for _, l := range lens[s : s+8] {
			m += float64(l) / 8
		}
		for _, l := range lens[s : s+8] {
			sq += (float64(l) - m) * (float64(l) - m) / 7
		}
		stdLen += math.Sqrt(sq) / 32
		for j, l := range lens[s : s+8] {
			if want := -(float64(l) - m) / (math.Sqrt(sq) + 1e-4/3e-4); math.Abs(a[s+j]-want) > 1e-9 {
				t.Fatalf("rollout %d: GRPO advantage %v, closed form %v", s+j, a[s+j], want)
			}
		}
	}
	if math.Abs(drSmall*100/dr-1) > 1e-9 || grpo < 0.5 || grpoSmall > grpo {
		t.Errorf("mean |A|: grpo %v at beta 3e-4, %v at 3e-6; dr-grpo %v, %v", grpo, grpoSmall, dr, drSmall)
	}
	t.Logf("all-hit groups of 8 at the W=K=5, L=3 limit (lengths' std %.1f within a group): mean |A| grpo %.4f (beta 3e-4), %.4f (3e-5), %.4f (3e-6); dr-grpo %.3g, %.3g (3e-6)",
		stdLen, grpo, meanAbs(GRPO, 3e-5), grpoSmall, dr, drSmall)
}

// TestK3KeepsThePolicyNearTheStart: on the bigram, a large -kl-coef keeps
// GRPO's logits nearer the starting policy's than no KL term does, over
// the same sampled batches.
func TestK3KeepsThePolicyNearTheStart(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	moved := func(kl float64) float64 {
		cfg := Defaults(GRPO, BigramModel)
		cfg.Steps, cfg.Until, cfg.Rollouts, cfg.KLCoef = 20, 0, 64, kl
		tr, _ := run(t, cfg, g, nil, nil)
		d := 0.0
		for _, x := range modelOf(tr).Logits() { // the start's logits are all 0
			d += math.Abs(x)
		}
		return d
	}
	free, held := moved(0), moved(50)
	t.Logf("sum of abs. logits after 20 steps: %.4g without KL, %.4g with kl_coef 50", free, held)
	if !(held < 0.5*free) || held == 0 {
		t.Errorf("logits moved %v with kl_coef 50, %v without", held, free)
	}
}
