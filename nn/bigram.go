package nn

import (
	"fmt"
	"math"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/ops"
)

// BigramConfig describes a bigram policy over a vocabulary of Vocab tokens.
type BigramConfig struct {
	Vocab   int     `json:"vocab"`   // number of tokens V (rows)
	Support Support `json:"support"` // allowed next tokens per row
	Frozen  []bool  `json:"frozen"`  // len V, or nil for none: frozen rows keep their logits and are not parameters
}

// Validate checks the support against Vocab and the length of Frozen.
func (c BigramConfig) Validate() error {
	if c.Vocab <= 0 {
		return fmt.Errorf("nn: bigram: vocab %d: want > 0", c.Vocab)
	}
	if err := c.Support.Validate(c.Vocab); err != nil {
		return fmt.Errorf("nn: bigram: %w", err)
	}
	if c.Frozen != nil && len(c.Frozen) != c.Vocab {
		return fmt.Errorf("nn: bigram: len(frozen) %d: want 0 or vocab = %d", len(c.Frozen), c.Vocab)
	}
	return nil
}

func (c BigramConfig) frozen(s int) bool { return c.Frozen != nil && c.Frozen[s] }

// Bigram is the paper's linear-softmax bigram policy pi(.|x) = softmax(<Theta, x>)
// for a one-hot current token x, restricted to a Support: row s has one
// logit per allowed next token and pi(a|s) = 0 exactly for every other a.
//
// Only the entries of rows that are not frozen are parameters: Theta is a
// vector of length P = their number, in support (entry) order, so the cost of
// a step is linear in the number of trainable transitions. Frozen rows keep
// the logits they were given.
//
// A Bigram owns its graph; build one loss on it (WeightedLogLik or
// ExpectedCost) and run it with one tape machine (NewStep).
type Bigram struct {
	cfg     BigramConfig
	logits  []float64 // len NNZ: frozen rows are read here, trainable ones from Theta
	entries []int     // len P: support entry of each parameter
	offsets []int     // row starts of the trainable rows inside Theta
	runs    []run     // the trainable entries as runs of consecutive entries

	g     *G.ExprGraph
	theta *G.Node // (P) learnable logits
	logp  *G.Node // (P) log pi(a|s) of the trainable entries, built by the first LogProbs

	reps      []kernels.Repeat // rows ProbsInto copies when their logits repeat earlier rows' (SetRepeats)
	copied    []bool           // ProbsInto's scratch: which repeats it copied
	thetaReps []kernels.Repeat // the repeats of trainable rows, as rows of Theta (WeightedLogLik's)
	logLik    bool             // a WeightedLogLik was built (with the repeats of its day)
}

// NewBigram builds a bigram with the given logits, one per support entry in
// entry order (len NNZ); nil logits mean all zeros, the uniform policy over
// each row's support. The configuration and the logits are copied.
func NewBigram(cfg BigramConfig, logits []float64) (b *Bigram, err error) {
	defer recoverGraph("bigram", &err)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Support = Support{Offsets: slices.Clone(cfg.Support.Offsets), Next: slices.Clone(cfg.Support.Next)}
	cfg.Frozen = slices.Clone(cfg.Frozen)
	nnz := cfg.Support.NNZ()
	b = &Bigram{cfg: cfg, logits: make([]float64, nnz), offsets: []int{0}}
	if logits != nil {
		if err := checkLogits(logits, nnz); err != nil {
			return nil, fmt.Errorf("nn: bigram: %w", err)
		}
		copy(b.logits, logits)
	}
	for s := 0; s < cfg.Vocab; s++ {
		if cfg.frozen(s) {
			continue
		}
		for e := cfg.Support.Offsets[s]; e < cfg.Support.Offsets[s+1]; e++ {
			b.entries = append(b.entries, e)
		}
		b.offsets = append(b.offsets, len(b.entries))
	}
	p := len(b.entries)
	if p == 0 {
		return nil, fmt.Errorf("nn: bigram: every row is frozen: want at least one trainable row")
	}
	for i, e := range b.entries {
		if k := len(b.runs) - 1; k >= 0 && b.runs[k].entry+b.runs[k].n == e {
			b.runs[k].n++
		} else {
			b.runs = append(b.runs, run{entry: e, param: i, n: 1})
		}
	}

	theta := make([]float64, p)
	for i, e := range b.entries {
		theta[i] = b.logits[e]
	}
	b.g = G.NewGraph()
	b.theta = G.NewVector(b.g, G.Float64, G.WithShape(p), G.WithName("theta"),
		G.WithValue(tensor.New(tensor.WithShape(p), tensor.WithBacking(theta)))) // (P)
	return b, nil
}

func checkLogits(logits []float64, nnz int) error {
	if len(logits) != nnz {
		return fmt.Errorf("got %d logits, want one per support entry: %d", len(logits), nnz)
	}
	for e, v := range logits {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("logit %d is %v: want finite", e, v)
		}
	}
	return nil
}

// Config returns the configuration the bigram was built with.
func (b *Bigram) Config() BigramConfig { return b.cfg }

// Graph returns the bigram's expression graph.
func (b *Bigram) Graph() *G.ExprGraph { return b.g }

// Theta returns the learnable logits node, (P).
func (b *Bigram) Theta() *G.Node { return b.theta }

// Learnables returns the parameters in a fixed order: just Theta.
func (b *Bigram) Learnables() G.Nodes { return G.Nodes{b.theta} }

// LogProbs returns the (P) node of log pi(a|s) for the trainable entries,
// in the order of TrainableEntries. To see its values, G.Read it before
// compiling: after a run its Value() can hold a later op's result (in the
// ExpectedCost graph, exp is computed in place over it).
//
// The node is built by the first call: a tape machine runs every node of
// its graph, and WeightedLogLik does not need it.
func (b *Bigram) LogProbs() *G.Node {
	if b.logp == nil {
		b.logp = G.Must(ops.SegmentLogSoftmax(b.theta, b.offsets)) // (P) -> (P); the offsets were checked by NewBigram
	}
	return b.logp
}

// NumParams returns P, the number of trainable entries.
func (b *Bigram) NumParams() int { return len(b.entries) }

// TrainableEntries returns, for each parameter, its support entry index
// (into Support.Next and the Logits/Probs tables). Do not modify it.
func (b *Bigram) TrainableEntries() []int { return b.entries }

// thetaData returns the current parameter values, updated in place by solvers.
func (b *Bigram) thetaData() []float64 { return b.theta.Value().Data().([]float64) }

// Logits returns a copy of the full logit table, one per support entry
// (len NNZ), frozen rows included.
func (b *Bigram) Logits() []float64 { return b.LogitsInto(nil) }

// LogitsInto writes the full logit table into dst's memory when it holds
// NNZ values (a new slice otherwise) and returns it.
func (b *Bigram) LogitsInto(dst []float64) []float64 {
	if cap(dst) < len(b.logits) {
		dst = make([]float64, len(b.logits))
	}
	dst = dst[:len(b.logits)]
	theta, at := b.thetaData(), 0 // the frozen entries before at are copied
	for _, r := range b.runs {
		copy(dst[at:r.entry], b.logits[at:r.entry])
		copy(dst[r.entry:r.entry+r.n], theta[r.param:r.param+r.n])
		at = r.entry + r.n
	}
	copy(dst[at:], b.logits[at:])
	return dst
}

// run is a run of n consecutive support entries from entry whose logits
// are the parameters from param on.
type run struct{ entry, param, n int }

// CheckFinite returns an error naming the first parameter that is NaN or
// infinite, nil when every one is finite (frozen rows are checked when
// they are set).
func (b *Bigram) CheckFinite() error {
	theta := b.thetaData()
	if sq := kernels.SumSquares(theta); !math.IsNaN(sq) && !math.IsInf(sq, 0) {
		return nil // a NaN or infinite entry would make the sum one
	}
	for i, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("nn: bigram: parameter theta[%d] is %v", i, v)
		}
	}
	return nil
}

// SetLogits replaces the full logit table (len NNZ, finite), frozen rows
// included. Theta is overwritten in place, so tape machines and solvers
// built on the bigram see the new values.
func (b *Bigram) SetLogits(logits []float64) error {
	if err := checkLogits(logits, len(b.logits)); err != nil {
		return fmt.Errorf("nn: bigram: set logits: %w", err)
	}
	copy(b.logits, logits)
	theta := b.thetaData()
	for i, e := range b.entries {
		theta[i] = logits[e]
	}
	return nil
}

// Probs returns the full transition table pi(a|s), one per support entry
// (len NNZ), computed in plain Go from the current logits with the same
// stable row-wise softmax as the graph.
func (b *Bigram) Probs() []float64 { return b.ProbsInto(nil) }

// ProbsInto is Probs written into dst's memory when it holds NNZ values (a
// new slice otherwise).
func (b *Bigram) ProbsInto(dst []float64) []float64 {
	p := b.LogitsInto(dst)
	if len(b.reps) > 0 {
		kernels.SoftmaxRowsRepeat(p, p, b.cfg.Support.Offsets, b.reps, b.copied)
	} else {
		kernels.SoftmaxRows(p, p, b.cfg.Support.Offsets)
	}
	return p
}

// SetRepeats names runs of rows that often hold the same logits as
// earlier rows of the same lengths (a graph's branches while the policy is
// symmetric): Probs and ProbsInto then copy the probabilities of a run
// whose logits equal its source's bit for bit, giving the same values as
// computing them (kernels.SoftmaxRowsRepeat). nil computes every row.
//
// WeightedLogLik's log-softmax copies the runs of a repeat's rows that are
// trainable in it and in its source the same way; set them before
// building it.
func (b *Bigram) SetRepeats(reps []kernels.Repeat) error {
	if err := kernels.CheckRepeats(b.cfg.Support.Offsets, reps); err != nil {
		return fmt.Errorf("nn: bigram: %w", err)
	}
	if b.logLik {
		return fmt.Errorf("nn: bigram: repeats set after the weighted log-likelihood was built: set them before")
	}
	b.reps, b.copied, b.thetaReps = slices.Clone(reps), make([]bool, len(reps)), nil
	row := make([]int, b.cfg.Vocab) // each row's index among the trainable rows, -1 when frozen
	k := 0
	for s := range row {
		row[s] = -1
		if !b.cfg.frozen(s) {
			row[s], k = k, k+1
		}
	}
	for _, r := range reps { // each run of rows trainable in both the repeat and its source
		for i := 0; i < r.Rows; {
			n := 0
			for i+n < r.Rows && row[r.Row+i+n] >= 0 && row[r.From+i+n] >= 0 {
				n++
			}
			if n > 0 {
				b.thetaReps = append(b.thetaReps, kernels.Repeat{Row: row[r.Row+i], From: row[r.From+i], Rows: n})
			}
			i += max(n, 1)
		}
	}
	return kernels.CheckRepeats(b.offsets, b.thetaReps)
}

// WeightedLogLik returns the scalar sum_e w[e] * log pi[e] over the trainable
// entries, w a (P) node of b.Graph(). A cross-entropy loss passes
// w = -(empirical pair frequencies); its gradient comes from G.Grad.
func (b *Bigram) WeightedLogLik(w *G.Node) (out *G.Node, err error) {
	defer recoverGraph("bigram weighted log-likelihood", &err)
	if err := b.checkWeights(w); err != nil {
		return nil, fmt.Errorf("nn: bigram weighted log-likelihood: %w", err)
	}
	b.logLik = true
	if out, err = ops.SegmentLogLikRepeat(b.theta, w, b.offsets, b.thetaReps); err != nil { // (P), (P) -> (): w . log softmax per row
		return nil, fmt.Errorf("nn: bigram weighted log-likelihood: %w", err)
	}
	return out, nil
}

// ExpectedCost returns the scalar sum_e c[e] * pi[e] over the trainable
// entries, c a (P) node of b.Graph(). With c held constant (an input filled
// with G.Let) its gradient is sum_a c(s,a) dpi(a|s)/dTheta, the
// policy-gradient surrogate.
func (b *Bigram) ExpectedCost(c *G.Node) (out *G.Node, err error) {
	defer recoverGraph("bigram expected cost", &err)
	if err := b.checkWeights(c); err != nil {
		return nil, fmt.Errorf("nn: bigram expected cost: %w", err)
	}
	pi, err := G.Exp(b.LogProbs()) // (P) -> (P)
	if err != nil {
		return nil, fmt.Errorf("nn: bigram expected cost: %w", err)
	}
	if out, err = G.Mul(c, pi); err != nil { // (P) . (P) -> ()
		return nil, fmt.Errorf("nn: bigram expected cost: %w", err)
	}
	return out, nil
}

// checkWeights checks that w is a float64 (P) node of the bigram's graph.
func (b *Bigram) checkWeights(w *G.Node) error {
	if w == nil {
		return fmt.Errorf("nil weights node")
	}
	if w.Graph() != b.g {
		return fmt.Errorf("weights node %q is not in the bigram's graph", w.Name())
	}
	if w.Dims() != 1 || w.Shape().TotalSize() != len(b.entries) || w.Dtype() != G.Float64 {
		return fmt.Errorf("weights node %q is %v %v: want float64 (%d)", w.Name(), w.Dtype(), w.Shape(), len(b.entries))
	}
	return nil
}
