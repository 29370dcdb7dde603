package trainers

import (
	"fmt"
	"math"
	mrand "math/rand"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// agent samples the transformer as an eval.Agent with a KV-cache sampler
// (no graph per token). The rows the paper fixes (fork-incoming: uniform,
// leaf-incoming: bounce) are drawn from the starting bigram, as the
// bigram's frozen rows are.
type agent struct {
	g   *tasks.Graph
	l   *learner
	s   *nn.TransformerSampler
	ref []float64
}

// agent returns an agent sampling the transformer's current parameters.
func (l *learner) agent(g *tasks.Graph) *agent {
	return &agent{g: g, l: l, s: l.tr.Sampler(), ref: l.ref}
}

// newAgent makes agents for eval's parallel rollouts, one per worker.
func (l *learner) newAgent(g *tasks.Graph) func() (eval.Agent, error) {
	return func() (eval.Agent, error) { return l.agent(g), nil }
}

// Start empties the sampler's cache and, with a prompt, caches the target.
func (a *agent) Start(target int) error { return a.s.ResetAt(0, a.l.prompt(target)) }

func (a *agent) Next(s int, rng *rand.Rand) (int, float64, error) {
	logp, err := a.s.Push(s)
	if err != nil {
		return 0, 0, err
	}
	lo, u := a.g.Offsets[s], rng.Float64()
	if !a.g.Trained(s) {
		e := eval.DrawEntry(a.ref, lo, a.g.Offsets[s+1], u)
		return e, math.Log(a.ref[e]), nil
	}
	for j, lp := range logp {
		if u -= math.Exp(lp); u < 0 {
			return lo + j, lp, nil
		}
	}
	j := len(logp) - 1 // rounding: the last entry with mass takes the remainder
	for j > 0 && math.IsInf(logp[j], -1) {
		j--
	}
	return lo + j, logp[j], nil
}

// sequences turns a batch into token sequences: the states of rollout i,
// s0 -> f first; transition t of rollout i is item b.Starts[i]+t.
func sequences(g *tasks.Graph, b *eval.Batch) [][]int {
	out := make([][]int, len(b.Targets))
	for i := range out {
		seq := make([]int, 1, b.Len(i)+1)
		for _, e := range b.Entries[b.Starts[i]:b.Starts[i+1]] {
			seq = append(seq, g.Next[e])
		}
		out[i] = seq
	}
	return out
}

// pass runs the windows of one minibatch through the graph, filling the
// loss constants of each trained position with fill(position, item), and
// takes one optimiser step on the summed gradient. Sequence i goes toward
// targets[i] (its prompt) and its transition t is item first[i]+t. It
// returns the summed loss.
func (t *Trainer) pass(seqs [][]int, targets, first []int, wins []window, fill func(pos, item int)) (float64, error) {
	l := t.tf
	b, _, _ := l.fw.Shape()
	rows := make([]nn.Window, 0, b)
	total := 0.0
	for k := 0; k < len(wins); k += b {
		part := wins[k:min(k+b, len(wins))]
		rows = rows[:0]
		for _, w := range part {
			rows = append(rows, nn.Window{Prompt: l.prompt(targets[w.seq]), Start: w.from, Tokens: seqs[w.seq][w.from : w.to+1]})
		}
		if err := l.fw.SetWindows(rows); err != nil {
			return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		for _, v := range []vec{l.w, l.advPos, l.advNeg, l.oldLog, l.share, l.refLog} {
			if v.node != nil {
				clear(v.data())
			}
		}
		for r, w := range part {
			for p := w.train; p < w.to; p++ {
				if t.g.Trained(seqs[w.seq][p]) {
					fill(r*l.t+p-w.from, first[w.seq]+p)
				}
			}
		}
		for _, v := range []vec{l.w, l.advPos, l.advNeg, l.oldLog, l.share, l.refLog} {
			if v.node == nil {
				continue
			}
			if err := G.Let(v.node, v.val); err != nil {
				return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
			}
		}
		cost, err := t.step.Accumulate() // refuses NaN losses and gradients
		if err != nil {
			return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		total += cost
	}
	if err := t.step.Apply(); err != nil {
		return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	for _, p := range l.tr.Learnables() {
		for i, v := range p.Value().Data().([]float64) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("trainers: step %d: parameter %s[%d] is %v after the update", t.done, p.Name(), i, v)
			}
		}
	}
	return total, nil
}

// transformerSampledStep is sampledStep for the transformer: rollouts from
// the KV-cache sampler with horizon HorizonFactor x the latest Monte Carlo
// hitting time, the same advantages, and the REINFORCE update or PPO's
// epochs over minibatches of windows.
func (t *Trainer) transformerSampledStep() error {
	l, cfg, g := t.tf, t.cfg, t.g
	if l.mcStep < 0 {
		if _, err := t.measure(); err != nil {
			return err
		}
	}
	horizon := int(math.Ceil(cfg.HorizonFactor * l.estimate()))
	ab, err := eval.AgentRollouts(g, l.newAgent(g), cfg.Rollouts, horizon, t.stepSeed())
	if err != nil {
		return fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	b := &ab.Batch
	lens := t.smp.record(b, horizon)
	states, _ := b.States(g)
	adv := tokenAdvantages(lens, b.Hit, states, g.NumStates(), b.Targets, g.W(), cfg.Beta, cfg.Baseline, t.smp.fork, cfg.NormalizeAdvantages)
	seqs := sequences(g, b)
	m := cfg.Minibatches
	epochs := cfg.Epochs
	if cfg.Trainer == "reinforce" {
		m, epochs = 1, 1
	}
	mini := make([][]int, m) // rollouts of each minibatch
	for i := range seqs {
		mini[i%m] = append(mini[i%m], i)
	}
	for range epochs {
		for _, rs := range mini {
			n := 0.0
			var lensOf []int
			for _, i := range rs {
				n += float64(lens[i])
				lensOf = append(lensOf, len(seqs[i]))
			}
			wins := cutWindows(lensOf, l.opts.Stride, l.opts.Context)
			for k := range wins {
				wins[k].seq = rs[wins[k].seq]
			}
			var fill func(pos, item int)
			if cfg.Trainer == "reinforce" {
				fill = func(pos, item int) { l.w.data()[pos] = -adv[item] / n }
			} else {
				fill = func(pos, item int) {
					l.oldLog.data()[pos] = ab.LogProbs[item]
					if a := adv[item] / n; a > 0 {
						l.advPos.data()[pos] = a
					} else {
						l.advNeg.data()[pos] = a
					}
					if l.share.node != nil {
						_, _, r := l.fw.Shape()
						for k, e := range l.fw.SlotEntries()[pos*r : (pos+1)*r] {
							if e >= 0 {
								l.share.data()[pos*r+k] = 1 / n
								l.refLog.data()[pos*r+k] = math.Log(l.ref[e])
							}
						}
					}
				}
			}
			if _, err := t.pass(seqs, b.Targets, b.Starts, wins, fill); err != nil {
				return err
			}
		}
	}
	if cfg.Trainer == "ppo" {
		if err := t.transformerRatios(seqs, ab); err != nil {
			return err
		}
	}
	t.done++
	return nil
}

// transformerRatios logs PPO's approximate KL and clip fraction over the
// batch's trained tokens after the updates, replaying each rollout through
// a sampler of the updated transformer.
func (t *Trainer) transformerRatios(seqs [][]int, ab *eval.AgentBatch) error {
	sp := t.tf.tr.Sampler()
	var rs ratioStats
	for i, seq := range seqs {
		if err := sp.ResetAt(0, t.tf.prompt(ab.Targets[i])); err != nil {
			return fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		for p, x := range seq[:len(seq)-1] {
			logp, err := sp.Push(x)
			if err != nil {
				return fmt.Errorf("trainers: step %d: %w", t.done, err)
			}
			if t.g.Trained(x) {
				tok := ab.Starts[i] + p
				rs.add(math.Exp(logp[int(ab.Entries[tok])-t.g.Offsets[x]]-ab.LogProbs[tok]), t.cfg.Clip)
			}
		}
	}
	rs.record(&t.smp.batch)
	return nil
}

// transformerCEStep is one cross-entropy step of the transformer on
// Rollouts sequences: golden paths with uniform targets and multiedges
// (sft, Theorem 2's data) or teacher traces (distill, Theorem 5's), with
// weight 1/(number of tokens) on every trained token.
func (t *Trainer) transformerCEStep() error {
	l, cfg, g := t.tf, t.cfg, t.g
	var seqs [][]int
	var targets []int
	stepSeed := t.stepSeed()
	switch {
	case cfg.Trainer == "sft":
		rng := mrand.New(mrand.NewSource(int64(stepSeed)))
		for range cfg.Rollouts {
			x := 1 + rng.Intn(g.W())
			path, err := g.RandomGoldenPath(x, rng)
			if err != nil {
				return err
			}
			seqs, targets = append(seqs, path), append(targets, x)
		}
	case l.traces != nil: // a fixed set of traces, taken in turn
		for range cfg.Rollouts {
			seqs, targets = append(seqs, l.traces[l.nextData]), append(targets, l.traceTargets[l.nextData])
			l.nextData = (l.nextData + 1) % len(l.traces)
		}
	default:
		b, err := teacherTraces(g, l.teacher, cfg.Rollouts, int(math.Ceil(100*t.limit)), stepSeed)
		if err != nil {
			return err
		}
		seqs, targets = sequences(g, &b.Batch), b.Targets
	}
	first := make([]int, len(seqs))
	lens := make([]int, len(seqs))
	n := 0.0
	for i, s := range seqs {
		first[i], lens[i] = int(n), len(s)
		n += float64(len(s) - 1)
	}
	wins := cutWindows(lens, l.opts.Stride, l.opts.Context)
	loss, err := t.pass(seqs, targets, first, wins, func(pos, item int) { l.w.data()[pos] = -1 / n })
	if err != nil {
		return err
	}
	l.loss = loss
	t.done++
	return nil
}

// estimate is the latest Monte Carlo hitting time when every evaluation
// rollout hit, and otherwise the mean length with the misses counted at the
// evaluation horizon: a lower bound. The mean over hits alone would be
// biased low: a policy that hits one target in 2K+1 steps and loops
// otherwise would get a horizon too short for any rollout to find the
// other targets, and no signal to learn them.
func (l *learner) estimate() float64 {
	if l.mc.SuccessRate == 1 {
		return l.mc.HittingTime
	}
	return l.mc.MeanLength
}

// measureTransformer is measure for the transformer: a Monte Carlo hitting
// time with its 95% confidence interval, and the success rate within 50x
// the starting bigram's hitting time (when some rollouts miss, the row
// holds the lower bound of estimate and no interval), taken at step 0,
// every LogEvery steps and at the step cap; rows in between repeat the
// latest.
func (t *Trainer) measureTransformer() (Row, error) {
	l, cfg := t.tf, t.cfg
	if l.mcStep < 0 || (l.mcStep != t.done && (t.done%cfg.LogEvery == 0 || t.done >= cfg.Steps)) {
		mc, err := eval.AgentMonteCarlo(t.g, l.newAgent(t.g), l.opts.EvalRollouts, l.mcCap, cfg.Seed^0x1f83d9abfb41bd6b^uint64(t.done)*0x9e3779b97f4a7c15)
		if err != nil {
			return Row{}, fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		l.mc, l.mcStep = mc, t.done
	}
	ci := l.mc.CI95
	if l.mc.SuccessRate < 1 {
		ci = math.NaN()
	}
	row := Row{Step: t.done, HittingTime: l.estimate(), HittingTimeCI95: ci, MCSuccessRate: l.mc.SuccessRate,
		InvalidMass: math.NaN(), BoundRatio: math.NaN(), A: math.NaN(), B: math.NaN(), C: math.NaN(), D: math.NaN()}
	switch cfg.Trainer {
	case "reinforce", "ppo":
		row.Objective = 1 - cfg.Beta*l.estimate()
		row.Tokens, row.Rollouts, row.Batch = t.smp.tokens, t.smp.rollouts, t.smp.batch
	default:
		row.Objective = l.loss
		if t.done == 0 {
			row.Objective = math.NaN()
		}
	}
	return row, nil
}

// AttentionStats summarise where a transformer's attention goes along its
// own rollouts, averaged over the positions of trained states and over
// heads: the share that leaves the current token (the bigram
// initialisation's attention adds nothing, whatever its weights) and the
// share on the prompt (0 without one).
type AttentionStats struct {
	OffCurrent float64 `json:"attention_off_current"`
	OnPrompt   float64 `json:"attention_on_prompt"`
	Positions  int     `json:"positions"`
}

// Attention samples n rollouts (seeded) of the transformer being trained
// and summarises its attention; an error for a bigram trainer.
func (t *Trainer) Attention(n int, seed uint64) (AttentionStats, error) {
	if t.tf == nil {
		return AttentionStats{}, fmt.Errorf("trainers: attention: the model is a bigram")
	}
	a := t.tf.agent(t.g)
	var st AttentionStats
	for i := range n {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		target := 1 + rng.IntN(t.g.W())
		if err := a.Start(target); err != nil {
			return st, err
		}
		for s, steps := 0, 0; !t.g.Hits(s, target) && steps < t.tf.mcCap; steps++ {
			e, _, err := a.Next(s, rng)
			if err != nil {
				return st, err
			}
			if t.g.Trained(s) {
				w := a.s.Attention()
				st.OffCurrent += 1 - w[len(w)-1]
				if t.tf.opts.Prompt {
					st.OnPrompt += w[0]
				}
				st.Positions++
			}
			s = t.g.Next[e]
		}
	}
	if st.Positions > 0 {
		st.OffCurrent /= float64(st.Positions)
		st.OnPrompt /= float64(st.Positions)
	}
	return st, nil
}
