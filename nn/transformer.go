package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TransformerConfig describes a one-layer transformer policy over a
// vocabulary of Vocab tokens whose next token after token x is restricted
// to Support.Row(x).
type TransformerConfig struct {
	Vocab      int     `json:"vocab"`      // number of tokens V
	Support    Support `json:"support"`    // allowed next tokens per current token
	Dim        int     `json:"dim"`        // model width D, a multiple of Heads
	Heads      int     `json:"heads"`      // attention heads, >= 1
	Context    int     `json:"context"`    // attention window: a position sees itself and the Context-1 before it
	Positional string  `json:"positional"` // "none" or "learned" (Context x D table indexed by position mod Context)
	LayerNorm  bool    `json:"layer_norm"` // layer norm before the unembedding: not implemented, must be false
}

// DefaultTransformerConfig returns the configuration whose exact
// initialisation reproduces a bigram on support s: Dim = Vocab, one head,
// a window of 8, learned positions, no layer norm.
func DefaultTransformerConfig(s Support) TransformerConfig {
	v := s.Rows()
	return TransformerConfig{Vocab: v, Support: s, Dim: v, Heads: 1, Context: 8, Positional: "learned"}
}

// Validate checks every field against its allowed values.
func (c TransformerConfig) Validate() error {
	if c.Vocab <= 0 {
		return fmt.Errorf("nn: transformer: vocab %d: want > 0", c.Vocab)
	}
	if err := c.Support.Validate(c.Vocab); err != nil {
		return fmt.Errorf("nn: transformer: %w", err)
	}
	if c.Heads <= 0 {
		return fmt.Errorf("nn: transformer: heads %d: want >= 1", c.Heads)
	}
	if c.Dim <= 0 || c.Dim%c.Heads != 0 {
		return fmt.Errorf("nn: transformer: dim %d: want a positive multiple of heads = %d", c.Dim, c.Heads)
	}
	if c.Context <= 0 {
		return fmt.Errorf("nn: transformer: context %d: want >= 1", c.Context)
	}
	switch c.Positional {
	case "none", "learned":
	default:
		return fmt.Errorf("nn: transformer: positional %q: want \"none\" or \"learned\"", c.Positional)
	}
	if c.LayerNorm {
		return fmt.Errorf("nn: transformer: layer_norm true: not implemented, want false")
	}
	return nil
}

// maxRow returns the length of the longest support row.
func (c TransformerConfig) maxRow() int {
	r := 0
	for x := 0; x < c.Vocab; x++ {
		r = max(r, c.Support.Offsets[x+1]-c.Support.Offsets[x])
	}
	return r
}

// Transformer is a one-layer, attention-only transformer policy:
//
//	h_t = E[x_t] + P[t mod Context] + W_O concat_heads(softmax(q k^T / sqrt(D/H) + mask) v)
//	pi(a | x_0..x_t) = softmax over a in Support.Row(x_t) of (h_t U)[a]
//
// with q, k, v = h0 W_Q, h0 W_K, h0 W_V of h0 = E[x] + P, causal attention
// over the last Context positions (the current one included), and P absent
// when Positional is "none". Positions are embedded modulo Context: within
// a window all residues differ, a token's key never changes as the window
// slides (the sampler's cache stays valid) and sequences have no length
// limit.
//
// A Transformer owns its graph; build one Forward on it and run it with one
// tape machine (NewStep). The parameters are updated in place by solvers;
// Sampler reads their current values.
type Transformer struct {
	cfg TransformerConfig
	g   *G.ExprGraph

	emb, pos, wq, wk, wv, wo, unemb *G.Node
	built                           bool // Forward was called
}

// NewTransformerFromBigram returns a transformer whose next-token
// distribution equals the bigram's on every prefix: E = identity (Dim must
// equal Vocab), P = 0, W_O = 0 (attention adds nothing, but its gradient is
// not zero), U[x][a] = the bigram logit of x -> a on support entries and 0
// elsewhere (masked anyway), and W_Q, W_K, W_V drawn from N(0, 0.02^2) with
// rng. bigramLogits has one logit per support entry, in entry order.
//
// Layer norm is refused: it maps E[x] = e_x to (e_x - 1/V)/sigma, whose
// logits (U[x] - mean_y U[y])/sigma differ from the bigram's by a scale and
// by a shift per next token that the softmax does not cancel, so the exact
// initialisation is impossible in general.
func NewTransformerFromBigram(cfg TransformerConfig, bigramLogits []float64, rng *rand.Rand) (tr *Transformer, err error) {
	defer recoverGraph("transformer", &err)
	if cfg.LayerNorm {
		return nil, fmt.Errorf("nn: transformer: layer_norm true: the exact bigram initialisation needs layer_norm false")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dim != cfg.Vocab {
		return nil, fmt.Errorf("nn: transformer: dim %d: the exact bigram initialisation needs dim = vocab = %d", cfg.Dim, cfg.Vocab)
	}
	if rng == nil {
		return nil, fmt.Errorf("nn: transformer: nil rng")
	}
	if err := checkLogits(bigramLogits, cfg.Support.NNZ()); err != nil {
		return nil, fmt.Errorf("nn: transformer: bigram logits: %w", err)
	}
	cfg.Support = Support{Offsets: slices.Clone(cfg.Support.Offsets), Next: slices.Clone(cfg.Support.Next)}
	v, d := cfg.Vocab, cfg.Dim

	emb := make([]float64, v*d)
	for x := 0; x < v; x++ {
		emb[x*d+x] = 1
	}
	unemb := make([]float64, d*v)
	for x := 0; x < v; x++ {
		for e := cfg.Support.Offsets[x]; e < cfg.Support.Offsets[x+1]; e++ {
			unemb[x*v+cfg.Support.Next[e]] = bigramLogits[e]
		}
	}
	small := func() []float64 {
		w := make([]float64, d*d)
		for i := range w {
			w[i] = 0.02 * rng.NormFloat64()
		}
		return w
	}
	tr = &Transformer{cfg: cfg, g: G.NewGraph()}
	tr.emb = tr.param("E", emb, v, d) // (V, D)
	if cfg.Positional == "learned" {
		tr.pos = tr.param("P", make([]float64, cfg.Context*d), cfg.Context, d) // (C, D)
	}
	tr.wq = tr.param("WQ", small(), d, d)              // (D, D)
	tr.wk = tr.param("WK", small(), d, d)              // (D, D)
	tr.wv = tr.param("WV", small(), d, d)              // (D, D)
	tr.wo = tr.param("WO", make([]float64, d*d), d, d) // (D, D)
	tr.unemb = tr.param("U", unemb, d, v)              // (D, V)
	return tr, nil
}

// param adds a learnable (r, c) matrix holding data to the graph.
func (tr *Transformer) param(name string, data []float64, r, c int) *G.Node {
	return G.NewMatrix(tr.g, G.Float64, G.WithShape(r, c), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(r, c), tensor.WithBacking(data))))
}

// Config returns the configuration the transformer was built with.
func (tr *Transformer) Config() TransformerConfig { return tr.cfg }

// Graph returns the transformer's expression graph.
func (tr *Transformer) Graph() *G.ExprGraph { return tr.g }

// Learnables returns the parameters in a fixed order: E (V, D), P (Context,
// D) when Positional is "learned", W_Q, W_K, W_V, W_O (D, D), U (D, V).
// Each node is named as listed.
func (tr *Transformer) Learnables() G.Nodes {
	ns := G.Nodes{tr.emb}
	if tr.pos != nil {
		ns = append(ns, tr.pos)
	}
	return append(ns, tr.wq, tr.wk, tr.wv, tr.wo, tr.unemb)
}

// ParamValues returns copies of the parameter values, in Learnables order.
func (tr *Transformer) ParamValues() [][]float64 {
	var out [][]float64
	for _, n := range tr.Learnables() {
		out = append(out, slices.Clone(n.Value().Data().([]float64)))
	}
	return out
}

// SetParamValues overwrites the parameters in place (Learnables order), so
// machines and solvers built on the transformer see the new values.
func (tr *Transformer) SetParamValues(vals [][]float64) error {
	ns := tr.Learnables()
	if len(vals) != len(ns) {
		return fmt.Errorf("nn: transformer: got %d parameter tables, want %d", len(vals), len(ns))
	}
	for i, n := range ns {
		dst := n.Value().Data().([]float64)
		if len(vals[i]) != len(dst) {
			return fmt.Errorf("nn: transformer: parameter %s: got %d values, want %d", n.Name(), len(vals[i]), len(dst))
		}
		for j, x := range vals[i] {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("nn: transformer: parameter %s[%d] is %v: want finite", n.Name(), j, x)
			}
		}
	}
	for i, n := range ns {
		copy(n.Value().Data().([]float64), vals[i])
	}
	return nil
}

// TransformerBatch is the forward graph of a Transformer for B sequences of
// at most T tokens. Fill it with Set before each run of the graph.
//
// Layout: position p = b*T + t (token t of sequence b) owns the R = longest
// support row slots [p*R, (p+1)*R) of LogProbs; slot p*R+j holds log
// pi(Row(x_t)[j] | x_0..x_t) for j < len(Row(x_t)) and a masked slot (its
// logit pushed to -1e9, so its probability is exactly 0) after it.
// SlotEntries tells which support entry each slot is. Positions past the end
// of a sequence hold finite values to be ignored (weight them 0).
type TransformerBatch struct {
	tr      *Transformer
	b, t, r int

	tok, sel, takenIdx *G.Node // Int inputs: token ids (N), logit indices (N*R), taken slots (N)
	mask               *G.Node // (N*R) 0 or maskLogit
	logp, taken        *G.Node

	tokData, selData, takenData []int
	maskData                    []float64
	entries                     []int // len N*R: support entry of each slot, -1 for masked slots
	lens                        []int
}

// Forward builds the forward graph for b sequences of at most t tokens on
// the transformer's graph. Call it once per transformer: the tape machine
// runs every node of the graph.
func (tr *Transformer) Forward(b, t int) (fw *TransformerBatch, err error) {
	defer recoverGraph("transformer forward", &err)
	if tr.built {
		return nil, fmt.Errorf("nn: transformer forward: already built on this graph: want one forward per transformer")
	}
	if b <= 0 || t <= 0 {
		return nil, fmt.Errorf("nn: transformer forward: batch %d, length %d: want both >= 1", b, t)
	}
	cfg, g := tr.cfg, tr.g
	n, r, v := b*t, cfg.maxRow(), cfg.Vocab
	fw = &TransformerBatch{tr: tr, b: b, t: t, r: r,
		tokData: make([]int, n), selData: make([]int, n*r), takenData: make([]int, n),
		maskData: make([]float64, n*r), entries: make([]int, n*r), lens: make([]int, b)}
	fw.tok = G.NewVector(g, G.Int, G.WithShape(n), G.WithName("tokens"))           // (N)
	fw.sel = G.NewVector(g, G.Int, G.WithShape(n*r), G.WithName("slot_logits"))    // (N*R)
	fw.takenIdx = G.NewVector(g, G.Int, G.WithShape(n), G.WithName("taken_slots")) // (N)
	fw.mask = G.NewVector(g, G.Float64, G.WithShape(n*r), G.WithName("slot_mask")) // (N*R)
	if err := fw.Set(nil); err != nil {
		return nil, err
	}

	h0, err := gather(tr.emb, fw.tok) // (V, D), (N) -> (N, D)
	if err != nil {
		return nil, fmt.Errorf("nn: transformer forward: %w", err)
	}
	if tr.pos != nil {
		pidx := make([]int, n)
		for p := range pidx {
			pidx[p] = (p % t) % cfg.Context
		}
		posIdx := G.NewVector(g, G.Int, G.WithShape(n), G.WithName("positions"),
			G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(pidx)))) // (N)
		pe, err := gather(tr.pos, posIdx) // (C, D), (N) -> (N, D)
		if err != nil {
			return nil, fmt.Errorf("nn: transformer forward: %w", err)
		}
		h0 = G.Must(G.Add(h0, pe)) // (N, D) + (N, D) -> (N, D)
	}
	attn, err := causalAttention(h0, tr.wq, tr.wk, tr.wv, tr.wo, b, t, cfg.Heads, cfg.Context) // (N, D) -> (N, D)
	if err != nil {
		return nil, fmt.Errorf("nn: transformer forward: attention: %w", err)
	}
	h := G.Must(G.Add(h0, attn))                           // (N, D) + (N, D) -> (N, D)
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

// Set fills the inputs with tokens: len(tokens) <= B sequences (missing ones
// are empty), each of at most T tokens in [0, Vocab), each transition
// x_t -> x_{t+1} in the support. nil empties the batch.
func (fw *TransformerBatch) Set(tokens [][]int) error {
	cfg := fw.tr.cfg
	if len(tokens) > fw.b {
		return fmt.Errorf("nn: transformer batch: %d sequences: want <= %d", len(tokens), fw.b)
	}
	for b, seq := range tokens {
		if len(seq) > fw.t {
			return fmt.Errorf("nn: transformer batch: sequence %d has %d tokens: want <= %d", b, len(seq), fw.t)
		}
		for t, x := range seq {
			if x < 0 || x >= cfg.Vocab {
				return fmt.Errorf("nn: transformer batch: sequence %d token %d is %d: want in [0, %d)", b, t, x, cfg.Vocab)
			}
			if t > 0 && cfg.Support.Entry(seq[t-1], x) < 0 {
				return fmt.Errorf("nn: transformer batch: sequence %d transition %d -> %d at %d: not in the support", b, seq[t-1], x, t)
			}
		}
	}
	v, r := cfg.Vocab, fw.r
	for b := 0; b < fw.b; b++ {
		var seq []int
		if b < len(tokens) {
			seq = tokens[b]
		}
		fw.lens[b] = len(seq)
		for t := 0; t < fw.t; t++ {
			p := b*fw.t + t
			x := 0 // padding: token 0, never seen by real positions (causal mask)
			if t < len(seq) {
				x = seq[t]
			}
			fw.tokData[p] = x
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
		n *G.Node
		v *tensor.Dense
	}{
		{fw.tok, tensor.New(tensor.WithShape(len(fw.tokData)), tensor.WithBacking(fw.tokData))},
		{fw.sel, tensor.New(tensor.WithShape(len(fw.selData)), tensor.WithBacking(fw.selData))},
		{fw.takenIdx, tensor.New(tensor.WithShape(len(fw.takenData)), tensor.WithBacking(fw.takenData))},
		{fw.mask, tensor.New(tensor.WithShape(len(fw.maskData)), tensor.WithBacking(fw.maskData))},
	}
	for _, l := range lets {
		if err := G.Let(l.n, l.v); err != nil {
			return fmt.Errorf("nn: transformer batch: %w", err)
		}
	}
	return nil
}

// Shape returns B, T and R (slots per position, the longest support row).
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
// x_0..x_t) of sequence b, for t+1 < len(sequence b); other entries hold a
// finite log-probability to be weighted 0 (see HasTaken).
func (fw *TransformerBatch) Taken() *G.Node { return fw.taken }

// HasTaken reports whether position t of sequence b has a taken next token
// in the last Set.
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
