package trainers

import (
	"fmt"
	"math"

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

// sampled is the state of a reinforce or ppo trainer: the loss inputs, the
// parameter of each transition and counters over the run.
type sampled struct {
	paramOf                []int32 // per CSR entry: parameter index, -1 in frozen rows
	advPos, advNeg, oldLog vec     // ppo (reinforce uses the trainer's input as weights)
	share, refLog          vec     // ppo KL and entropy terms: state shares, reference log-probs
	tokens, rollouts       int     // sampled so far
	batch                  BatchStats
	critic                 *critic // baseline "gae"
	fork                   []bool  // baseline "fork": the fork-incoming states
}

// BatchStats describe the latest batch of a sampled trainer.
type BatchStats struct {
	Horizon     int     `json:"horizon"`
	SuccessRate float64 `json:"success_rate"`
	MeanLength  float64 `json:"mean_length"`
	ApproxKL    float64 `json:"approx_kl"` // mean over tokens of (r - 1) - log r after the updates
	ClipFrac    float64 `json:"clip_frac"` // share of tokens whose ratio left [1-clip, 1+clip]
}

// buildSampled adds the reinforce or ppo loss to the model's graph.
func (t *Trainer) buildSampled() (*G.Node, error) {
	p := t.model.NumParams()
	s := &sampled{paramOf: make([]int32, len(t.g.Next))}
	for i := range s.paramOf {
		s.paramOf[i] = -1
	}
	for k, e := range t.model.TrainableEntries() {
		s.paramOf[e] = int32(k)
	}
	t.smp = s
	if t.cfg.Baseline == "gae" {
		s.critic = newCritic(t.g.NumStates(), t.g.W(), t.cfg.CriticRate, t.cfg.Lambda)
	}
	if t.cfg.Baseline == "fork" {
		s.fork = forkStates(t.g)
	}
	logp := t.model.LogProbs()
	if t.cfg.Trainer == "reinforce" {
		return reinforceLoss(logp, t.in.node)
	}
	g := t.model.Graph()
	s.advPos, s.advNeg, s.oldLog = newVec(g, p, "adv+"), newVec(g, p, "adv-"), newVec(g, p, "logp_old")
	obj, err := ppoObjective(logp, s.oldLog.node, s.advPos.node, s.advNeg.node, t.cfg.Clip)
	if err != nil {
		return nil, err
	}
	cost, err := G.Neg(obj)
	if err != nil {
		return nil, err
	}
	if t.cfg.KLCoef > 0 || t.cfg.EntropyCoef > 0 {
		s.share, s.refLog = newVec(g, p, "state_share"), newVec(g, p, "logp_ref")
		for k, e := range t.model.TrainableEntries() {
			s.refLog.data()[k] = math.Log(t.model.Probs()[e])
		}
	}
	return addRegularizers(cost, logp, s.refLog.node, s.share.node, t.cfg)
}

// sampledStep is one iteration of sampled RLVR: a batch of rollouts of the
// current policy with horizon HorizonFactor x its exact hitting time, then
// the REINFORCE update or PPO's epochs over minibatches.
func (t *Trainer) sampledStep() error {
	if t.res == nil || t.resStep != t.done {
		if _, err := t.measure(); err != nil {
			return err
		}
	}
	s, cfg := t.smp, t.cfg
	probs := t.probs
	horizon := int(math.Ceil(cfg.HorizonFactor * t.res.HittingTime))
	sp, err := eval.NewSampler(t.g, probs)
	if err != nil {
		return fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	b := sp.Rollouts(cfg.Rollouts, horizon, t.stepSeed())
	lens := s.record(b, horizon)
	states, last := b.States(t.g)
	var adv []float64
	if s.critic != nil {
		adv = s.critic.advantages(lens, b.Hit, states, last, b.Targets, cfg.Beta)
		if cfg.NormalizeAdvantages {
			normalize(adv)
		}
	} else {
		adv = tokenAdvantages(lens, b.Hit, states, t.g.NumStates(), b.Targets, t.g.W(), cfg.Beta, cfg.Baseline, s.fork, cfg.NormalizeAdvantages)
	}
	if cfg.Trainer == "reinforce" {
		w := t.in.data()
		clear(w)
		n := float64(b.Tokens())
		for i, e := range b.Entries {
			if k := s.paramOf[e]; k >= 0 {
				w[k] -= adv[i] / n
			}
		}
		if err := t.runStep(t.in); err != nil {
			return err
		}
		t.done++
		return nil
	}
	old := s.oldLog.data()
	for k, e := range t.model.TrainableEntries() {
		old[k] = math.Log(probs[e])
	}
	mini := t.minibatches(b, adv, states)
	for range cfg.Epochs {
		for _, m := range mini {
			copy(s.advPos.data(), m.pos)
			copy(s.advNeg.data(), m.neg)
			if s.share.node != nil {
				copy(s.share.data(), m.share)
			}
			if err := t.runStep(s.advPos, s.advNeg, s.oldLog, s.share, s.refLog); err != nil {
				return err
			}
		}
	}
	t.batchRatios(b, old)
	t.done++
	return nil
}

// stepSeed seeds the current step's sampling: rollout i of step k draws
// from its own stream, so a batch depends on (seed, k) only and a resumed
// run samples exactly the same batches.
func (t *Trainer) stepSeed() uint64 { return t.cfg.Seed ^ (uint64(t.done+1) * 0x9e3779b97f4a7c15) }

// forkStates marks the fork-incoming states (baseline "fork": the walk
// renews there).
func forkStates(g *tasks.Graph) []bool {
	fork := make([]bool, g.NumStates())
	for i, st := range g.States {
		fork[i] = st.Class == tasks.ForkIn
	}
	return fork
}

// record adds a batch to the run's totals, keeps its statistics and
// returns each rollout's length.
func (s *sampled) record(b *eval.Batch, horizon int) []int {
	n := len(b.Targets)
	lens := make([]int, n)
	hits := 0
	for i := range lens {
		lens[i] = b.Len(i)
		if b.Hit[i] {
			hits++
		}
	}
	s.tokens += b.Tokens()
	s.rollouts += n
	s.batch = BatchStats{Horizon: horizon, SuccessRate: float64(hits) / float64(n), MeanLength: float64(b.Tokens()) / float64(n)}
	return lens
}

// minibatch holds one minibatch's aggregated loss constants.
type minibatch struct{ pos, neg, share []float64 }

// minibatches splits the batch (rollout i to minibatch i mod M) and sums
// each minibatch's advantages per parameter, divided by its token count.
func (t *Trainer) minibatches(b *eval.Batch, adv []float64, states []int32) []minibatch {
	s, p := t.smp, t.model.NumParams()
	m := t.cfg.Minibatches
	out := make([]minibatch, m)
	counts := make([][]float64, m) // tokens per state, for the KL/entropy shares
	n := make([]float64, m)
	for j := range out {
		out[j] = minibatch{pos: make([]float64, p), neg: make([]float64, p)}
		counts[j] = make([]float64, t.g.NumStates())
	}
	for i := range b.Targets {
		j := i % m
		n[j] += float64(b.Len(i))
	}
	for i := range b.Targets {
		j := i % m
		for tok := b.Starts[i]; tok < b.Starts[i+1]; tok++ {
			e := b.Entries[tok]
			k := s.paramOf[e]
			if k < 0 {
				continue
			}
			if a := adv[tok] / n[j]; a > 0 {
				out[j].pos[k] += a
			} else {
				out[j].neg[k] += a
			}
			counts[j][states[tok]]++
		}
	}
	if s.share.node != nil {
		for j := range out {
			out[j].share = make([]float64, p)
			for k, e := range t.model.TrainableEntries() {
				out[j].share[k] = counts[j][support(t.g).RowOf(e)] / n[j]
			}
		}
	}
	return out
}

// batchRatios logs PPO's approximate KL and clip fraction over the batch's
// tokens after the updates.
func (t *Trainer) batchRatios(b *eval.Batch, old []float64) {
	s := t.smp
	now := t.model.Probs()
	var rs ratioStats
	for _, e := range b.Entries {
		if k := s.paramOf[e]; k >= 0 {
			rs.add(now[e]/math.Exp(old[k]), t.cfg.Clip)
		}
	}
	rs.record(&s.batch)
}

// ratioStats accumulates, over the tokens of a batch, PPO's approximate KL
// (r - 1) - log r and the count of ratios r = pi/pi_old outside
// [1-clip, 1+clip].
type ratioStats struct{ kl, clipped, n float64 }

func (rs *ratioStats) add(r, clip float64) {
	rs.kl += (r - 1) - math.Log(r)
	if math.Abs(r-1) > clip {
		rs.clipped++
	}
	rs.n++
}

// record writes the means into the batch statistics (nothing without
// tokens).
func (rs ratioStats) record(b *BatchStats) {
	if rs.n > 0 {
		b.ApproxKL, b.ClipFrac = rs.kl/rs.n, rs.clipped/rs.n
	}
}

// runStep lets the given inputs (those with a node) and takes one
// optimiser step.
func (t *Trainer) runStep(vs ...vec) error {
	for _, v := range vs {
		if v.node == nil {
			continue
		}
		if err := G.Let(v.node, v.val); err != nil {
			return fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
	}
	if _, err := t.step.Run(); err != nil { // refuses NaN losses and gradients
		return fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	for i, v := range t.model.Logits() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("trainers: step %d: parameter theta[%d] is %v after the update", t.done, i, v)
		}
	}
	return nil
}
