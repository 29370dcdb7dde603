package trainers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TransformerOptions configure the transformer learner: an nn.Transformer
// whose next-token distribution at step 0 equals the starting bigram's on
// every prefix (Appendix F, the transformer figure).
type TransformerOptions struct {
	Heads      int    `json:"heads"`      // attention heads (the width is the vocabulary size, as the exact initialisation needs)
	Context    int    `json:"context"`    // attention window in tokens
	Positional string `json:"positional"` // "learned" or "none"
	LayerNorm  bool   `json:"layer_norm"` // layer norm before the unembedding
	// Prompt puts the rollout's target token before s0 -> f, where every
	// position can attend to it; the paper's bigram never sees the target.
	Prompt bool `json:"prompt"`
	// Stride is the number of trained positions per training window and
	// Windows the number of windows per fill of the graph; see cutWindows.
	Stride  int `json:"stride"`
	Windows int `json:"windows"`
	// EvalRollouts is the number of Monte Carlo rollouts behind the
	// hitting time of each metrics row (the transformer is not Markov, so
	// there is no exact analysis).
	EvalRollouts int `json:"eval_rollouts"`
}

// DefaultTransformerOptions returns one head, a window of 8 tokens with
// learned positions, no prompt, windows of 24 trained positions filled 32
// at a time, and 2000 evaluation rollouts.
func DefaultTransformerOptions() TransformerOptions {
	return TransformerOptions{Heads: 1, Context: 8, Positional: "learned", Stride: 24, Windows: 32, EvalRollouts: 2000}
}

// Validate checks each field; the transformer's own checks come from nn.
func (o TransformerOptions) Validate() error {
	if o.Heads < 1 || o.Context < 1 {
		return fmt.Errorf("trainers: transformer heads %d, context %d: want >= 1 each", o.Heads, o.Context)
	}
	if o.Positional != "learned" && o.Positional != "none" {
		return fmt.Errorf("trainers: transformer positional %q: want learned or none", o.Positional)
	}
	if o.Stride < 1 || o.Windows < 1 {
		return fmt.Errorf("trainers: transformer stride %d, windows %d: want >= 1 each", o.Stride, o.Windows)
	}
	if o.EvalRollouts < 2 {
		return fmt.Errorf("trainers: transformer eval_rollouts %d: want >= 2", o.EvalRollouts)
	}
	return nil
}

// TransformerTrainers are the trainers that train a transformer: the exact
// trainers need a Markov policy, and pretraining starts from zero logits
// while the transformer starts from a bigram.
var TransformerTrainers = []string{"sft", "distill", "reinforce", "ppo"}

// learner is a transformer being trained: its graph fill (one forward of
// Windows rows), the loss constants and the Monte Carlo measurements that
// stand in for the bigram's exact analysis.
type learner struct {
	opts TransformerOptions
	tr   *nn.Transformer
	fw   *nn.TransformerBatch
	t    int // tokens per row

	w                      vec       // (N) cross-entropy and reinforce weights
	advPos, advNeg, oldLog vec       // (N) ppo
	share, refLog          vec       // (N*R) ppo KL and entropy: slot weights, reference log-probs
	ref                    []float64 // the starting bigram's policy, CSR order
	states                 int       // the graph's states: target x's prompt token is states + x - 1

	mc           eval.MCResult // the latest Monte Carlo measurement
	mcStep       int           // the step it was taken at (-1: none)
	mcCap        int           // its horizon
	loss         float64       // cross-entropy of the latest batch
	teacher      []float64     // distill
	traces       [][]int       // distill with fixed traces: the traces as token sequences
	traceTargets []int         // and their targets
	nextData     int           // the next trace to use
}

// NewTransformer builds a trainer of a transformer initialised from the
// bigram with the given logits (one per valid transition of g in CSR
// order; nil: the pretrained uniform world model), for the sft, distill,
// reinforce and ppo trainers.
func NewTransformer(cfg Config, opts TransformerOptions, g *tasks.Graph, init, teacher []float64) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if !slices.Contains(TransformerTrainers, cfg.Trainer) {
		return nil, fmt.Errorf("trainers: trainer %s: the transformer trains with %v (the exact trainers need a Markov policy; it starts from a bigram, not from pretraining)", cfg.Trainer, TransformerTrainers)
	}
	if cfg.SupervisedBackward > 0 {
		return nil, fmt.Errorf("trainers: supervised_backward %v: the transformer's sft trains on golden paths only", cfg.SupervisedBackward)
	}
	if cfg.Baseline == "gae" {
		return nil, fmt.Errorf("trainers: baseline gae: the tabular critic assumes a Markov policy; the transformer takes state-target, state or batch")
	}
	if init == nil {
		init = make([]float64, len(g.Next))
	}
	if len(init) != len(g.Next) {
		return nil, fmt.Errorf("trainers: initial logits: %d values for %d valid transitions", len(init), len(g.Next))
	}
	// The rows the paper fixes stay at the starting bigram's (uniform,
	// deterministic) distribution: the agent samples them from it and the
	// loss skips them.
	t := &Trainer{cfg: cfg, g: g, an: eval.NewAnalyzer(g)}
	t.pcg = rand.NewPCG(cfg.Seed, 0x6a09e667f3bcc909)
	t.rng = rand.New(t.pcg)
	startBigram, err := graphBigram(g, init)
	if err != nil {
		return nil, err
	}
	l := &learner{opts: opts, mcStep: -1, ref: startBigram.Probs(), teacher: teacher, states: g.NumStates()}
	t.tf = l
	if cfg.Trainer == "reinforce" || cfg.Trainer == "ppo" {
		t.smp = &sampled{}
		if cfg.Baseline == "fork" {
			t.smp.fork = forkStates(g)
		}
	}
	start, err := t.an.Analyze(l.ref)
	if err != nil {
		return nil, fmt.Errorf("trainers: starting bigram: %w", err)
	}
	l.mcCap = int(math.Ceil(50 * start.HittingTime))
	pred := eval.Predict(g)
	switch cfg.Trainer {
	case "sft":
		t.limit = pred.SFTLimit
	case "distill":
		if teacher == nil {
			return nil, fmt.Errorf("trainers: distill needs a teacher policy")
		}
		r, err := t.an.Analyze(teacher)
		if err != nil {
			return nil, fmt.Errorf("trainers: teacher: %w", err)
		}
		t.limit = r.HittingTime
		if cfg.DistillTraces > 0 {
			b, err := teacherTraces(g, teacher, cfg.DistillTraces, int(math.Ceil(100*r.HittingTime)), cfg.Seed)
			if err != nil {
				return nil, err
			}
			l.traces, l.traceTargets = sequences(g, &b.Batch), b.Targets
		}
	default:
		t.limit = pred.RLVROptimum
	}

	tcfg := nn.TransformerConfig{Vocab: g.NumStates(), Support: support(g), Heads: opts.Heads, Context: opts.Context,
		Positional: opts.Positional, Prompt: opts.Prompt, LayerNorm: opts.LayerNorm}
	logits := init
	if opts.Prompt { // target tokens (tokenizer ids after the states), each with the row {s0 -> f}
		tcfg.Vocab += g.W()
		off := append([]int(nil), g.Offsets...)
		next := append([]int(nil), g.Next...)
		for range g.W() {
			next = append(next, 0)
			off = append(off, len(next))
			logits = append(logits[:len(logits):len(logits)], 0)
		}
		tcfg.Support = nn.Support{Offsets: off, Next: next}
	}
	tcfg.Dim = tcfg.Vocab
	if l.tr, err = nn.NewTransformerFromBigram(tcfg, logits, rand.New(rand.NewPCG(cfg.Seed, 0x3c6ef372fe94f82b))); err != nil {
		return nil, err
	}
	l.t = rowLen(opts.Stride, opts.Context)
	if l.fw, err = l.tr.Forward(opts.Windows, l.t); err != nil {
		return nil, err
	}
	cost, err := l.buildLoss(cfg)
	if err != nil {
		return nil, err
	}
	if t.solver, err = nn.NewSolver(cfg.Optim); err != nil {
		return nil, err
	}
	if t.step, err = nn.NewStep(cost, l.tr.Learnables(), t.solver); err != nil {
		return nil, err
	}
	return t, nil
}

// buildLoss adds the trainer's loss over the graph's items to the
// transformer's graph: the same losses as the bigram's (ppo.go), over
// tokens instead of transitions.
func (l *learner) buildLoss(cfg Config) (*G.Node, error) {
	g := l.tr.Graph()
	b, t, r := l.fw.Shape()
	n := b * t
	if cfg.Trainer != "ppo" {
		l.w = newVec(g, n, "token_weights")
		if cfg.Trainer == "reinforce" {
			return reinforceLoss(l.fw.Taken(), l.w.node)
		}
		return l.fw.WeightedTakenLogLik(l.w.node)
	}
	l.advPos, l.advNeg, l.oldLog = newVec(g, n, "adv+"), newVec(g, n, "adv-"), newVec(g, n, "logp_old")
	obj, err := ppoObjective(l.fw.Taken(), l.oldLog.node, l.advPos.node, l.advNeg.node, cfg.Clip)
	if err != nil {
		return nil, err
	}
	cost, err := G.Neg(obj)
	if err != nil {
		return nil, err
	}
	if cfg.KLCoef == 0 && cfg.EntropyCoef == 0 {
		return cost, nil
	}
	l.share, l.refLog = newVec(g, n*r, "slot_share"), newVec(g, n*r, "logp_ref")
	return addRegularizers(cost, l.fw.LogProbs(), l.refLog.node, l.share.node, cfg)
}

// setParams restores the transformer's parameters from one flat vector in
// Learnables order.
func (l *learner) setParams(flat []float64) error {
	var vals [][]float64
	for _, p := range l.tr.Learnables() {
		n := p.Shape().TotalSize()
		if len(flat) < n {
			return fmt.Errorf("transformer parameters: %d values too few", n-len(flat))
		}
		vals, flat = append(vals, flat[:n]), flat[n:]
	}
	if len(flat) > 0 {
		return fmt.Errorf("transformer parameters: %d values too many", len(flat))
	}
	return l.tr.SetParamValues(vals)
}

// prompt is the prompt token of target x (-1 without a prompt).
func (l *learner) prompt(x int) int {
	if !l.opts.Prompt {
		return -1
	}
	return l.states + x - 1
}

// Transformer is the transformer being trained (nil for a bigram trainer).
func (t *Trainer) Transformer() *nn.Transformer {
	if t.tf == nil {
		return nil
	}
	return t.tf.tr
}

// teacherTraces samples n traces of a Markov teacher, seeded.
func teacherTraces(g *tasks.Graph, teacher []float64, n, horizon int, seed uint64) (*eval.AgentBatch, error) {
	b, err := eval.AgentRollouts(g, func() (eval.Agent, error) { return eval.NewMarkovAgent(g, teacher) }, n, horizon, seed^0x510e527fade682d1)
	if err != nil {
		return nil, fmt.Errorf("trainers: teacher traces: %w", err)
	}
	for i, hit := range b.Hit {
		if !hit {
			return nil, fmt.Errorf("trainers: teacher trace %d did not reach its target within %d transitions", i, horizon)
		}
	}
	return b, nil
}
