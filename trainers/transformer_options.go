package trainers

import (
	"fmt"
	"math"
	"strings"

	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TransformerOptions configure the transformer learner: an nn.Transformer
// whose next-token distribution at step 0 equals the starting bigram's on
// every prefix (Appendix F, the transformer figure).
type TransformerOptions struct {
	// TransformerArch is the architecture (nn's): Init is "table", a
	// per-transition logit table B holding the starting bigram beside a
	// zero unembedding, at any width Dim; or "identity", the paper's
	// construction (one-hot embeddings, the bigram in the unembedding),
	// whose width is the vocabulary (Dim 0 here). Prompt puts the
	// rollout's target token before s0 -> f, where every position can
	// attend to it; the paper's bigram never sees the target.
	nn.TransformerArch
	// Ops is how the training graphs compute: nn.Fused (the default: custom
	// ops with hand-written backwards, fast) or nn.Stock (gorgonia's stock
	// ops only, every derivative by its autodiff: the design's literal
	// form, slow, and the reference the fused graphs are checked against).
	// Both train the same model to rounding.
	Ops nn.Ops `json:"ops"`
	// TableLR is the learning rate of the logit table B (Init "table"):
	// B is the bigram inside the transformer, and learns at the bigram's
	// rate while the attention and embeddings learn at the optimiser's
	// (smaller) one (default: DefaultTableLR).
	TableLR float64 `json:"table_lr"`
	// Stride is the number of trained positions per training window and
	// Windows the number of windows per fill of the graph; see cutWindows.
	Stride  int `json:"stride"`
	Windows int `json:"windows"`
	// EvalRollouts is the number of Monte Carlo rollouts behind the
	// hitting time of each metrics row (the transformer is not Markov, so
	// there is no exact analysis).
	EvalRollouts int `json:"eval_rollouts"`
	// EvalTokens bounds a measurement's work: it uses
	// EvalTokens / (the latest hitting time) rollouts when that is fewer
	// than EvalRollouts, and never fewer than min(200, EvalRollouts), so a
	// policy far from converged is measured with fewer rollouts and a wider
	// interval (0: always EvalRollouts).
	EvalTokens int `json:"eval_tokens"`
	// FinalRollouts is the number of Monte Carlo rollouts of a measurement
	// that decides the stop rule (when a periodic estimate passes it) and
	// of the final value (Trainer.Final), each on rollouts of its own;
	// FinalTokens bounds them as EvalTokens bounds the periodic ones.
	FinalRollouts int `json:"final_rollouts"`
	FinalTokens   int `json:"final_tokens"`
	// TrainTokens bounds the trained positions of an update: when an
	// epoch's windows hold more, each minibatch trains on a uniform random
	// subset of its windows weighted by the inverse sampling rate, an
	// unbiased estimate of the full gradient (subsample); 0: every window.
	TrainTokens int `json:"train_tokens"`
	// TableTokens bounds the tokens of an update's table pass (Init
	// "table", sampled RLVR; see transformer_table.go) in the same way,
	// per token rather than per window; 0 (the default): every sampled
	// token, as the bigram learns. Measured at the paper's size (PPO, 128
	// rollouts, ~7M tokens a batch): a budget of 1M left the hitting time
	// between 58.7k and 60.6k over steps 20-100; every token brought it
	// from 60.7k at step 20 to 41.5k by step 140.
	TableTokens int `json:"table_tokens"`
}

// DefaultTransformerOptions returns the transformer's options under
// trainer k: the table initialisation at width 64, one head, a window of
// 8 tokens with learned positions, no prompt, windows of 56 trained
// positions filled 256 at a time (the graph's speed needs rows by the
// hundred: nn's BenchmarkTransformerTrain), 2000 evaluation rollouts
// within 20M sampled tokens a row, 10,000 within 200M for a stop decision
// and the final value, a budget of 65,536 trained tokens per update, and
// the table's rate for k's default optimiser (DefaultTableLR).
func DefaultTransformerOptions(k Kind) TransformerOptions {
	return TransformerOptions{TransformerArch: nn.TransformerArch{Init: "table", Dim: 64, Heads: 1, Context: 8, Positional: "learned"}, Ops: nn.Fused, Stride: 56, Windows: 256,
		EvalRollouts: 2000, EvalTokens: 20_000_000, FinalRollouts: 10000, FinalTokens: 200_000_000, TrainTokens: 1 << 16,
		TableLR: DefaultTableLR(Defaults(k, TransformerModel))}
}

// DefaultTableLR is the logit table's default rate (TableLR) under cfg:
// for PPO 0.025 (the rate at which the bigram's PPO with 128 rollouts
// reaches the paper-size limit, measured there; the bigram's own default
// 0.05 was tuned at W=K=5, L=3), for the other sampled trainers the
// bigram's own default rate when the optimiser is the bigram's default
// one, and otherwise the optimiser's rate.
func DefaultTableLR(cfg Config) float64 {
	switch d := Defaults(cfg.Trainer, BigramModel).Optim; {
	case cfg.Trainer == PPO:
		return 0.025
	case cfg.Trainer.Sampled() && d.Name == cfg.Optim.Name:
		return d.LR
	}
	return cfg.Optim.LR
}

// Validate checks each field; the transformer's own checks come from nn.
func (o TransformerOptions) Validate() error {
	if o.Ops != nn.Fused && o.Ops != nn.Stock {
		return fmt.Errorf("trainers: transformer ops %q: want %s or %s", o.Ops, nn.Fused, nn.Stock)
	}
	switch o.Init {
	case "table":
		if o.Dim < 1 {
			return fmt.Errorf("trainers: transformer dim %d: want >= 1", o.Dim)
		}
		if o.Heads >= 1 && o.Dim%o.Heads != 0 {
			return fmt.Errorf("trainers: transformer heads %d: want a divisor of dim %d (%s)", o.Heads, o.Dim, divisors(o.Dim))
		}
	case "identity":
		if o.Dim != 0 {
			return fmt.Errorf("trainers: transformer dim %d: init identity's width is the vocabulary: set dim to 0 (-dim 0, or \"dim\": 0 in a config file)", o.Dim)
		}
	default:
		return fmt.Errorf("trainers: transformer init %q: want table or identity", o.Init)
	}
	if o.Heads < 1 || o.Context < 1 {
		return fmt.Errorf("trainers: transformer heads %d, context %d: want >= 1 each", o.Heads, o.Context)
	}
	if o.Positional != "learned" && o.Positional != "none" {
		return fmt.Errorf("trainers: transformer positional %q: want learned or none", o.Positional)
	}
	if o.Init == "table" && (!(o.TableLR > 0) || math.IsInf(o.TableLR, 0)) {
		return fmt.Errorf("trainers: transformer table_lr %v: want finite > 0", o.TableLR)
	}
	if o.Stride < 1 || o.Windows < 1 {
		return fmt.Errorf("trainers: transformer stride %d, windows %d: want >= 1 each", o.Stride, o.Windows)
	}
	if o.EvalRollouts < 2 {
		return fmt.Errorf("trainers: transformer eval_rollouts %d: want >= 2", o.EvalRollouts)
	}
	if o.EvalTokens < 0 {
		return fmt.Errorf("trainers: transformer eval_tokens %d: want >= 0 (0: no bound)", o.EvalTokens)
	}
	if o.FinalRollouts < 2 {
		return fmt.Errorf("trainers: transformer final_rollouts %d: want >= 2", o.FinalRollouts)
	}
	if o.FinalTokens < 0 {
		return fmt.Errorf("trainers: transformer final_tokens %d: want >= 0 (0: no bound)", o.FinalTokens)
	}
	if o.TrainTokens < 0 {
		return fmt.Errorf("trainers: transformer train_tokens %d: want >= 0 (0: train every sampled token)", o.TrainTokens)
	}
	if o.TableTokens < 0 {
		return fmt.Errorf("trainers: transformer table_tokens %d: want >= 0 (0: every sampled token)", o.TableTokens)
	}
	return nil
}

// divisors lists the smallest divisors of n, for messages (at most a
// dozen, searched up to a million: a huge prime width took minutes).
func divisors(n int) string {
	var ds []string
	for d := 1; d <= min(n, 1<<20) && len(ds) < 12; d++ {
		if n%d == 0 {
			ds = append(ds, fmt.Sprint(d))
		}
	}
	return "heads can be " + strings.Join(ds, ", ")
}

// tokens.
func checkMemory(g *tasks.Graph, cfg Config, opts TransformerOptions, tc nn.TransformerConfig, h0 float64) error {
	budget := g.Config.Budget()
	v, d, c, h := float64(tc.Vocab), float64(tc.Dim), float64(opts.Context), float64(opts.Heads)
	nnz := float64(tc.Support.NNZ())
	r := float64(maxRow(tc.Support))
	params := v*d*2 + c*d + 4*d*d + nnz              // E, U, P, the four (D, D), B
	solver := 3 * params                             // gradients and Adam's moments
	rowT := c + float64(opts.Stride) + 1             // tokens per window (in floats: no overflow)
	n := float64(opts.Windows) * (rowT + 1)          // positions of one fill (and the prompt)
	graph := n * ((6+h)*d + (c+2)*h + 6*r)           // records, attention weights, logits, per slot
	tables := (v + c) * (3 + h) * d * 2              // the samplers' snapshot, twice
	mc := 2 * float64(opts.EvalRollouts)             // a measurement's lengths and hits
	words := params + solver + 4*graph + tables + mc // the graph's buffers kept forward and backward
	if opts.Ops == nn.Stock {                        // each stock op allocates its output and gradient: the (N*R, D) gathers of the unembedding, some 60 (N, D) tensors
		words += n * (8*r*d + 60*d) // (1.07 GB peak measured at W=K=3, L=2 with the defaults)
	}
	batch := 0.0
	if cfg.Trainer.Sampled() {
		batch = 2 * float64(cfg.stepRollouts(h0)) * h0 * transitionWords(g, tc)
	}
	if need := 8 * (words + batch); need > float64(budget) {
		return fmt.Errorf("trainers: transformer: width %d, context %d, %d windows of %.0f tokens and %d rollouts of about %.0f tokens need about %.3g GiB, over the budget of %.3g GiB (max_bytes): lower -rollouts, -context, -stride, -windows, -dim or -eval-rollouts",
			tc.Dim, opts.Context, opts.Windows, rowT, cfg.stepRollouts(h0), h0, need/(1<<30), float64(budget)/(1<<30))
	}
	return nil
}

// transitionWords is the memory of one sampled transition, in 8-byte words:
// in the sampler's buffers its entry (0.5) and its row of log-probabilities
// (the mean out-degree), in the joined batch its entry again (the rows are
// views), and the trainer's per-token arrays (state, row start and table
// index at half a word each, the advantage), all of it twice: Go's
// collector at its default GOGC=100 lets the heap grow to twice its live
// data before it collects. (The train command runs it at GOGC=50, 1.5
// times, unless GOGC is set: the estimate stays the conservative one.
// Without a table pass there are no rows, and a log-probability a token in
// each buffer instead: less.)
func transitionWords(g *tasks.Graph, tc nn.TransformerConfig) float64 {
	return 2 * (0.5 + float64(tc.Support.NNZ())/float64(g.NumStates()) + 0.5 + 2.5)
}

func (l *transformer) transitionBytes() float64 { return l.tokenBytes }

// maxRow is the longest support row.
func maxRow(s nn.Support) int {
	m := 0
	for x := 0; x < s.Rows(); x++ {
		m = max(m, len(s.Row(x)))
	}
	return m
}
