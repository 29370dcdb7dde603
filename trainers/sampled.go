package trainers

import (
	"context"
	"fmt"
	"math"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// vec is a constant (P) input of the loss and its value, set with G.Let.
type vec struct {
	node *G.Node
	val  *tensor.Dense
}

func newVec(g *G.ExprGraph, p int, name string) vec {
	return vec{G.NewVector(g, G.Float64, G.WithShape(p), G.WithName(name)),
		tensor.New(tensor.WithShape(p), tensor.Of(tensor.Float64))}
}

func (v vec) data() []float64 { return v.val.Data().([]float64) }

// sampled is what a reinforce or ppo trainer keeps across steps, whatever
// the model: counters over the run, the latest batch's statistics, the
// critic (baseline "gae") and the fork-incoming states (baseline "fork").
type sampled struct {
	tokens, rollouts int // sampled so far
	trained          int // trained so far (ratioStats.trained)
	batch            BatchStats
	critic           *critic
	fork             []bool

	// Per-token memory reused from step to step (a paper-size batch holds
	// millions of tokens).
	states, last []int32
	forkAt       eval.Marked // the fork-incoming tokens (fork baseline)
	values       []float64   // h_x(s) of the step's chain (baseline exact: exactValues)
	adv          advantages  // the latest batch's (the token baselines' memory)
	div          lossDivs

	// entropy computes batch.Entropy of the latest batch, and ratios its
	// ApproxKL and ClipFrac (ratioStats.later), when a row or a checkpoint
	// needs them (resolveBatch), not every step: the entropy is a pass
	// over the batch's tokens, 4% of a paper-size PPO step of the bigram
	// and as much for the transformer, and the transformer's ratio replay
	// a sampler's pass over up to its trained-token budget, 5% of a step
	// near the limit. Both read the batch's buffers, and the ratios the
	// parameters after the update: a learner that samples into the
	// buffers outside a step (the transformer's periodic estimate)
	// resolves them first, and the next step's batch drops them
	// unresolved (its row was written, or not, before that step).
	entropy func() float64
	ratios  func() (ratioStats, error)
}

// resolveBatch sets the latest batch's entropy and ratio statistics, if
// they are not set yet, in the statistics and in row (nil: none).
func (s *sampled) resolveBatch(row *Row) error {
	if s == nil {
		return nil
	}
	if s.entropy != nil {
		s.batch.Entropy, s.entropy = s.entropy(), nil
	}
	if s.ratios != nil {
		rs, err := s.ratios()
		s.ratios = nil
		if err != nil {
			return err
		}
		rs.recordRatios(&s.batch)
	}
	if row != nil {
		row.Batch.Entropy, row.Batch.ApproxKL, row.Batch.ClipFrac = s.batch.Entropy, s.batch.ApproxKL, s.batch.ClipFrac
	}
	return nil
}

func newSampled(g *tasks.Graph, cfg Config) *sampled {
	s := &sampled{}
	switch cfg.Baseline {
	case "gae":
		s.critic = newCritic(g.NumStates(), g.W(), cfg.CriticRate, cfg.Lambda)
	case "fork":
		s.fork = forkStates(g)
	}
	return s
}

// BatchStats describe the latest batch of a sampled trainer.
type BatchStats struct {
	Horizon     int     `json:"horizon"`
	SuccessRate float64 `json:"success_rate"`
	MeanLength  float64 `json:"mean_length"`
	ApproxKL    float64 `json:"approx_kl"` // mean over tokens of (r - 1) - log r after the updates
	ClipFrac    float64 `json:"clip_frac"` // share of tokens whose ratio left [1-clip, 1+clip]
	// FlatGroups (group-relative trainers) is the share of groups whose
	// rewards are all equal: their advantages are 0.
	FlatGroups float64 `json:"flat_groups"`
	// Entropy is the policy's entropy (nats) at the batch's tokens in
	// trained rows, averaged over them: the mean over visited states.
	Entropy float64 `json:"entropy"`
	// The rollouts' rewards 1{hit} - beta |y| (std over the batch, not
	// Bessel-corrected), their lengths, and the share cut by the horizon.
	RewardMean float64 `json:"reward_mean"`
	RewardStd  float64 `json:"reward_std"`
	RewardMin  float64 `json:"reward_min"`
	RewardMax  float64 `json:"reward_max"`
	LengthMin  int     `json:"length_min"`
	LengthMax  int     `json:"length_max"`
	Truncated  float64 `json:"truncated"`
	// GradNorm is the L2 norm of the gradient of the step's last optimiser
	// update (the transformer's: its windows' and its table's together).
	GradNorm float64 `json:"grad_norm"`
	// ValueLoss and ExplainedVariance (baseline gae) compare the critic
	// before its fit with the batch's returns to go: the mean of
	// (V - G)^2 and 1 - Var(G - V)/Var(G) (0 when the returns do not vary).
	ValueLoss         float64 `json:"value_loss"`
	ExplainedVariance float64 `json:"explained_variance"`
	// Sampled and Trained are the batch's tokens and the tokens its
	// update trained (Row.Tokens and Row.TrainedTokens are the run's).
	Sampled int `json:"sampled"`
	Trained int `json:"trained"`
}

// sampledStep is one iteration of sampled RLVR: a batch of rollouts of the
// current policy and its advantages (sampledBatch), then the learner's
// REINFORCE update or the clipped objective's epochs.
func (t *Trainer) sampledStep(ctx context.Context) error {
	b, states, adv, div, err := t.sampledBatch(ctx)
	if err != nil {
		return err
	}
	r := region("policy update")
	rs, err := t.sampled().update(b, states, adv, div)
	r.End()
	if err != nil {
		return err
	}
	rs.record(&t.smp.batch)
	t.smp.trained += rs.trained
	t.smp.ratios = rs.later
	return nil
}

// sampledBatch samples a batch of rollouts of the current policy with
// horizon HorizonFactor x its current hitting time (exact, or the latest
// Monte Carlo estimate), records it, and returns it with each token's
// state, its advantage from the configured baseline (or the
// group-relative advantages, grpo.go) and its loss divisor.
func (t *Trainer) sampledBatch(ctx context.Context) (*eval.AgentBatch, []int32, *advantages, *lossDivs, error) {
	s, cfg := t.smp, t.cfg
	s.entropy, s.ratios = nil, nil // the previous batch's: no row or checkpoint wants them now
	r := region("sampling")
	b, horizon, err := t.drawBatch(ctx)
	r.End()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	defer region("advantages and returns").End()
	lens := s.record(&b.Batch, horizon, cfg.Beta)
	if s.fork != nil {
		s.states, s.last = b.StatesMarkedInto(t.g, s.states, s.last, s.fork, &s.forkAt)
	} else {
		s.states, s.last = b.StatesInto(t.g, s.states, s.last)
	}
	states, last := s.states, s.last
	_, m := cfg.Trainer.epochs(cfg)
	agg := cfg.LossAgg // the group-relative trainers' choice; the others' is per token
	if !cfg.Trainer.Grouped() {
		agg = "token"
	}
	s.div.lossDivisors(agg, lens, m, horizon)
	div := &s.div
	var adv []float64
	scale := 1.0
	switch {
	case cfg.Trainer.Grouped():
		a, flat := groupAdvantages(cfg.Trainer, sequenceRewards(lens, b.Hit, cfg.Beta), cfg.GroupSize)
		adv = perToken(a, lens)
		s.batch.FlatGroups = float64(flat) / float64(len(lens)/cfg.GroupSize)
	case s.critic != nil:
		adv = s.critic.advantages(lens, b.Hit, states, last, b.Targets, cfg.Beta, &s.batch)
		if cfg.NormalizeAdvantages {
			normalize(adv)
		}
	case cfg.Baseline == "exact":
		v, ok := t.l.(valuer)
		if !ok {
			return nil, nil, nil, nil, fmt.Errorf("trainers: baseline exact: a %s model has no exact values", t.l.layout())
		}
		res, err := v.valueAnalysis()
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("trainers: baseline exact: %w", err)
		}
		n := t.g.NumStates()
		s.values = exactValues(s.values, res, t.g.W(), n)
		adv = exactAdvantages(lens, b.Hit, states, last, b.Targets, s.values, n, cfg.Beta, s.adv.v)
		if cfg.NormalizeAdvantages {
			normalize(adv)
		}
	default:
		var forkAt func(r int) []int32
		if s.fork != nil {
			forkAt = func(r int) []int32 { return s.forkAt.At(&b.Batch, r) }
		}
		adv, scale = tokenAdvantagesScale(lens, b.Hit, states, t.g.NumStates(), b.Targets, t.g.W(), cfg.Beta, cfg.Baseline, s.fork, forkAt, cfg.NormalizeAdvantages, s.adv.v)
	}
	s.entropy = t.sampled().entropy(b, states)
	s.adv = advantages{v: adv, scale: scale}
	return b, states, &s.adv, div, nil
}

// advantages are a batch's per-token advantages: token t's is v[t] *
// scale, the normalisation's scale (tokenAdvantagesScale; 1 when there is
// none) applied where they are read.
type advantages struct {
	v     []float64
	scale float64
}

// at is token t's advantage.
func (a *advantages) at(t int) float64 { return a.v[t] * a.scale }

// scaled applies the scale to v in place and returns v, for learners that
// read each token's advantage many times.
func (a *advantages) scaled() []float64 {
	scaleAll(a.v, a.scale)
	a.scale = 1
	return a.v
}

// drawBatch samples the current step's rollouts: Rollouts of the current
// policy with horizon HorizonFactor x its current hitting time (exact, or
// the estimate the step's horizon is taken from), toward uniform targets
// or the group-relative trainers' groups, from the step's seed. It
// returns the batch and its horizon.
func (t *Trainer) drawBatch(ctx context.Context) (*eval.AgentBatch, int, error) {
	cfg := t.cfg
	est, err := t.sampled().estimate(ctx)
	if err != nil {
		return nil, 0, err
	}
	horizon := int(math.Ceil(cfg.HorizonFactor * est))
	n := cfg.stepRollouts(est)
	var targets []int // nil: a uniform target per rollout
	if cfg.Trainer.Grouped() {
		targets = groupTargets(n, cfg.GroupSize, t.g.W(), t.stepSeed())
	}
	var b *eval.AgentBatch
	if cfg.hindsight() {
		b, err = t.sampled().walks(ctx, (n+t.g.W()-1)/t.g.W(), horizon, t.stepSeed())
	} else {
		b, err = t.sampled().rollouts(ctx, n, horizon, t.stepSeed(), targets)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	return b, horizon, nil
}

// hindsight is whether a step draws walks with hindsight targets
// (Hindsight, which applies to reinforce and ppo only).
func (c Config) hindsight() bool { return c.Hindsight && ownBaseline(c.Trainer) }

// stepRollouts is the number of rollouts a step draws when its horizon
// comes from the hitting time est: Rollouts, or with StepTokens about
// StepTokens / est of them, at most Rollouts and at least what the trainer
// needs (a rollout per minibatch for the clipped trainers, whole groups
// for the group-relative ones). The count is a function of the estimate
// alone, fixed before any rollout is drawn, so the batch is not chosen by
// the lengths it samples.
func (c Config) stepRollouts(est float64) int {
	if c.StepTokens <= 0 {
		return c.Rollouts
	}
	n := c.Rollouts
	if want := math.Ceil(float64(c.StepTokens) / max(est, 1)); want < float64(n) {
		n = int(want)
	}
	if c.Trainer.Clipped() {
		n = max(n, c.Minibatches)
	}
	if c.Trainer.Grouped() {
		n = (n + c.GroupSize - 1) / c.GroupSize * c.GroupSize // Rollouts is a multiple of GroupSize
	}
	return max(n, 1)
}

// forkStates marks the fork-incoming states (baseline "fork": the walk
// renews there).
func forkStates(g *tasks.Graph) []bool {
	fork := make([]bool, g.NumStates())
	for i, st := range g.States {
		fork[i] = st.Class == tasks.ForkIn
	}
	return fork
}

// record adds a batch to the run's totals, keeps its statistics (rewards
// with length penalty beta) and returns each rollout's length.
func (s *sampled) record(b *eval.Batch, horizon int, beta float64) []int {
	n := len(b.Targets)
	lens := make([]int, n)
	hits := 0
	for i := range lens {
		lens[i] = b.Len(i)
		if b.Hit[i] {
			hits++
		}
	}
	s.tokens += b.Drawn()
	s.rollouts += n
	s.batch = BatchStats{Horizon: horizon, SuccessRate: float64(hits) / float64(n), MeanLength: float64(b.Tokens()) / float64(n),
		Truncated: float64(n-hits) / float64(n), Sampled: b.Drawn(), LengthMin: slices.Min(lens), LengthMax: slices.Max(lens)}
	r := sequenceRewards(lens, b.Hit, beta)
	st := &s.batch
	st.RewardMin, st.RewardMax = slices.Min(r), slices.Max(r)
	for _, x := range r {
		st.RewardMean += x / float64(n)
	}
	for _, x := range r {
		st.RewardStd += (x - st.RewardMean) * (x - st.RewardMean) / float64(n)
	}
	st.RewardStd = math.Sqrt(st.RewardStd)
	return lens
}

// ratioStats accumulates, over the tokens of a batch, PPO's approximate KL
// (r - 1) - log r and the count of ratios r = pi/pi_old outside
// [1-clip, 1+clip].
type ratioStats struct {
	kl, clipped, n float64
	// trained counts the tokens whose loss the update differentiated
	// through the whole model, summed over epochs (a transformer trains a
	// subsample of windows; its table pass is not counted).
	trained int
	// gradNorm is the L2 norm of the last update's gradient.
	gradNorm float64
	// later, when not nil, computes the ratio statistics (kl, clipped,
	// n) once a row or a checkpoint wants them (sampled.ratios): the
	// transformer's replay of the batch through the updated parameters.
	later func() (ratioStats, error)
}

func (rs *ratioStats) add(r, clip float64) { rs.addN(r, clip, 1) }

// addN adds n tokens of ratio r.
func (rs *ratioStats) addN(r, clip, n float64) {
	rs.kl += n * ((r - 1) - math.Log(r))
	if math.Abs(r-1) > clip {
		rs.clipped += n
	}
	rs.n += n
}

// record writes the means into the batch statistics (the ratio's nothing
// without tokens), with the trained tokens and the gradient's norm.
func (rs ratioStats) record(b *BatchStats) {
	b.Trained, b.GradNorm = rs.trained, rs.gradNorm
	rs.recordRatios(b)
}

// recordRatios writes the ratio statistics' means into b, when there are
// tokens.
func (rs ratioStats) recordRatios(b *BatchStats) {
	if rs.n > 0 {
		b.ApproxKL, b.ClipFrac = rs.kl/rs.n, rs.clipped/rs.n
	}
}
