package trainers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
)

// pass runs the windows of one minibatch through the graph, filling the
// loss constants of each trained position with fill(position, item), and
// takes one optimiser step on the summed gradient. Sequence i's transition
// t is item first[i]+t. It returns the summed loss.
func (l *transformer) pass(seqs []tokenSeq, first []int, wins []window, fill func(pos, item int)) (float64, error) {
	start := time.Now()
	defer func() { l.passTime += time.Since(start) }()
	t := l.t
	b, _, _ := l.fw.Shape()
	rows := make([]nn.Window, 0, b)
	consts := []vec{l.w, l.advPos, l.advNeg, l.oldLog, l.share, l.refLog}
	total := 0.0
	for k := 0; k < len(wins); k += b {
		part := wins[k:min(k+b, len(wins))]
		rows = rows[:0]
		for _, w := range part {
			s := seqs[w.seq]
			rows = append(rows, nn.Window{Prompt: l.prompt(s.target), Start: w.from, Tokens: s.tokens[w.from : w.to+1]})
		}
		if err := l.fw.SetWindows(rows); err != nil {
			return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		for _, v := range consts {
			if v.node != nil {
				clear(v.data())
			}
		}
		for r, w := range part {
			for p := w.train; p < w.to; p++ {
				if t.trained[seqs[w.seq].tokens[p]] {
					fill(r*l.rowT+p-w.from, first[w.seq]+p)
				}
			}
			if w.weight == 1 {
				continue
			}
			for _, v := range []vec{l.w, l.advPos, l.advNeg} { // per position
				if v.node != nil {
					scaleRange(v.data()[r*l.rowT:(r+1)*l.rowT], w.weight)
				}
			}
			if l.share.node != nil { // per slot, or per position (k3)
				per := len(l.share.data()) / (b * l.rowT)
				scaleRange(l.share.data()[r*l.rowT*per:(r+1)*l.rowT*per], w.weight)
			}
		}
		for _, v := range consts {
			if v.node == nil {
				continue
			}
			if err := G.Let(v.node, v.val); err != nil {
				return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
			}
		}
		cost, err := l.step.Accumulate() // refuses NaN losses and gradients
		if err != nil {
			return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		total += cost
	}
	if err := l.step.Apply(); err != nil {
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

// scaleRange multiplies x by c.
func scaleRange(x []float64, c float64) {
	for i := range x {
		x[i] *= c
	}
}

// budget subsamples a minibatch's windows to the transformer's trained-token
// budget per update (TransformerOptions.TrainTokens, shared by the m
// minibatches of an epoch), seeded by the step, the epoch and the
// minibatch, so a resumed run draws the same subsets.
func (l *transformer) budget(wins []window, m, epoch, mb int) []window {
	rng := rand.New(rand.NewPCG(l.t.stepSeed()^0x3243f6a8885a308d, uint64(epoch)<<32|uint64(mb)))
	return subsample(wins, l.opts.TrainTokens/m, rng)
}

// update is the REINFORCE update or the clipped objective's epochs over
// minibatches of windows (each subsampled to the budget).
func (l *transformer) update(ab *eval.AgentBatch, states []int32, adv, div []float64) (ratioStats, error) {
	cfg := l.t.cfg
	seqs, err := l.sequences(&ab.Batch)
	if err != nil {
		return ratioStats{}, err
	}
	epochs, m := cfg.Trainer.epochs(cfg)
	mini := make([][]int, m) // rollouts of each minibatch
	for i := range seqs {
		mini[minibatchOf(i, m)] = append(mini[minibatchOf(i, m)], i)
	}
	trained := 0 // positions of the windows trained, over the epochs
	var (
		tables   []tableTokens // the table pass's tokens, per minibatch
		b0       []float64     // B at sampling
		rowStart []int
	)
	if l.table != nil {
		ls := l.tr.Learnables()
		b0 = append([]float64(nil), ls[len(ls)-1].Value().Data().([]float64)...)
		rowStart = rowStarts(l.t.g, l.t.trained, ab, states)
		for mb, rs := range mini {
			tables = append(tables, l.tableTokensOf(ab, states, rs, mb, m))
		}
	}
	for epoch := range epochs {
		for mb, rs := range mini {
			var lensOf []int
			for _, i := range rs {
				lensOf = append(lensOf, len(seqs[i].tokens))
			}
			if l.table != nil {
				if err := l.tableStep(l.table, ab, states, rowStart, b0, tables[mb], adv, div); err != nil {
					return ratioStats{}, err
				}
			}
			wins := cutWindows(lensOf, l.opts.Stride, l.opts.Context)
			for k := range wins {
				wins[k].seq = rs[wins[k].seq]
			}
			wins = l.budget(wins, m, epoch, mb)
			for _, w := range wins {
				trained += w.to - w.train
			}
			var fill func(pos, item int)
			if !cfg.Trainer.Clipped() {
				fill = func(pos, item int) { l.w.data()[pos] = -adv[item] / div[item] }
			} else {
				fill = func(pos, item int) {
					l.oldLog.data()[pos] = ab.LogProbs[item]
					if a := adv[item] / div[item]; a > 0 {
						l.advPos.data()[pos] = a
					} else {
						l.advNeg.data()[pos] = a
					}
					switch {
					case l.share.node == nil:
					case cfg.Trainer.Grouped(): // k3 on the sampled token
						l.share.data()[pos] = 1 / div[item]
						l.refLog.data()[pos] = math.Log(l.ref[ab.Entries[item]])
					default:
						_, _, r := l.fw.Shape()
						for k, e := range l.fw.SlotEntries()[pos*r : (pos+1)*r] {
							if e >= 0 {
								l.share.data()[pos*r+k] = 1 / div[item]
								l.refLog.data()[pos*r+k] = math.Log(l.ref[e])
							}
						}
					}
				}
			}
			if _, err := l.pass(seqs, ab.Starts, wins, fill); err != nil {
				return ratioStats{}, err
			}
		}
	}
	norm := l.step.GradNorm()
	if l.table != nil {
		norm = math.Hypot(norm, l.table.step.GradNorm())
	}
	if !cfg.Trainer.Clipped() {
		return ratioStats{trained: trained, gradNorm: norm}, nil
	}
	rs, err := l.ratios(seqs, ab)
	rs.trained, rs.gradNorm = trained, norm
	return rs, err
}

// entropy averages, over the batch's tokens in trained rows, the entropy
// of the row each was drawn from when the agents reported their rows (the
// table initialisation), and otherwise -log pi of the token drawn, whose
// mean is the same quantity estimated from the samples.
func (l *transformer) entropy(ab *eval.AgentBatch, states []int32) float64 {
	g, trained := l.t.g, l.t.trained
	var rowStart []int
	if ab.Rows != nil {
		rowStart = rowStarts(g, trained, ab, states)
	}
	sum, n := 0.0, 0
	for i := range ab.Targets {
		for tok := ab.Starts[i]; tok < ab.Starts[i+1]; tok++ {
			s := states[tok]
			if !trained[s] {
				continue
			}
			n++
			if rowStart == nil {
				sum -= ab.LogProbs[tok]
				continue
			}
			for _, lp := range ab.Rows[i][rowStart[tok]:][:g.Offsets[s+1]-g.Offsets[s]] {
				sum -= math.Exp(lp) * lp
			}
		}
	}
	return sum / float64(max(n, 1))
}

// ratios are PPO's approximate KL and clip fraction after the updates,
// replaying rollouts through a sampler of the updated transformer: the
// first rollouts of the batch up to the trained-token budget (a statistic
// of the batch, not all of it: at the paper's size a batch holds millions
// of tokens).
func (l *transformer) ratios(seqs []tokenSeq, ab *eval.AgentBatch) (ratioStats, error) {
	t := l.t
	sp := l.tr.Sampler()
	var rs ratioStats
	for i, seq := range seqs {
		if l.opts.TrainTokens > 0 && rs.n >= float64(l.opts.TrainTokens) {
			break
		}
		if err := sp.ResetAt(0, l.prompt(seq.target)); err != nil {
			return rs, fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		for p, x := range seq.tokens[:len(seq.tokens)-1] {
			logp, err := sp.Push(x)
			if err != nil {
				return rs, fmt.Errorf("trainers: step %d: %w", t.done, err)
			}
			if t.trained[x] {
				tok := ab.Starts[i] + p
				rs.add(math.Exp(logp[int(ab.Entries[tok])-t.g.Offsets[x]]-ab.LogProbs[tok]), t.cfg.Clip)
			}
		}
	}
	return rs, nil
}

// crossEntropyStep is one cross-entropy step of the transformer on
// Rollouts sequences: golden paths with uniform targets and multiedges
// (sft, Theorem 2's data) or teacher traces (distill, Theorem 5's), with
// weight 1/(number of tokens) on every trained token.
func (l *transformer) crossEntropyStep(ctx context.Context) error {
	t, cfg, g := l.t, l.t.cfg, l.t.g
	var seqs []tokenSeq
	stepSeed := t.stepSeed()
	switch {
	case cfg.Trainer == SFT:
		rng := rand.New(rand.NewPCG(stepSeed, 0x243f6a8885a308d3))
		for range cfg.Rollouts {
			x := 1 + rng.IntN(g.W())
			path, err := g.RandomGoldenPath(x, rng)
			if err != nil {
				return err
			}
			ids, err := l.tok.Encode(path)
			if err != nil {
				return err
			}
			seqs = append(seqs, tokenSeq{tokens: ids, target: x})
		}
	case l.traces != nil: // a fixed set of traces, taken in turn
		if l.st.NextTrace < 0 || l.st.NextTrace >= len(l.traces) {
			return fmt.Errorf("trainers: step %d: next trace %d outside [0, %d)", t.done, l.st.NextTrace, len(l.traces))
		}
		for range cfg.Rollouts {
			seqs = append(seqs, l.traces[l.st.NextTrace])
			l.st.NextTrace = (l.st.NextTrace + 1) % len(l.traces)
		}
	default:
		b, err := teacherTraces(ctx, g, l.teacher, cfg.Rollouts, int(math.Ceil(100*t.limit)), stepSeed)
		if err != nil {
			return err
		}
		if seqs, err = l.sequences(&b.Batch); err != nil {
			return err
		}
	}
	first := make([]int, len(seqs))
	lens := make([]int, len(seqs))
	n := 0.0
	for i, s := range seqs {
		first[i], lens[i] = int(n), len(s.tokens)
		n += float64(len(s.tokens) - 1)
	}
	wins := l.budget(cutWindows(lens, l.opts.Stride, l.opts.Context), 1, 0, 0)
	loss, err := l.pass(seqs, first, wins, func(pos, item int) { l.w.data()[pos] = -1 / n })
	if err != nil {
		return err
	}
	l.st.Loss = loss
	return nil
}

// estimate is the latest Monte Carlo hitting time when every evaluation
// rollout hit, and otherwise the mean length with the misses counted at the
// evaluation horizon: a lower bound. The mean over hits alone would be
// biased low: a policy that hits one target in 2K+1 steps and loops
// otherwise would get a horizon too short for any rollout to find the
// other targets, and no signal to learn them.
func (l *transformer) estimate(ctx context.Context) (float64, error) {
	if l.st.MCStep < 0 { // no measurement yet
		var row Row
		if err := l.measure(ctx, &row); err != nil {
			return math.NaN(), err
		}
	}
	return l.latest(), nil
}

// evalRollouts is the number of rollouts of the next measurement
// (TransformerOptions.EvalTokens): fewer when the latest hitting time is
// long, never below min(200, EvalRollouts).
func (l *transformer) evalRollouts() int {
	n := l.opts.EvalRollouts
	if l.opts.EvalTokens > 0 && l.st.MCStep >= 0 {
		n = min(n, max(min(200, n), int(float64(l.opts.EvalTokens)/max(l.latest(), 1))))
	} else if l.opts.EvalTokens > 0 {
		n = min(n, max(min(200, n), int(float64(l.opts.EvalTokens)/max(float64(l.mcCap)/50, 1))))
	}
	return n
}

// latest is the latest measurement's hitting time (see estimate).
func (l *transformer) latest() float64 {
	if l.st.MC.SuccessRate == 1 {
		return l.st.MC.HittingTime
	}
	return l.st.MC.MeanLength
}

// measure is a Monte Carlo hitting time with its 95% confidence interval,
// and the success rate within 50x the starting bigram's hitting time (when
// some rollouts miss, the row holds the lower bound of estimate and no
// interval), taken at step 0, every LogEvery steps and at the step cap;
// rows in between repeat the latest.
func (l *transformer) measure(ctx context.Context, row *Row) error {
	t, cfg := l.t, l.t.cfg
	if l.st.MCStep < 0 || (l.st.MCStep != t.done && (t.done%cfg.LogEvery == 0 || t.done >= cfg.Steps)) {
		mc, err := eval.AgentMonteCarlo(ctx, t.g, l.newAgent(), l.evalRollouts(), l.mcCap, cfg.Seed^0x1f83d9abfb41bd6b^uint64(t.done)*0x9e3779b97f4a7c15)
		if err != nil {
			return fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		l.st.MC, l.st.MCStep = mc, t.done
	}
	ci := l.st.MC.CI95
	if l.st.MC.SuccessRate < 1 {
		ci = math.NaN()
	}
	row.HittingTime, row.HittingTimeCI95, row.MCSuccessRate, row.Estimated = l.latest(), ci, l.st.MC.SuccessRate, true
	if cfg.Trainer.CrossEntropy() && t.done > 0 {
		row.Objective = l.st.Loss
	}
	return nil
}

// tensors are the transformer's parameters, one named tensor each, in
// Learnables order.
func (l *transformer) tensors() []checkpoints.Tensor {
	var out []checkpoints.Tensor
	vals := l.tr.ParamValues()
	for i, p := range l.tr.Learnables() {
		out = append(out, checkpoints.Tensor{Name: p.Name(), Shape: append([]int(nil), p.Shape()...), Data: vals[i]})
	}
	return out
}

// setTensors restores the parameters, checking each one's name and shape.
func (l *transformer) setTensors(ck *checkpoints.Checkpoint) error {
	var vals [][]float64
	for _, p := range l.tr.Learnables() {
		d, err := ck.Tensor(p.Name(), p.Shape().TotalSize())
		if err != nil {
			return err
		}
		vals = append(vals, d)
	}
	return l.tr.SetParamValues(vals)
}
