package nn

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/ops"
)

// Window is one row of a TransformerBatch: the tokens at absolute positions
// Start, Start+1, ... of a longer sequence, and the sequence's prompt token.
// A window's first tokens may serve only as left context: the log-probs at
// a position equal the whole sequence's when the window holds the Context-1
// tokens before it (or starts at 0).
type Window struct {
	Prompt int   // prompt token in [0, Vocab) when the config has Prompt; ignored otherwise (use -1)
	Start  int   // absolute position of Tokens[0], >= 0
	Tokens []int // at most T tokens, each transition in the support
}

// Ops selects how a model's training graph is computed. Both compute the
// same function, and gorgonia's autodiff (G.Grad) chains the loss to the
// parameters through either; they differ in where the derivatives of the
// layers come from.
type Ops string

const (
	// Fused, the default, is a few custom ops of package ops, each a
	// plain-Go forward over the kernels of package kernels and a backward
	// written by hand (checked against Stock's autodiff in ops' tests):
	// fast, and the one sized for the paper's graphs.
	Fused Ops = "fused"
	// Stock is the same function built from gorgonia's stock ops only
	// (package stock), every derivative taken by gorgonia's symbolic
	// autodiff: the design's literal form, slow, and the reference the
	// fused path answers to.
	Stock Ops = "stock"
)

// Validate checks o is Fused or Stock.
func (o Ops) Validate() error {
	if o != Fused && o != Stock {
		return fmt.Errorf("nn: ops %q: want %q or %q", o, Fused, Stock)
	}
	return nil
}

// TransformerBatch is the forward graph of a Transformer for B rows of at
// most T tokens each. Fill it with SetWindows (or Set) before each run of
// the graph.
//
// Layout: position p = b*T + t (token t of row b) owns the R = longest
// support row slots [p*R, (p+1)*R) of LogProbs; slot p*R+j holds log
// pi(Row(x_t)[j] | x_0..x_t) for j < len(Row(x_t)) and a masked slot (its
// logit pushed to ops.MaskLogit, so its probability is exactly 0) after
// it. SlotEntries tells which support entry each slot is. Positions past
// the end of a row hold finite values to be ignored (weight them 0).
//
// With Prompt, each row's prompt is one more key that every position of
// the row attends to; it is not predicted and has no slots, so LogProbs,
// Taken, HasTaken and the weights of WeightedTakenLogLik have exactly the
// layout above (B*T positions over real tokens only) with or without
// Prompt.
type TransformerBatch struct {
	tr      *Transformer
	b, t, r int // rows, tokens per row, slots per position

	lay      *ops.Layout // tokens, positions and slot groupings, read by the fused ops
	takenIdx *G.Node     // (N) Int: logit slot of each taken token
	taken    *G.Node     // (N)
	logp     *G.Node     // (N*R)
	stock    *stockInputs
}

// Forward builds the forward graph for b rows of at most t tokens on the
// transformer's graph (with Prompt, each row also holds its prompt), of
// the given Ops. Call it once per transformer: the tape machine runs every
// node of the graph.
//
// Fused, the graph is three fused ops of package ops and a gather:
//
//	h = Attention(E, P, W_Q, W_K, W_V, W_O)     // tokens and positions -> (N, D)
//	h = LayerNorm(h, LN_gain, LN_bias)          // (N, D) -> (N, D), with LayerNorm
//	logp = Unembed(h, U, B)                     // (N, D) -> (N*R), slots of R per position
//	taken = Gather(logp, taken slots)           // (N*R) -> (N)
//
// Stock, the same function is built from gorgonia's stock ops (stock.Block,
// stock.LayerNorm, stock.Unembed, stock.Gather; forwardStock).
func (tr *Transformer) Forward(b, t int, o Ops) (fw *TransformerBatch, err error) {
	defer recoverGraph("transformer forward", &err)
	if tr.built {
		return nil, fmt.Errorf("nn: transformer forward: already built on this graph: want one forward per transformer")
	}
	if b <= 0 || t <= 0 {
		return nil, fmt.Errorf("nn: transformer forward: batch %d, length %d: want both >= 1", b, t)
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("nn: transformer forward: %w", err)
	}
	cfg, g := tr.cfg, tr.g
	n, r := b*t, cfg.maxRow()
	fw = &TransformerBatch{tr: tr, b: b, t: t, r: r, lay: ops.NewLayout(cfg.Support.Offsets, cfg.Support.Next, b, t, r, cfg.Context, cfg.Prompt)}
	fw.takenIdx = G.NewVector(g, G.Int, G.WithShape(n), G.WithName("taken_slots")) // (N)
	if o == Stock {
		fw.stock = newStockInputs(g, b, t, r, cfg.Prompt)
	}
	if err := fw.SetWindows(nil); err != nil {
		return nil, err
	}
	if o == Stock {
		err = fw.forwardStock()
	} else {
		err = fw.forwardFused()
	}
	if err != nil {
		return nil, fmt.Errorf("nn: transformer forward: %w", err)
	}
	tr.built = true
	return fw, nil
}

// forwardFused builds the graph of fused ops.
func (fw *TransformerBatch) forwardFused() error {
	tr := fw.tr
	h, err := ops.Attention(fw.lay, tr.cfg.Heads, tr.emb, tr.pos, tr.wq, tr.wk, tr.wv, tr.wo) // E, [P,] W_Q, W_K, W_V, W_O -> (N, D)
	if err != nil {
		return err
	}
	if tr.lnGain != nil {
		if h, err = ops.LayerNorm(h, tr.lnGain, tr.lnBias); err != nil { // (N, D), (D), (D) -> (N, D)
			return err
		}
	}
	if fw.logp, err = ops.Unembed(fw.lay, h, tr.unemb, tr.bias, tr.cfg.initName() == "identity"); err != nil { // (N, D), U, [B] -> (N*R)
		return err
	}
	fw.taken, err = ops.Gather(fw.logp, fw.takenIdx) // (N*R), (N) -> (N)
	return err
}

// Set fills the inputs with whole sequences starting at position 0:
// len(tokens) <= B sequences (missing ones are empty), each of at most T
// tokens in [0, Vocab), each transition x_t -> x_{t+1} in the support. nil
// empties the batch. With Prompt it fails: use SetWindows to give the
// prompts.
func (fw *TransformerBatch) Set(tokens [][]int) error {
	if fw.tr.cfg.Prompt {
		return fmt.Errorf("nn: transformer batch: set: the config has a prompt: want SetWindows")
	}
	rows := make([]Window, len(tokens))
	for b, seq := range tokens {
		rows[b] = Window{Prompt: -1, Tokens: seq}
	}
	return fw.SetWindows(rows)
}

// SetWindows fills the inputs with len(rows) <= B windows (missing rows are
// empty): row b's token t is at absolute position rows[b].Start + t and
// gets the positional embedding P[(Start+t) mod Context]. nil empties the
// batch. HasTaken(b, t) is true for t+1 < len(rows[b].Tokens).
func (fw *TransformerBatch) SetWindows(rows []Window) error {
	cfg := fw.tr.cfg
	if len(rows) > fw.b {
		return fmt.Errorf("nn: transformer batch: %d rows: want <= %d", len(rows), fw.b)
	}
	for b, w := range rows {
		if w.Start < 0 {
			return fmt.Errorf("nn: transformer batch: row %d start %d: want >= 0", b, w.Start)
		}
		if cfg.Prompt && (w.Prompt < 0 || w.Prompt >= cfg.Vocab) {
			return fmt.Errorf("nn: transformer batch: row %d prompt %d: want in [0, %d)", b, w.Prompt, cfg.Vocab)
		}
		if len(w.Tokens) > fw.t {
			return fmt.Errorf("nn: transformer batch: row %d has %d tokens: want <= %d", b, len(w.Tokens), fw.t)
		}
		for t, x := range w.Tokens {
			if x < 0 || x >= cfg.Vocab {
				return fmt.Errorf("nn: transformer batch: row %d token %d is %d: want in [0, %d)", b, t, x, cfg.Vocab)
			}
			if t > 0 && cfg.Support.Entry(w.Tokens[t-1], x) < 0 {
				return fmt.Errorf("nn: transformer batch: row %d transition %d -> %d at %d: not in the support", b, w.Tokens[t-1], x, t)
			}
		}
	}
	fw.lay.Fill(len(rows), func(b int) (int, int, []int) { return rows[b].Prompt, rows[b].Start, rows[b].Tokens })
	if err := letInts(fw.takenIdx, fw.lay.Taken()); err != nil {
		return fmt.Errorf("nn: transformer batch: %w", err)
	}
	if fw.stock != nil {
		if err := fw.stock.let(fw.lay); err != nil {
			return fmt.Errorf("nn: transformer batch: %w", err)
		}
	}
	return nil
}

// Positions returns the positions of a fill (B*T) and the slots of each
// (R), as the shapes of Taken and LogProbs.
func (fw *TransformerBatch) Positions() (n, r int) { return fw.b * fw.t, fw.r }

// Shape returns B, T (real tokens per row, the prompt slot not counted) and
// R (slots per position, the longest support row).
func (fw *TransformerBatch) Shape() (b, t, r int) { return fw.b, fw.t, fw.r }

// LogProbs returns the (B*T*R) node of next-token log-probabilities, in
// slots of R per position (see TransformerBatch). Read it with G.Read
// before compiling the machine.
func (fw *TransformerBatch) LogProbs() *G.Node { return fw.logp }

// SlotEntries returns, for each slot of LogProbs, its support entry index
// or -1 for a masked slot, as of the last Set. Do not modify it.
func (fw *TransformerBatch) SlotEntries() []int { return fw.lay.Entries() }

// Taken returns the (B*T) node whose entry b*T+t is log pi(x_{t+1} |
// [prompt,] ..., x_t) of row b, x_t = rows[b].Tokens[t] (the prompt is
// never an entry), for t+1 < len(row b); other entries hold a finite
// log-probability to be weighted 0 (see HasTaken).
func (fw *TransformerBatch) Taken() *G.Node { return fw.taken }

// HasTaken reports whether token t of row b has a taken next token in the
// last Set or SetWindows: t+1 < len(row b's tokens).
func (fw *TransformerBatch) HasTaken(b, t int) bool { return t+1 < fw.lay.Len(b) }

// WeightedTakenLogLik returns the scalar sum_p w[p] * Taken[p], w a (B*T)
// node of the transformer's graph filled by the caller (0 where HasTaken is
// false): -(1/count) on taken positions gives the cross-entropy, advantages
// give the policy-gradient surrogate.
func (fw *TransformerBatch) WeightedTakenLogLik(w *G.Node) (out *G.Node, err error) {
	defer recoverGraph("transformer weighted log-likelihood", &err)
	n := fw.b * fw.t
	if w == nil || w.Graph() != fw.tr.g || w.Dims() != 1 || w.Shape()[0] != n || w.Dtype() != G.Float64 {
		return nil, fmt.Errorf("nn: transformer weighted log-likelihood: weights must be a float64 (%d) node of the transformer's graph", n)
	}
	return G.Mul(w, fw.taken) // (N) . (N) -> ()
}
