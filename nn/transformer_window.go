package nn

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
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

// TransformerBatch is the forward graph of a Transformer for B rows of at
// most T tokens each. Fill it with SetWindows (or Set) before each run of
// the graph.
//
// Layout: position p = b*T + t (token t of row b) owns the R = longest
// support row slots [p*R, (p+1)*R) of LogProbs; slot p*R+j holds log
// pi(Row(x_t)[j] | x_0..x_t) for j < len(Row(x_t)) and a masked slot (its
// logit pushed to -1e9, so its probability is exactly 0) after it.
// SlotEntries tells which support entry each slot is. Positions past the end
// of a row hold finite values to be ignored (weight them 0).
//
// With Prompt, the attention runs over rows of T+1 slots, the row's prompt
// in slot 0 and token t in slot t+1; the prompt slot's output is dropped
// before the unembedding, so LogProbs, Taken, HasTaken and the weights of
// WeightedTakenLogLik have exactly the layout above (B*T positions over
// real tokens only) with or without Prompt.
type TransformerBatch struct {
	tr         *Transformer
	b, t, r, l int // rows, tokens per row, slots per position, attention slots per row (t or t+1)

	tok, pos, sel, takenIdx *G.Node // Int inputs: token ids (B*L), position ids (B*L), logit indices (N*R), taken slots (N)
	mask                    *G.Node // (N*R) 0 or maskLogit
	logp, taken             *G.Node

	tokData, posData, selData, takenData []int
	maskData                             []float64
	entries                              []int // len N*R: support entry of each slot, -1 for masked slots
	lens                                 []int
}

// Forward builds the forward graph for b rows of at most t tokens on the
// transformer's graph (with Prompt, each row also holds its prompt slot).
// Call it once per transformer: the tape machine runs every node of the
// graph.
func (tr *Transformer) Forward(b, t int) (fw *TransformerBatch, err error) {
	defer recoverGraph("transformer forward", &err)
	if tr.built {
		return nil, fmt.Errorf("nn: transformer forward: already built on this graph: want one forward per transformer")
	}
	if b <= 0 || t <= 0 {
		return nil, fmt.Errorf("nn: transformer forward: batch %d, length %d: want both >= 1", b, t)
	}
	cfg, g := tr.cfg, tr.g
	l := t
	if cfg.Prompt {
		l = t + 1
	}
	n, r, v := b*t, cfg.maxRow(), cfg.Vocab
	fw = &TransformerBatch{tr: tr, b: b, t: t, r: r, l: l,
		tokData: make([]int, b*l), posData: make([]int, b*l), selData: make([]int, n*r), takenData: make([]int, n),
		maskData: make([]float64, n*r), entries: make([]int, n*r), lens: make([]int, b)}
	fw.tok = G.NewVector(g, G.Int, G.WithShape(b*l), G.WithName("tokens")) // (B*L)
	if tr.pos != nil {
		fw.pos = G.NewVector(g, G.Int, G.WithShape(b*l), G.WithName("positions")) // (B*L)
	}
	fw.sel = G.NewVector(g, G.Int, G.WithShape(n*r), G.WithName("slot_logits"))    // (N*R)
	fw.takenIdx = G.NewVector(g, G.Int, G.WithShape(n), G.WithName("taken_slots")) // (N)
	fw.mask = G.NewVector(g, G.Float64, G.WithShape(n*r), G.WithName("slot_mask")) // (N*R)
	if err := fw.SetWindows(nil); err != nil {
		return nil, err
	}

	h0, err := gather(tr.emb, fw.tok) // (V, D), (B*L) -> (B*L, D)
	if err != nil {
		return nil, fmt.Errorf("nn: transformer forward: %w", err)
	}
	if tr.pos != nil {
		pe, err := gather(tr.pos, fw.pos) // (C, D), (B*L) -> (B*L, D), zero rows at prompt slots
		if err != nil {
			return nil, fmt.Errorf("nn: transformer forward: %w", err)
		}
		h0 = G.Must(G.Add(h0, pe)) // (B*L, D) + (B*L, D) -> (B*L, D)
	}
	attn, err := causalAttention(h0, tr.wq, tr.wk, tr.wv, tr.wo, b, l, cfg.Heads, cfg.Context, cfg.Prompt) // (B*L, D) -> (B*L, D)
	if err != nil {
		return nil, fmt.Errorf("nn: transformer forward: attention: %w", err)
	}
	h := G.Must(G.Add(h0, attn)) // (B*L, D) + (B*L, D) -> (B*L, D)
	if cfg.Prompt {
		keep := make([]int, n)
		for p := range keep {
			keep[p] = (p/t)*l + 1 + p%t
		}
		keepIdx := G.NewVector(g, G.Int, G.WithShape(n), G.WithName("token_slots"),
			G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(keep)))) // (N)
		if h, err = gather(h, keepIdx); err != nil { // (B*L, D), (N) -> (N, D): prompt slots dropped
			return nil, fmt.Errorf("nn: transformer forward: %w", err)
		}
	}
	if tr.lnGain != nil {
		if h, err = layerNorm(h, tr.lnGain, tr.lnBias); err != nil { // (N, D) -> (N, D), per position
			return nil, fmt.Errorf("nn: transformer forward: layer norm: %w", err)
		}
	}
	logits := G.Must(G.Mul(h, tr.unemb))                   // (N, D) x (D, V) -> (N, V)
	flat := G.Must(G.Reshape(logits, tensor.Shape{n * v})) // (N, V) -> (N*V)
	slots, err := gather(flat, fw.sel)                     // (N*V), (N*R) -> (N*R)
	if err != nil {
		return nil, fmt.Errorf("nn: transformer forward: %w", err)
	}
	slots = G.Must(G.Add(slots, fw.mask))                                          // (N*R) + (N*R) -> (N*R)
	if fw.logp, err = SegmentLogSoftmax(slots, uniformOffsets(n, r)); err != nil { // (N*R) -> (N*R), rows of R
		return nil, fmt.Errorf("nn: transformer forward: %w", err)
	}
	if fw.taken, err = gather(fw.logp, fw.takenIdx); err != nil { // (N*R), (N) -> (N)
		return nil, fmt.Errorf("nn: transformer forward: %w", err)
	}
	tr.built = true
	return fw, nil
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
	v, r, first := cfg.Vocab, fw.r, 0
	if cfg.Prompt {
		first = 1
	}
	for b := 0; b < fw.b; b++ {
		w := Window{Prompt: 0} // a missing row: prompt 0, no tokens
		if b < len(rows) {
			w = rows[b]
		}
		seq := w.Tokens
		fw.lens[b] = len(seq)
		if cfg.Prompt {
			fw.tokData[b*fw.l], fw.posData[b*fw.l] = w.Prompt, -1 // no positional embedding
		}
		for t := 0; t < fw.t; t++ {
			p := b*fw.t + t
			x := 0 // padding: token 0, never seen by real positions (causal mask)
			if t < len(seq) {
				x = seq[t]
			}
			fw.tokData[b*fw.l+first+t] = x
			fw.posData[b*fw.l+first+t] = (w.Start + t) % cfg.Context
			lo, hi := cfg.Support.Offsets[x], cfg.Support.Offsets[x+1]
			for j := 0; j < r; j++ {
				s := p*r + j
				if e := lo + j; e < hi {
					fw.selData[s], fw.maskData[s], fw.entries[s] = p*v+cfg.Support.Next[e], 0, e
				} else {
					fw.selData[s], fw.maskData[s], fw.entries[s] = p*v+cfg.Support.Next[lo], maskLogit, -1
				}
			}
			fw.takenData[p] = p * r
			if t+1 < len(seq) {
				fw.takenData[p] += cfg.Support.Entry(x, seq[t+1]) - lo
			}
		}
	}
	lets := []struct {
		n    *G.Node
		ints []int
		fls  []float64
	}{
		{n: fw.tok, ints: fw.tokData},
		{n: fw.pos, ints: fw.posData},
		{n: fw.sel, ints: fw.selData},
		{n: fw.takenIdx, ints: fw.takenData},
		{n: fw.mask, fls: fw.maskData},
	}
	for _, l := range lets {
		if l.n == nil {
			continue
		}
		var val *tensor.Dense
		if l.fls != nil {
			val = tensor.New(tensor.WithShape(len(l.fls)), tensor.WithBacking(l.fls))
		} else {
			val = tensor.New(tensor.WithShape(len(l.ints)), tensor.WithBacking(l.ints))
		}
		if err := G.Let(l.n, val); err != nil {
			return fmt.Errorf("nn: transformer batch: %w", err)
		}
	}
	return nil
}

// Shape returns B, T (real tokens per row, the prompt slot not counted) and
// R (slots per position, the longest support row).
func (fw *TransformerBatch) Shape() (b, t, r int) { return fw.b, fw.t, fw.r }

// LogProbs returns the (B*T*R) node of next-token log-probabilities, in
// slots of R per position (see TransformerBatch). Read it with G.Read
// before compiling the machine.
func (fw *TransformerBatch) LogProbs() *G.Node { return fw.logp }

// Offsets returns the slot offsets of LogProbs, one row per position
// (len B*T+1, row p = [p*R, (p+1)*R)).
func (fw *TransformerBatch) Offsets() []int { return uniformOffsets(fw.b*fw.t, fw.r) }

// SlotEntries returns, for each slot of LogProbs, its support entry index
// or -1 for a masked slot, as of the last Set. Do not modify it.
func (fw *TransformerBatch) SlotEntries() []int { return fw.entries }

// Taken returns the (B*T) node whose entry b*T+t is log pi(x_{t+1} |
// [prompt,] ..., x_t) of row b, x_t = rows[b].Tokens[t] (the prompt is
// never an entry), for t+1 < len(row b); other entries hold a finite
// log-probability to be weighted 0 (see HasTaken).
func (fw *TransformerBatch) Taken() *G.Node { return fw.taken }

// HasTaken reports whether token t of row b has a taken next token in the
// last Set or SetWindows: t+1 < len(row b's tokens).
func (fw *TransformerBatch) HasTaken(b, t int) bool { return t+1 < fw.lens[b] }

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
