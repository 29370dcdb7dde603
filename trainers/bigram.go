package trainers

import (
	"context"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
)

func init() {
	register(BigramModel, modelSpec{
		kinds: Kinds,
		// Sampled RLVR: Adam, the package's 256 rollouts and horizon of
		// twice the hitting time.
		defaults: func(k Kind, d *Config) {
			switch k {
			// From docs/sweeps/defaults.json's grids (W=K=5, L=3, seeds
			// 1-3; docs/defaults.md): the fork baseline (the state
			// baseline's runs stopped on a plateau above 1% on 22 of 24
			// seeds, the fork baseline's all within it). PPO takes the
			// best rate of its grid that got to 5% at the paper's size:
			// 0.1 (the grid's best) went from 50141 to 794k in 22 steps
			// there and 0.05 to 1.08M in 42, both stopped by the memory
			// guard, while 0.025 stopped itself within 1% (907.8 after
			// 1415 steps; seed 1 each). REINFORCE takes 0.1 for the same
			// reason: 0.2 and 0.4 take fewer tokens here, but at the
			// paper's size (defaults-paper.json) 0.2 diverged on one seed
			// of three, and 0.4 was not run. For the group-relative
			// trainers, which stop on a plateau above 1% at every rate,
			// the rate with the lowest final hitting time.
			case PPO:
				d.Optim = solvers.Config{Name: "adam", LR: 0.025, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
				d.Baseline = "fork"
			case Reinforce:
				d.Optim = solvers.Config{Name: "adam", LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
				d.Baseline = "fork"
			case GRPO, RLOO, DrGRPO:
				d.Optim = solvers.Config{Name: "adam", LR: 0.025, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
			}
		},
		build: func(t *Trainer, s Setup) (learner, error) {
			if t.cfg.Trainer.Dense() {
				return newDense(t)
			}
			return newBigram(t, s)
		},
	})
}

// bigramStep is what the sparse and the dense bigram learners share: the
// nn.Bigram, its compiled step and the loss constants.
type bigramStep struct {
	t     *Trainer
	model *nn.Bigram
	step  *nn.Step
	solv  solvers.Solver
	in    vec       // (P) loss constants: pair weights, RLVR advantages, REINFORCE weights
	pairs []float64 // cross-entropy pair weights, one per support entry
}

// compile takes the gradient of cost and compiles the step.
func (b *bigramStep) compile(cost *G.Node) error {
	var err error
	if b.solv, err = solvers.New(b.t.cfg.Optim); err != nil {
		return err
	}
	b.step, err = nn.NewStep(cost, b.model.Learnables(), b.solv)
	return err
}

// runStep lets the given inputs (those with a node) and takes one
// optimiser step.
func (b *bigramStep) runStep(vs ...vec) error {
	for _, v := range vs {
		if v.node == nil {
			continue
		}
		if err := G.Let(v.node, v.val); err != nil {
			return fmt.Errorf("trainers: step %d: %w", b.t.done, err)
		}
	}
	if _, err := b.step.Run(); err != nil { // refuses NaN losses and gradients
		return fmt.Errorf("trainers: step %d: %w", b.t.done, err)
	}
	if err := b.model.CheckFinite(); err != nil {
		return fmt.Errorf("trainers: step %d: after the update: %w", b.t.done, err)
	}
	return nil
}

// crossEntropy is the loss sum_e -q(e) log pi(e) of the pair weights q
// under the transition table probs.
func crossEntropy(pairs, probs []float64) float64 {
	loss := 0.0
	for i, q := range pairs {
		if q > 0 {
			loss -= q * math.Log(probs[i])
		}
	}
	return loss
}

// crossEntropyStep steps on the fixed pair weights (the constants hold
// them since the loss was built).
func (b *bigramStep) crossEntropyStep(context.Context) error { return b.runStep(b.in) }

func (b *bigramStep) solver() solvers.Solver  { return b.solv }
func (b *bigramStep) vocab() *tokenizer.Vocab { return tokenizer.New(b.t.g) }
func (b *bigramStep) close() error            { return b.step.Close() }

func (b *bigramStep) tensors() []checkpoints.Tensor {
	return []checkpoints.Tensor{{Name: "logits", Data: b.model.Logits()}}
}

// copyTensors is copyTensors(dst, b.tensors()) without the intermediate
// copy: exact RLVR keeps its best parameters at almost every step.
func (b *bigramStep) copyTensors(dst []checkpoints.Tensor) []checkpoints.Tensor {
	var data []float64
	if len(dst) > 0 {
		data = dst[0].Data
	}
	return append(dst[:0], checkpoints.Tensor{Name: "logits", Data: b.model.LogitsInto(data)})
}

func (b *bigramStep) setTensors(ck *checkpoints.Checkpoint) error {
	logits, err := ck.Tensor("logits", len(b.model.Logits()))
	if err != nil {
		return err
	}
	return b.model.SetLogits(logits)
}

// setTensors restores the logits and forgets the cached analysis.
func (b *bigram) setTensors(ck *checkpoints.Checkpoint) error {
	b.res, b.resStep = nil, -1
	return b.bigramStep.setTensors(ck)
}

// bigram is the learner of the paper's bigram over the graph's valid
// transitions: exact measurements and gradients from eval's analysis,
// sampled updates aggregated per transition (bigram_sampled.go).
type bigram struct {
	bigramStep
	g *tasks.Graph

	// Sampled trainers: the parameter of each CSR entry (-1 in frozen
	// rows) and PPO's constants.
	paramOf                []int32
	buf                    eval.Buffers // the rollouts' memory, reused from step to step
	advPos, advNeg, oldLog vec          // ppo
	share, refLog          vec          // ppo KL and entropy terms: state shares, reference log-probs

	// The policy and exact analysis measured at step resStep.
	probs   []float64
	res     *eval.Analysis
	resStep int

	// Exact RLVR's branch index (branchStarts): the branch starting at
	// each state, each branch's first advantage and its count.
	branchAt, branchK, branchN []int
}

// newBigram builds the sparse bigram learner and its trainer's loss.
func newBigram(t *Trainer, s Setup) (*bigram, error) {
	g, cfg := t.g, t.cfg
	model, err := graphBigram(g, s.Init, t.trained)
	if err != nil {
		return nil, err
	}
	if copyBranchProbs {
		if err := model.SetRepeats(branchRepeats(g)); err != nil {
			return nil, err
		}
	}
	b := &bigram{bigramStep: bigramStep{t: t, model: model}, g: g, resStep: -1}
	switch cfg.Trainer {
	case SFT:
		b.pairs, t.Supervised, err = SFTPairs(g, cfg.SupervisedBackward, t.rng)
	case Distill:
		if cfg.DistillTraces > 0 {
			b.pairs, err = SampledTeacherPairs(g, s.Teacher, cfg.DistillTraces, t.rng)
		} else {
			b.pairs, err = TeacherPairs(g, s.Teacher)
		}
	}
	if err != nil {
		return nil, err
	}
	if !cfg.Trainer.Clipped() { // the clipped objective's constants are its own
		b.in = newVec(model.Graph(), model.NumParams(), "constants")
	}
	var cost *G.Node
	switch k := cfg.Trainer; {
	case k.Exact():
		cost, err = model.WeightedLogLik(b.in.node) // sum_e pi(e) A(e) log pi(e): grad = grad of H_f
	case k.Sampled():
		cost, err = b.buildSampled()
	default:
		cost, err = model.WeightedLogLik(b.in.node) // sum_e -q(e) log pi(e)
		w := b.in.data()
		for k, e := range model.TrainableEntries() {
			w[k] = -b.pairs[e]
		}
	}
	if err != nil {
		return nil, err
	}
	return b, b.compile(cost)
}

// graphBigram is the bigram over the graph's valid transitions: the world
// model's mask is its support, so invalid transitions have probability
// exactly 0. The rows that are not trained are frozen: fork-incoming and
// leaf-incoming (Section 4.1), and the source row unless it is trained.
func graphBigram(g *tasks.Graph, init []float64, trained []bool) (*nn.Bigram, error) {
	frozen := make([]bool, g.NumStates())
	for s := range frozen {
		frozen[s] = !trained[s]
	}
	cfg := nn.BigramConfig{Vocab: g.NumStates(), Support: support(g), Frozen: frozen}
	if init != nil && len(init) != len(g.Next) {
		return nil, fmt.Errorf("trainers: initial logits: %d values for %d valid transitions", len(init), len(g.Next))
	}
	return nn.NewBigram(cfg, init)
}

// support is the graph's valid transitions as the model's support: its
// entries are the graph's CSR entries.
func support(g *tasks.Graph) nn.Support { return nn.Support{Offsets: g.Offsets, Next: g.Next} }

func (b *bigram) layout() string { return "bigram" }

// measure analyses the current policy exactly (and caches the analysis for
// the step that follows).
func (b *bigram) measure(_ context.Context, row *Row) error {
	t := b.t
	// The previous table's memory is reused (a fresh 130 kB a step, first
	// touched, cost more than the softmax at the paper's size).
	probs := b.model.ProbsInto(b.probs)
	b.res, b.resStep = nil, -1
	res, err := t.an.Analyze(probs)
	if err != nil {
		return fmt.Errorf("trainers: step %d: %w", t.done, err)
	}
	b.probs, b.res, b.resStep = probs, res, t.done
	row.HittingTime = res.HittingTime
	if t.cfg.Trainer.CrossEntropy() {
		row.Objective = crossEntropy(b.pairs, probs)
	}
	return nil
}

// current measures the policy unless it was measured at this step.
func (b *bigram) current() error {
	if b.res != nil && b.resStep == b.t.done {
		return nil
	}
	var row Row
	return b.measure(context.Background(), &row)
}

// valueAnalysis is the exact analysis of the current policy (baseline
// exact: its own chain).
func (b *bigram) valueAnalysis() (*eval.Analysis, error) {
	if err := b.current(); err != nil {
		return nil, err
	}
	return b.res, nil
}

// abcd adds a, b, c, d of the policy measured last: weighted by visits,
// and per copy.
func (b *bigram) abcd(row *Row) {
	if b.res != nil {
		setABCD(row, b.res, b.g, b.probs)
	}
}

// estimate is the exact hitting time of the current policy.
func (b *bigram) estimate(context.Context) (float64, error) {
	if err := b.current(); err != nil {
		return math.NaN(), err
	}
	return b.res.HittingTime, nil
}

// certify is the first-order certificate of the current policy over the
// rows the run trains.
func (b *bigram) certify() (*eval.Certificate, error) {
	return eval.Certify(b.g, b.model.Probs(), b.t.cfg.TrainSource)
}

// newAgent samples the current table.
func (b *bigram) newAgent() func() (eval.Agent, error) {
	probs := b.model.Probs()
	return func() (eval.Agent, error) { return eval.NewMarkovAgent(b.g, probs) }
}

// exactStep is one step of exact RLVR.
func (b *bigram) exactStep() error {
	if err := b.advantages(); err != nil {
		return err
	}
	return b.runStep(b.in)
}

// advantages fills the RLVR constants: for each trainable transition,
// pi(s,a) A(s,a) with A(s,a) = C(s,a) - sum_b pi(b|s) C(s,b) and C(s,a) =
// E_x[d_x(s) h_x(a)] (eval.CostWeights). The surrogate sum pi A log pi, with
// pi A held constant, has the gradient of sum pi A (the likelihood-ratio
// form, d pi = pi d log pi), so its autodiff gradient is the exact
// dH_f/dTheta = -dJ/dTheta of Lemma 'policygrad' (Appendix B),
// E_x[d_x(s) pi(a|s) (h_x(a) - hbar_x(s))]. Differences below 1e-12 of the
// row's scale are rounding (e.g. between symmetric branches or multiedges)
// and are set to exactly 0: sign descent would otherwise turn them into
// full +-lr steps and break the symmetry the paper's analysis relies on.
func (b *bigram) advantages() error {
	if err := b.current(); err != nil {
		return err
	}
	probs, g := b.probs, b.g
	c := b.res.CostWeights()
	out := b.in.data()
	if b.branchAt == nil {
		b.branchStarts()
	}
	k := 0
	for s := 0; s < len(b.t.trained); s++ {
		if j := b.branchAt[s]; j >= 0 {
			b.branchK[j] = k
			// A branch with an earlier one's rows and weights has its
			// advantages too: copied, bit for bit (the headline's 15).
			if r := b.res.WeightsCopiedFrom(j); r >= 0 && copyBranchAdvantages && b.branchN[r] == b.branchN[j] && b.branchK[r]+b.branchN[r] <= k {
				n := b.branchN[j]
				copy(out[k:k+n], out[b.branchK[r]:b.branchK[r]+n])
				k += n
				s = g.Branches[j].LeafIn() + 1 // the branch's last state
				continue
			}
		}
		if !b.t.trained[s] {
			continue
		}
		lo, hi := g.Offsets[s], g.Offsets[s+1]
		p, cs := probs[lo:hi], c[lo:hi]
		mean, scale := 0.0, 0.0
		for i, ci := range cs {
			mean += p[i] * ci
			if a := math.Abs(ci); a > scale {
				scale = a
			}
		}
		tol := 1e-12 * scale
		for i, ci := range cs {
			a := ci - mean
			if math.Abs(a) <= tol {
				a = 0
			}
			out[k+i] = p[i] * a
		}
		k += len(cs)
	}
	if k != len(out) {
		return fmt.Errorf("trainers: step %d: %d advantages for %d parameters", b.t.done, k, len(out))
	}
	return nil
}

// copyBranchProbs lets the bigram's softmax copy a branch's probabilities
// from an identical earlier branch (tests turn it off to compare).
var copyBranchProbs = true

// branchRepeats names each branch's rows (its states from Entry to the one
// after LeafIn, as branchStarts) as a repeat of the first earlier branch
// whose rows have the same lengths: the bigram copies its probabilities
// while its logits are that branch's, bit for bit.
func branchRepeats(g *tasks.Graph) []kernels.Repeat {
	var reps []kernels.Repeat
	rows := func(br tasks.Branch) (int, int) { return br.Start[0], br.LeafIn() + 2 - br.Start[0] }
	same := func(a, b, n int) bool {
		for i := range n {
			if g.Offsets[a+i+1]-g.Offsets[a+i] != g.Offsets[b+i+1]-g.Offsets[b+i] {
				return false
			}
		}
		return true
	}
	for j, br := range g.Branches {
		row, n := rows(br)
		for _, earlier := range g.Branches[:j] {
			if from, m := rows(earlier); m == n && from+n <= row && same(row, from, n) {
				reps = append(reps, kernels.Repeat{Row: row, From: from, Rows: n})
				break
			}
		}
	}
	return reps
}

// copyBranchAdvantages lets advantages copy a branch's advantages from an
// identical earlier branch (tests turn it off to compare).
var copyBranchAdvantages = true

// branchStarts indexes the branches for advantages: branchAt[s] is the
// branch whose first state s is (-1 elsewhere), branchN[j] the trained
// entries of branch j's states.
func (b *bigram) branchStarts() {
	g := b.g
	b.branchAt = make([]int, len(b.t.trained))
	for s := range b.branchAt {
		b.branchAt[s] = -1
	}
	b.branchK, b.branchN = make([]int, g.W()), make([]int, g.W())
	for j, br := range g.Branches {
		b.branchAt[br.Start[0]] = j
		for s := br.Start[0]; s < br.LeafIn()+2; s++ {
			if b.t.trained[s] {
				b.branchN[j] += g.Offsets[s+1] - g.Offsets[s]
			}
		}
	}
}
