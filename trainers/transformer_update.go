package trainers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// update is the REINFORCE update or the clipped objective's epochs over
// minibatches, each minibatch through both passes (newPasses): the table
// pass on every one of its sampled tokens at trained states, then the
// windows pass on its windows (a subsample to the trained-token budget).
func (l *transformer) update(ab *eval.AgentBatch, states []int32, a *advantages, d *lossDivs) (ratioStats, error) {
	adv, div := a.scaled(), d.rollout // the passes read each token's advantage once an epoch, its divisor by its rollout
	cfg := l.t.cfg
	seqs := rolloutSeqs{b: &ab.Batch, states: states, next: l.t.g.Next}
	epochs, m := cfg.Trainer.epochs(cfg)
	mini := make([][]int, m) // rollouts of each minibatch
	for i := range ab.Targets {
		mini[minibatchOf(i, m)] = append(mini[minibatchOf(i, m)], i)
	}
	trained := 0 // positions of the windows trained, over the epochs
	bt := l.batchTokens(ab, states)
	// With hindsight targets, both passes train each walk's tokens once,
	// on the sums of their terms over the walk's rollouts (the windows
	// pass unless sumWalkWindows is off).
	var walks []walkWindows
	if ab.Walk() > 0 {
		for _, rs := range mini {
			sums, long := l.walkSumsOf(ab, states, rs, adv, div)
			walks = append(walks, walkWindows{sums: sums, long: long})
		}
	}
	var tab *tableData
	if l.table != nil {
		tab = l.newTableData(bt, mini, walks)
	}
	// Each minibatch's table step comes before its windows pass, and the
	// next minibatch's table gradient is summed while the windows pass
	// runs: the table pass reads B and no other parameter, and the
	// windows pass reads B and updates every other. Only the table's
	// apply, which writes B, waits for the windows pass before it. The
	// values are those of one pass after the other, bit for bit; the two
	// fill the cores that each leaves idle at the start and end of its
	// parallel parts.
	if tab != nil {
		if err := l.accumulateTable(tab, 0, adv, div); err != nil {
			return ratioStats{}, err
		}
	}
	for epoch := range epochs {
		for mb, rs := range mini {
			var pending func() error // the next minibatch's table gradient, done once this windows pass is
			if tab != nil {
				if len(tab.mini[mb].tokens) > 0 {
					if err := l.applyTable(); err != nil {
						return ratioStats{}, err
					}
				}
				if epoch+1 < epochs || mb+1 < m {
					next := (mb + 1) % m
					pending = besideWindows(func() error { return l.accumulateTable(tab, next, adv, div) })
				}
			}
			seqsOf, fill := rs, func(c *consts, pos, seq, item int, weight float64) {
				l.setSampled(c, pos, seq, item, weight, bt.logp(seq, item), ab, adv, div)
			}
			if walks != nil && sumWalkWindows { // each walk's windows once, on the sums of its rollouts' terms
				ws := walks[mb]
				seqsOf = ws.long
				fill = func(c *consts, pos, seq, item int, weight float64) {
					j, _ := slices.BinarySearch(ws.sums.tokens, int32(item))
					l.setSummed(c, pos, item, weight*ws.sums.scale, bt.logp(seq, item), ab, ws.sums.sums, j)
				}
			}
			var lensOf []int
			for _, i := range seqsOf {
				lensOf = append(lensOf, seqs.len(i))
			}
			wins := cutWindows(lensOf, l.opts.Stride, l.opts.Context)
			for k := range wins {
				wins[k].seq = seqsOf[wins[k].seq]
			}
			wins = l.budget(wins, m, epoch, mb)
			for _, w := range wins {
				trained += w.to - w.train
			}
			r := region("windows pass")
			_, err := l.trainWindows(seqs, ab.Starts, wins, fill)
			r.End()
			if pending != nil {
				r := region("table wait") // the next minibatch's table pass, once the windows pass is done
				if e := pending(); err == nil {
					err = e
				}
				r.End()
			}
			if err != nil {
				return ratioStats{}, err
			}
		}
	}
	norm := l.windows.step.GradNorm()
	if l.table != nil {
		norm = math.Hypot(norm, l.table.step.GradNorm())
	}
	if !cfg.Trainer.Clipped() {
		return ratioStats{trained: trained, gradNorm: norm}, nil
	}
	// The ratio statistics are only logged: the replay runs when a row
	// or a checkpoint wants them (sampled.ratios), on the batch and the
	// parameters this update leaves.
	later := func() (ratioStats, error) {
		defer region("ratio replay").End()
		l.replays++
		return l.ratios(l.batchTokens(ab, states))
	}
	return ratioStats{trained: trained, gradNorm: norm, later: later}, nil
}

// walkWindows are a minibatch's walks as the windows pass trains them:
// each walk's longest rollout in the minibatch, and the sums of the terms
// of its tokens at trained states over the walk's rollouts (walkSumsOf).
type walkWindows struct {
	sums tableTokens
	long []int
}

// sumWalkWindows is whether the windows pass trains a batch of walks by
// walk (on summed terms) rather than rollout by rollout; a variable so
// that a test can compare the two.
var sumWalkWindows = true

// tablesBesideWindows is whether update sums the next minibatch's table
// gradient beside the windows pass (otherwise after it); a variable so
// that a test can compare the two.
var tablesBesideWindows = true

// besideWindows starts f on a goroutine of its own and returns what waits
// for its error; without tablesBesideWindows it returns f itself, to run
// when called, after the windows pass.
func besideWindows(f func() error) func() error {
	if !tablesBesideWindows {
		return f
	}
	done := make(chan error, 1)
	go func() { done <- f() }()
	return func() error { return <-done }
}

// trainWindows is the windows pass on one minibatch: it runs its windows
// through the graph, fill by fill, setting the loss constants of each
// trained position with fill(constants, position, sequence, item, the window's weight), and
// takes one optimiser step on the summed gradient. Sequence i's
// transition t is item first[i]+t. It returns the summed loss.
func (l *transformer) trainWindows(seqs seqSource, first []int, wins []window, fill func(c *consts, pos, seq, item int, weight float64)) (float64, error) {
	start := time.Now()
	defer func() { l.passTime += time.Since(start) }()
	t, p := l.t, l.windows
	b, _, _ := l.fw.Shape()
	rows := make([]nn.Window, 0, b)
	toks := make([]int, 0, b*l.rowT) // a fill's tokens, row after row
	for k := 0; k < len(wins); k += b {
		part := wins[k:min(k+b, len(wins))]
		rows, toks = rows[:0], toks[:0]
		for _, w := range part {
			toks = seqs.window(toks, w.seq, w.from, w.to)
		}
		at := 0
		for _, w := range part {
			n := w.to + 1 - w.from
			rows = append(rows, nn.Window{Prompt: l.prompt(seqs.target(w.seq)), Start: w.from, Tokens: toks[at : at+n : at+n]})
			at += n
		}
		if err := l.fw.SetWindows(rows); err != nil {
			return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		c := p.begin()
		for r, w := range part {
			for pos := w.train; pos < w.to; pos++ {
				if t.trained[rows[r].Tokens[pos-w.from]] {
					fill(c, r*l.rowT+pos-w.from, w.seq, first[w.seq]+pos, w.weight)
				}
			}
		}
		if _, err := p.accumulate(); err != nil {
			return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
	}
	if err := p.apply(); err != nil {
		return 0, fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	return p.loss, checkFinite(t.done, l.tr.Learnables())
}

// budget subsamples a minibatch's windows to the transformer's trained-token
// budget per update (TransformerOptions.TrainTokens, shared by the m
// minibatches of an epoch), seeded by the step, the epoch and the
// minibatch, so a resumed run draws the same subsets.
func (l *transformer) budget(wins []window, m, epoch, mb int) []window {
	rng := rand.New(rand.NewPCG(l.t.stepSeed()^0x3243f6a8885a308d, uint64(epoch)<<32|uint64(mb)))
	return subsample(wins, l.opts.TrainTokens/m, rng)
}

// entropy averages, over the batch's tokens in trained rows, the entropy
// of the row each was drawn from when the agents reported their rows (the
// table initialisation), and otherwise -log pi of the token drawn, whose
// mean is the same quantity estimated from the samples. It reads the
// batch's rows, the sampler's buffers, when it is called: rollouts
// resolves it before it samples into them again.
func (l *transformer) entropy(ab *eval.AgentBatch, states []int32) func() float64 {
	return func() float64 { return l.batchEntropy(ab, states) }
}

// batchEntropy is entropy's value, summed over fixed blocks of
// entropyBlock tokens on every core and the blocks' sums added in block
// order, so it does not depend on the number of cores. (One serial pass
// over a paper-size batch's millions of tokens took about a twentieth
// of a step's wall time.)
func (l *transformer) batchEntropy(ab *eval.AgentBatch, states []int32) float64 {
	g, trained := l.t.g, l.t.trained
	var rowStart []int32
	if ab.Rows != nil {
		rowStart = l.rowStarts(ab, states)
	}
	blocks := (len(states) + entropyBlock - 1) / entropyBlock
	sums, counts := make([]float64, blocks), make([]int, blocks)
	kernels.ParallelFor(blocks, 1, func(lo, hi int) {
		var p []float64 // a row's probabilities (kernels.Exps: four at a time, where math.Exp cost 5% of a paper-size run)
		for bk := lo; bk < hi; bk++ {
			t0, t1 := bk*entropyBlock, min(len(states), (bk+1)*entropyBlock)
			i := rolloutAt(&ab.Batch, t0)
			sum, n := 0.0, 0
			for tok := t0; tok < t1; tok++ {
				for tok >= ab.Starts[i+1] {
					i++
				}
				s := states[tok]
				if !trained[s] {
					continue
				}
				n++
				if rowStart == nil {
					sum -= ab.LogProbs[tok]
					continue
				}
				row := ab.Rows[i][rowStart[tok]:][:g.Offsets[s+1]-g.Offsets[s]]
				p = kernels.Grow(p, len(row))
				kernels.Exps(p, row, 0)
				for j, lp := range row {
					sum -= p[j] * lp
				}
			}
			sums[bk], counts[bk] = sum, n
		}
	})
	sum, n := 0.0, 0
	for bk := range blocks {
		sum, n = sum+sums[bk], n+counts[bk]
	}
	return sum / float64(max(n, 1))
}

// entropyBlock is the number of tokens batchEntropy sums serially.
const entropyBlock = 1 << 14

// ratios are PPO's approximate KL and clip fraction after the updates,
// replaying rollouts through a sampler of the updated transformer: the
// first rollouts of the batch up to the trained-token budget (a statistic
// of the batch, not all of it: at the paper's size a batch holds millions
// of tokens). The rollouts are replayed on every core, each into its own
// stretch of the ratios, which are then summed in rollout order: the
// statistics of a serial replay, bit for bit, on any number of cores
// (TestRunsDoNotDependOnCores).
func (l *transformer) ratios(bt *batchTokens) (ratioStats, error) {
	t, ab, states := l.t, bt.ab, bt.states
	start := time.Now()
	defer func() { l.replayTime += time.Since(start) }()
	// at[i] is where rollout i's ratios start; the replay takes rollouts
	// while fewer than the budget's trained tokens are taken.
	at := []int{0}
	for i := 0; i < len(ab.Targets) && (l.opts.TrainTokens <= 0 || at[i] < l.opts.TrainTokens); i++ {
		n := at[i]
		for tok := ab.Starts[i]; tok < ab.Starts[i+1]; tok++ {
			if t.trained[states[tok]] {
				n++
			}
		}
		at = append(at, n)
	}
	sn := l.tr.Snapshot()
	samplers := make(chan *nn.TransformerSampler, runtime.GOMAXPROCS(0)) // one a goroutine, reused
	for range cap(samplers) {
		samplers <- sn.Sampler()
	}
	var rs ratioStats
	// In waves of rollouts holding up to replayWave trained tokens (at least
	// one rollout), so that the ratios kept are bounded when the budget is
	// off (TrainTokens 0: the whole batch, millions of tokens).
	for i0, m := 0, len(at)-1; i0 < m; {
		i1 := i0 + 1
		for i1 < m && at[i1+1]-at[i0] <= replayWave {
			i1++
		}
		l.replay = kernels.Grow(l.replay, at[i1]-at[i0])
		errs := make([]error, i1-i0)
		kernels.ParallelEach(i1-i0, func(k int) { // rollouts of very unequal lengths: each goroutine takes the next
			i, sp := i0+k, <-samplers
			errs[k] = l.replayRollout(sp, bt, i, l.replay[at[i]-at[i0]:at[i+1]-at[i0]])
			samplers <- sp
		})
		for k, err := range errs {
			if err != nil {
				return rs, err
			}
			for _, r := range l.replay[at[i0+k]-at[i0] : at[i0+k+1]-at[i0]] {
				rs.add(r, t.cfg.Clip)
			}
		}
		i0 = i1
	}
	return rs, nil
}

// replayWave bounds the trained tokens of one wave of the ratio replay
// (ratios): 8 MiB of ratios; a variable so that a test can lower it.
var replayWave = 1 << 20

// replayRollout writes into ratios the ratio of each trained token of
// rollout i, pi(a) / pi_old(a), pi the sampler sp's.
func (l *transformer) replayRollout(sp *nn.TransformerSampler, bt *batchTokens, i int, ratios []float64) error {
	t, ab, states := l.t, bt.ab, bt.states
	if err := sp.ResetAt(0, l.prompt(ab.Targets[i])); err != nil {
		return fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	k := 0
	for tok := ab.Starts[i]; tok < ab.Starts[i+1]; tok++ { // the states its transitions leave: its tokens (rolloutSeqs)
		x := int(states[tok])
		logp, err := sp.Push(x)
		if err != nil {
			return fmt.Errorf("trainers: step %d: %w", t.done, err)
		}
		if t.trained[x] {
			ratios[k] = math.Exp(logp[int(ab.Entries[tok])-t.g.Offsets[x]] - bt.logp(i, tok))
			k++
		}
	}
	return nil
}

// crossEntropyStep is one cross-entropy step of the transformer on
// Rollouts sequences: golden paths with uniform targets and multiedges
// (sft, Theorem 2's data) or teacher traces (distill, Theorem 5's), with
// weight 1/(number of tokens) on every trained token.
func (l *transformer) crossEntropyStep(ctx context.Context) error {
	t, cfg, g := l.t, l.t.cfg, l.t.g
	var seqs tokenSeqs
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
	loss, err := l.trainWindows(seqs, first, wins, func(c *consts, pos, _, _ int, weight float64) { c.setCrossEntropy(pos, n, weight) })
	if err != nil {
		return err
	}
	l.st.Loss = loss
	return nil
}
