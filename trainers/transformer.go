package trainers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
)

func init() {
	register(TransformerModel, modelSpec{
		kinds: []Kind{SFT, Distill, Reinforce, PPO, GRPO, RLOO, DrGRPO},
		why:   "the exact trainers need a Markov policy; it starts from a bigram, not from pretraining",
		// Sampled RLVR: the defaults study's choice (docs/defaults.md,
		// written by `train reproduce defaults -docs docs`; its reading,
		// docs/defaults-notes.md): grids of three rates over 3 seeds at
		// W=K=5, L=3, PPO checked at the paper's size.
		defaults: func(k Kind, d *Config) {
			// PPO: Adam 1e-3 for the attention and embeddings (at W=K=5,
			// 5.2M sampled tokens to within 5% against 6.8M at 3e-4; 3e-3,
			// faster there, diverges at the paper's size with table rate
			// 0.05, and the rule takes only rates seen to work there;
			// 1e-3 stops itself within 5% there on seeds 1-3). REINFORCE,
			// GRPO, RLOO and Dr. GRPO: Adam 3e-3, the grids' best (the
			// group-relative three get no rate to their stop within 30M
			// tokens at W=K=5; 3e-3 ends lowest). The table's own rate is
			// TransformerOptions.TableLR. 128 rollouts, the fork baseline,
			// and a horizon of 20 hitting times: the paper's 2 cuts many
			// early rollouts, and their bootstrapped returns at the fork
			// then push the policy away from the branches' entries before
			// it improves (the bigram under the same PPO does the same:
			// 2.2G sampled tokens to within 5% of the limit at horizon 2,
			// 1.7G at 20).
			// Its hitting time is a Monte Carlo estimate: a run stops once
			// a confirmation of 10,000 fresh rollouts puts the whole 95%
			// interval within 5% of the optimum, and its rows come every
			// LogEvery steps, so patience counts 10 of them.
			d.Until, d.LRDecay, d.Patience, d.Halvings = 0.05, "plateau", 100, 3
			if k.Sampled() {
				lr := 0.003
				if k == PPO {
					lr = 0.001
				}
				d.Optim = solvers.Config{Name: "adam", LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
				d.Rollouts = 128
				// The group-relative trainers keep their group baseline
				// and the paper's horizon of 2: at 3e-4, with 20, GRPO at
				// W=K=3, L=2 climbed from 273 to 6392 in 100 steps (seed
				// 1), with 2 it reached 38. At 3e-3 the two are mixed: 2
				// ends at 38.9 and 41.3 (seeds 1, 2), 20 at 46.7 and 35.9
				// (docs/sampled-rlvr.md; the limit is 35).
				if !k.Grouped() {
					d.Baseline, d.HorizonFactor = "fork", 20
				}
				// PPO and REINFORCE draw walks with hindsight targets
				// (Config.Hindsight): the same gradient in expectation on
				// about a fifth of the tokens at the paper's size, where
				// PPO then stops within 5% in 6-7 minutes on seeds 1-3
				// against 12-16 on independent rollouts
				// (docs/sampled-rlvr.md, "Hindsight targets"). A prompted
				// transformer sees its target, so a prompt turns the default
				// off (experiment.Given.Resolve).
				d.Hindsight = ownBaseline(k)
			}
		},
		validate: func(cfg Config, s Setup) error {
			if cfg.Baseline == "gae" {
				return fmt.Errorf("trainers: baseline gae: the tabular critic assumes a Markov policy; the transformer takes exact, fork, state-target, state or batch")
			}
			if cfg.hindsight() && s.Transformer.Prompt {
				return fmt.Errorf("trainers: hindsight: with a prompt the transformer sees its target, so its walk toward one target is not a walk toward the others: want hindsight off, or no prompt")
			}
			if cfg.Baseline == "exact" && cfg.Trainer.Sampled() && s.Transformer.Init == "identity" {
				return fmt.Errorf("trainers: baseline exact: the transformer's values are those of its table B, which init-mode identity has none of: want init-mode table, or another baseline")
			}
			return s.Transformer.Validate()
		},
		build: func(t *Trainer, s Setup) (learner, error) { return newTransformer(t, s) },
	})
}

// transformer is the learner of a transformer: its two passes, the
// sampler's agents and the Monte Carlo measurements that stand in for the
// bigram's exact analysis. Its files: this one (the learner, its passes and
// their solver groups), transformer_pass.go (a pass: its graph's items,
// the trainer's loss over them and its step), transformer_update.go (the
// updates of every trainer, through both passes), transformer_table.go (the
// table pass's tokens), transformer_measure.go (measurements and
// checkpointed tensors), transformer_agent.go (the sampler as an agent),
// transformer_attention.go (where attention goes), transformer_options.go
// (options and the memory estimate) and windows.go (cutting rollouts into
// windows).
type transformer struct {
	t    *Trainer
	opts TransformerOptions
	tok  *tokenizer.Vocab
	tr   *nn.Transformer
	fw   *nn.TransformerBatch // the windows pass's graph
	tbl  *nn.TableBatch       // the table pass's graph (nil without a table pass)
	solv solvers.Solver
	rowT int // tokens per row

	// The two passes of an update (newPasses): windows, always; table,
	// with Init "table" in sampled RLVR only (nil otherwise).
	windows, table *pass

	ref     []float64 // the starting bigram's policy, CSR order
	teacher []float64 // distill
	// tableProbs is the bigram of the table B, CSR order (baseline exact:
	// valueAnalysis), reused from step to step.
	tableProbs []float64

	st transformerState
	// tableIn is the table pass's tokens of each minibatch, reused from
	// update to update (transformer_table.go).
	tableIn []tableTokens
	oldLog  []float64    // a table fill's log-probabilities at sampling (trainTable)
	replay  []float64    // the ratio replay's ratios, trained token after trained token (ratios)
	buf     eval.Buffers // the rollouts' memory, reused from step to step
	// rowStart is where each token of the buffers' batch starts in its
	// rollout's rows (rowStarts), for draw number draw (draws counts the
	// batches rollouts sampled into the buffers).
	rowStart struct {
		draw  int
		batch *eval.AgentBatch
		of    []int32
	}
	draws  int
	drawn  drawKey // what buf's batch was drawn for (rollouts)
	mcCap  int     // the Monte Carlo horizon
	startH float64 // the starting bigram's exact hitting time
	// tokenBytes is a sampled transition's memory (transitionWords).
	tokenBytes float64
	traces     tokenSeqs // distill with fixed traces
	// passTime, tableTime, sampleTime and replayTime are the wall time
	// spent in the windows pass, in the table pass, drawing rollouts and in
	// PPO's ratio replay so far: the benchmarks report the tokens the
	// windows pass trains per second of it, and each one's seconds a step.
	passTime, tableTime, sampleTime, replayTime time.Duration
	replays                                     int // ratio replays run (ratioStats.later)
}

// transformerState is what a transformer learner checkpoints besides its
// parameters: its latest Monte Carlo measurement, the cross-entropy of its
// latest batch and, for distillation from fixed traces, the next trace.
type transformerState struct {
	MC        eval.MCResult `json:"mc"`
	MCStep    int           `json:"mc_step"` // the step MC was taken at (-1: none)
	Loss      float64       `json:"loss"`
	NextTrace int           `json:"next_trace"`
	// Est is the hitting time the horizon of step EstStep's rollouts is
	// taken from (estimate), fixed at the step's first use.
	Est float64 `json:"horizon_estimate"`
	// Bound is the batch's lower bound when MC was measured afresh
	// because some of the batch's rollouts missed (0: none): the horizon
	// comes from it.
	Bound   float64 `json:"horizon_bound,omitempty"`
	EstStep int     `json:"horizon_step"`
	// Measured counts the tokens sampled by fresh measurements so far.
	Measured int `json:"measured_tokens"`
}

// tokenSeq is a sequence of tokens toward a target (its prompt).
type tokenSeq struct {
	tokens []int
	target int
}

// seqSource is where the windows pass reads its sequences: tokenSeqs (sft's
// golden paths, distill's traces) or a batch's rollouts (rolloutSeqs).
type seqSource interface {
	// window appends tokens [from, to] of sequence i to dst.
	window(dst []int, i, from, to int) []int
	target(i int) int
}

// tokenSeqs are sequences held token by token.
type tokenSeqs []tokenSeq

func (s tokenSeqs) window(dst []int, i, from, to int) []int {
	return append(dst, s[i].tokens[from:to+1]...)
}
func (s tokenSeqs) target(i int) int { return s[i].target }

// rolloutSeqs are a batch's rollouts as token sequences without a copy of
// their tokens: a state id is its token id (tokenizer.Vocab.Encode), so
// rollout i's tokens are the states its transitions leave (states, from
// the batch's walk, s0 first) and then the state its last one enters.
// (Copied out as ints they were 8 bytes a sampled token, a twentieth of a
// paper-size run's memory.)
type rolloutSeqs struct {
	b      *eval.Batch
	states []int32
	next   []int // the graph's
}

// len is rollout i's number of tokens: its transitions plus one.
func (s rolloutSeqs) len(i int) int { return s.b.Starts[i+1] - s.b.Starts[i] + 1 }

func (s rolloutSeqs) window(dst []int, i, from, to int) []int {
	lo, hi := s.b.Starts[i], s.b.Starts[i+1]
	for _, x := range s.states[lo+from : lo+min(to+1, hi-lo)] {
		dst = append(dst, int(x))
	}
	if to == hi-lo { // the state the last transition enters (s0 when none)
		x := 0
		if hi > lo {
			x = s.next[s.b.Entries[hi-1]]
		}
		dst = append(dst, x)
	}
	return dst
}
func (s rolloutSeqs) target(i int) int { return s.b.Targets[i] }

// newTransformer builds a transformer initialised from the bigram with
// logits s.Init (nil: the pretrained uniform world model). The rows the
// paper fixes stay at the starting bigram's (uniform, deterministic)
// distribution: the agent samples them from it and the loss skips them.
func newTransformer(t *Trainer, s Setup) (*transformer, error) {
	g, cfg, opts := t.g, t.cfg, s.Transformer
	init := s.Init
	if init == nil {
		init = make([]float64, len(g.Next))
	}
	startBigram, err := graphBigram(g, init, t.trained)
	if err != nil {
		return nil, err
	}
	l := &transformer{t: t, opts: opts, tok: tokenizer.New(g), ref: startBigram.Probs(), teacher: s.Teacher, st: transformerState{MCStep: -1, EstStep: -1}}
	start, err := t.an.Analyze(l.ref)
	if err != nil {
		return nil, fmt.Errorf("trainers: starting bigram: %w", err)
	}
	l.mcCap, l.startH = int(math.Ceil(50*start.HittingTime)), start.HittingTime
	if cfg.Trainer == Distill && cfg.DistillTraces > 0 {
		r, err := t.an.Analyze(s.Teacher)
		if err != nil {
			return nil, fmt.Errorf("trainers: teacher: %w", err)
		}
		b, err := teacherTraces(context.Background(), g, s.Teacher, cfg.DistillTraces, int(math.Ceil(100*r.HittingTime)), cfg.Seed)
		if err != nil {
			return nil, err
		}
		if l.traces, err = l.sequences(&b.Batch); err != nil {
			return nil, err
		}
	}

	// The model's rows are the tokenizer's states and, with a prompt, its
	// target tokens (tokenizer.Vocab.ForModel), each target with the row
	// {s0 -> f}: the prompt is never predicted.
	l.tok = l.tok.ForModel(opts.Prompt)
	tcfg := nn.TransformerConfig{Vocab: l.tok.Rows(), Support: support(g), TransformerArch: opts.TransformerArch}
	logits := init
	if opts.Prompt {
		off := append([]int(nil), g.Offsets...)
		next := append([]int(nil), g.Next...)
		for range tcfg.Vocab - g.NumStates() {
			next = append(next, 0)
			off = append(off, len(next))
			logits = append(logits[:len(logits):len(logits)], 0)
		}
		tcfg.Support = nn.Support{Offsets: off, Next: next}
	}
	if opts.Init == "identity" { // the paper's construction: width = vocabulary
		tcfg.Dim = tcfg.Vocab
		if tcfg.Dim%opts.Heads != 0 {
			return nil, fmt.Errorf("trainers: transformer heads %d: init identity's width is the vocabulary, %d: want a divisor of it (%s)", opts.Heads, tcfg.Dim, divisors(tcfg.Dim))
		}
	}
	if err := checkMemory(g, cfg, opts, tcfg, start.HittingTime); err != nil {
		return nil, err
	}
	l.tokenBytes = 8 * transitionWords(g, tcfg)
	if l.tr, err = nn.NewTransformerFromBigram(tcfg, logits, rand.New(rand.NewPCG(cfg.Seed, 0x3c6ef372fe94f82b))); err != nil {
		return nil, err
	}
	if err := l.newPasses(cfg, opts); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// tableChunk is the table pass's tokens per fill of its graph: with stock
// ops, whose every node allocates its output and gradient at every run,
// fewer (a small batch would otherwise pay for a mostly empty fill).
const (
	tableChunk      = 1 << 15
	stockTableChunk = 1 << 12
)

// newPasses builds the transformer's solver groups and its two passes,
// each a graph of the model's log-probabilities with the trainer's loss
// over them and a Step on its group (every parameter belongs to one
// group, and one pass trains it):
//
//   - the windows pass (transformer_update.go) trains, on windows of the
//     batch's sequences (a subsample beyond TrainTokens), every parameter
//     but the logit table B: E, P, W_Q, W_K, W_V, W_O, the layer norm's
//     and U, solver group 0 at the optimiser's rate. B enters its graph at
//     its current value, frozen (not differentiated);
//   - the table pass (transformer_table.go) trains B alone, on every
//     sampled token (a subsample beyond TableTokens), solver group 1 at
//     TableLR. Its logits are B plus the rest of each logit, LN(h) . U,
//     frozen at its value when the batch was sampled (the sampler's);
//     every other parameter is frozen.
//
// Both passes minimise the trainer's own loss over their items (lossOf:
// REINFORCE's, or PPO's clipped surrogate with its optional KL and entropy
// terms, each token's ratio against its log-probability when sampled), in
// every minibatch of every epoch, the table pass first. The table pass exists with Init "table" in sampled RLVR;
// otherwise the windows pass trains every parameter (with Init "table", B
// in solver group 1 at TableLR, the rest in group 0).
func (l *transformer) newPasses(cfg Config, opts TransformerOptions) error {
	ps := l.tr.Learnables()
	l.rowT = rowLen(opts.Stride, opts.Context)
	var err error
	if l.fw, err = l.tr.Forward(opts.Windows, l.rowT, opts.Ops); err != nil {
		return err
	}
	if opts.Init != "table" || !cfg.Trainer.Sampled() {
		if opts.Init != "table" {
			l.solv, err = solvers.New(cfg.Optim)
		} else {
			l.solv, err = l.tableGroups(cfg, opts)
		}
		if err != nil {
			return err
		}
		l.windows, err = newPass(cfg, opts.Ops, l.fw, l.tr.Graph(), ps, l.solv)
		return err
	}
	groups, err := l.tableGroups(cfg, opts)
	if err != nil {
		return err
	}
	l.solv = groups
	rest, b := ps[:len(ps)-1], ps[len(ps)-1]
	if l.windows, err = newPass(cfg, opts.Ops, l.fw, l.tr.Graph(), rest, groups.Solver(0)); err != nil {
		return err
	}
	g := G.NewGraph()
	table := G.NewVector(g, G.Float64, G.WithShape(b.Shape()[0]), G.WithName("B"), G.WithValue(b.Value())) // shares B's values
	width := 0
	for s, ok := range l.t.trained {
		if ok {
			width = max(width, len(l.t.g.Row(s)))
		}
	}
	chunk := tableChunk
	if opts.Ops == nn.Stock {
		chunk = stockTableChunk
	}
	if l.tbl, err = nn.NewTableBatch(table, chunk, width, opts.Ops, !surrogateOnly(cfg)); err != nil {
		return err
	}
	l.table, err = newPass(cfg, opts.Ops, l.tbl, g, G.Nodes{table}, groups.Solver(1))
	return err
}

// tableGroups is the solver of Init "table": B (the bigram inside, the
// last learnable) in group 1 at TableLR, every other parameter in group 0
// at the optimiser's rate, each group with its own state.
func (l *transformer) tableGroups(cfg Config, opts TransformerOptions) (*solvers.Groups, error) {
	n := len(l.tr.Learnables())
	rest := make([]int, n-1)
	for i := range rest {
		rest[i] = i
	}
	table := cfg.Optim
	table.LR = opts.TableLR
	return solvers.NewGroups(n, []solvers.Group{{Config: cfg.Optim, Params: rest}, {Config: table, Params: []int{n - 1}}})
}

// prompt is the prompt token of target x (-1 without a prompt).
func (l *transformer) prompt(x int) int {
	if !l.opts.Prompt {
		return -1
	}
	id, err := l.tok.Target(x)
	if err != nil {
		panic(err) // targets come from the graph
	}
	return id
}

// sequences turns a batch into token sequences through the tokenizer: the
// states of rollout i, s0 -> f first, toward its target; transition t of
// rollout i is item b.Starts[i]+t.
func (l *transformer) sequences(b *eval.Batch) (tokenSeqs, error) {
	g := l.t.g
	buf := make([]int, len(b.Entries)+len(b.Targets)) // rollout i's tokens from b.Starts[i]+i on
	seqs := make(tokenSeqs, len(b.Targets))
	errs := make([]error, len(seqs))
	kernels.ParallelEach(len(seqs), func(i int) {
		lo, hi := b.Starts[i]-b.Starts[0]+i, b.Starts[i+1]-b.Starts[0]+i+1
		ids := buf[lo:hi:hi]
		ids[0] = 0
		for k, e := range b.Entries[b.Starts[i]:b.Starts[i+1]] {
			ids[k+1] = g.Next[e]
		}
		_, errs[i] = l.tok.EncodeTo(ids[:0], ids) // state ids are token ids: checked in place
		seqs[i] = tokenSeq{tokens: ids, target: b.Targets[i]}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return seqs, nil
}

func (l *transformer) solver() solvers.Solver { return l.solv }
func (l *transformer) close() error {
	var err error
	for _, p := range []*pass{l.windows, l.table} {
		if p != nil {
			err = errors.Join(err, p.step.Close())
		}
	}
	return err
}
func (l *transformer) state() any              { return &l.st }
func (l *transformer) layout() string          { return "transformer" }
func (l *transformer) vocab() *tokenizer.Vocab { return l.tok }

// valueAnalysis is the exact analysis of the bigram the table B defines
// (baseline exact): softmax(B) in the trained rows, which is the
// transformer's own policy while U = 0, and the starting bigram in the rows
// the paper fixes, which the transformer samples from it.
func (l *transformer) valueAnalysis() (*eval.Analysis, error) {
	g, t := l.t.g, l.t
	b := l.tr.TableLogits()
	if b == nil {
		return nil, fmt.Errorf("the transformer has no table B (init-mode identity)")
	}
	p := kernels.Grow(l.tableProbs, len(g.Next))
	kernels.SoftmaxRows(p, b[:len(g.Next)], g.Offsets)
	for s := range g.NumStates() {
		if !t.trained[s] {
			copy(p[g.Offsets[s]:g.Offsets[s+1]], l.ref[g.Offsets[s]:g.Offsets[s+1]])
		}
	}
	l.tableProbs = p
	return t.an.Analyze(p)
}
