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
	LayerNorm  bool    `json:"layer_norm"` // layer norm of the residual stream before the unembedding (learned gain and bias)
	Prompt     bool    `json:"prompt"`     // one leading prompt token per sequence (the target), seen by every position
}

// DefaultTransformerConfig returns a configuration whose exact
// initialisation reproduces a bigram on support s: Dim = Vocab, one head,
// a window of 8, learned positions, no layer norm, no prompt.
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
// limit. t is the absolute position in the sequence, so a long sequence
// can be cut into windows (TransformerBatch.SetWindows) whose log-probs
// equal the whole sequence's wherever a window holds the Context-1 tokens
// before a position.
//
// With LayerNorm, the logits are (LN(h_t) U)[a] instead, LN(h) = (h -
// mean(h)) / sqrt(var(h) + 1e-5) * gamma + beta over the D features of one
// position (biased variance), gamma and beta learned (D) vectors.
//
// With Prompt, each sequence has a prompt token x_p (e.g. the target)
// before its first token: h0 = E[x_p] without any positional embedding,
// every position attends to it in addition to its window of Context real
// tokens, and it attends only to itself. It is not predicted and the
// transition x_p -> x_0 need not be in the support. At the exact
// initialisation (W_O = 0) it changes nothing.
//
// A Transformer owns its graph; build one Forward on it and run it with one
// tape machine (NewStep). The parameters are updated in place by solvers;
// Sampler reads their current values.
type Transformer struct {
	cfg TransformerConfig
	g   *G.ExprGraph

	emb, pos, wq, wk, wv, wo, unemb *G.Node
	lnGain, lnBias                  *G.Node // (D) each, nil without LayerNorm
	built                           bool    // Forward was called
}

// NewTransformerFromBigram returns a transformer whose next-token
// distribution equals the bigram's on every prefix: E = identity (Dim must
// equal Vocab), P = 0, W_O = 0 (attention adds nothing, but its gradient is
// not zero), U[x][a] = the bigram logit of x -> a on support entries and 0
// elsewhere (masked anyway; see below for LayerNorm), and W_Q, W_K, W_V
// drawn from N(0, 0.02^2) with rng. bigramLogits has one logit per support
// entry, in entry order.
//
// With LayerNorm, gamma = 1 and beta = 0, and the residual stream e_x
// becomes LN(e_x) = (e_x - 1/V) / sigma for every x (all one-hot vectors
// share mean 1/V and variance (1/V)(1 - 1/V)), so the logit of a after x
// is (U[x][a] - mean_y U[y][a]) / sigma. The masked entries of U are free
// (their logits never reach a probability), so U = sigma M, M holding the
// bigram logits on support entries and, on one masked entry per column,
// minus the sum of that column's support entries: every column of M sums
// to 0 and the logits are exactly the bigram's (layerNormUnembedding). It
// fails when some token follows every token (its column has no masked
// entry), which is not the case for the project's task graphs.
func NewTransformerFromBigram(cfg TransformerConfig, bigramLogits []float64, rng *rand.Rand) (tr *Transformer, err error) {
	defer recoverGraph("transformer", &err)
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
	if cfg.LayerNorm {
		if unemb, err = layerNormUnembedding(cfg.Support, bigramLogits); err != nil {
			return nil, fmt.Errorf("nn: transformer: layer_norm: %w", err)
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
	if cfg.LayerNorm {
		gain := make([]float64, d)
		for i := range gain {
			gain[i] = 1
		}
		tr.lnGain = tr.vector("LN_gain", gain)               // (D)
		tr.lnBias = tr.vector("LN_bias", make([]float64, d)) // (D)
	}
	tr.unemb = tr.param("U", unemb, d, v) // (D, V)
	return tr, nil
}

// param adds a learnable (r, c) matrix holding data to the graph.
func (tr *Transformer) param(name string, data []float64, r, c int) *G.Node {
	return G.NewMatrix(tr.g, G.Float64, G.WithShape(r, c), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(r, c), tensor.WithBacking(data))))
}

// vector adds a learnable (n) vector holding data to the graph.
func (tr *Transformer) vector(name string, data []float64) *G.Node {
	return G.NewVector(tr.g, G.Float64, G.WithShape(len(data)), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(len(data)), tensor.WithBacking(data))))
}

// Config returns the configuration the transformer was built with.
func (tr *Transformer) Config() TransformerConfig { return tr.cfg }

// Graph returns the transformer's expression graph.
func (tr *Transformer) Graph() *G.ExprGraph { return tr.g }

// Learnables returns the parameters in a fixed order: E (V, D), P (Context,
// D) when Positional is "learned", W_Q, W_K, W_V, W_O (D, D), LN_gain and
// LN_bias (D) when LayerNorm is true, U (D, V), always last. Each node is
// named as listed (E, P, WQ, WK, WV, WO, LN_gain, LN_bias, U).
func (tr *Transformer) Learnables() G.Nodes {
	ns := G.Nodes{tr.emb}
	if tr.pos != nil {
		ns = append(ns, tr.pos)
	}
	ns = append(ns, tr.wq, tr.wk, tr.wv, tr.wo)
	if tr.lnGain != nil {
		ns = append(ns, tr.lnGain, tr.lnBias)
	}
	return append(ns, tr.unemb)
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
