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
	Vocab   int     `json:"vocab"`   // number of tokens V
	Support Support `json:"support"` // allowed next tokens per current token
	TransformerArch
}

// TransformerArch is a transformer's architecture, what a run configures
// (the vocabulary and support come from the task).
type TransformerArch struct {
	Dim        int    `json:"dim"`        // model width D, a multiple of Heads
	Heads      int    `json:"heads"`      // attention heads, >= 1
	Context    int    `json:"context"`    // attention window: a position sees itself and the Context-1 before it
	Positional string `json:"positional"` // "none" or "learned" (Context x D table indexed by position mod Context)
	LayerNorm  bool   `json:"layer_norm"` // layer norm of the residual stream before the unembedding (learned gain and bias)
	Prompt     bool   `json:"prompt"`     // one leading prompt token per sequence (the target), seen by every position
	Init       string `json:"init"`       // exact bigram initialisation: "table" (DefaultTransformerConfig's) or "identity" (needs Dim = Vocab; "" means "identity")
}

// DefaultTransformerConfig returns the configuration of a transformer on
// support s initialised exactly to a bigram by a per-entry logit table:
// width 64, one head, a window of 8, learned positions, no layer norm, no
// prompt.
func DefaultTransformerConfig(s Support) TransformerConfig {
	return TransformerConfig{Vocab: s.Rows(), Support: s, TransformerArch: TransformerArch{Dim: 64, Heads: 1, Context: 8, Positional: "learned", Init: "table"}}
}

// initName returns the initialisation Init selects. "" is "identity",
// the only one before Init existed: configurations written without the
// field (checkpoints, callers) keep their meaning.
func (c TransformerConfig) initName() string {
	if c.Init == "" {
		return "identity"
	}
	return c.Init
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
	switch c.initName() {
	case "table":
	case "identity":
		if c.Dim != c.Vocab {
			return fmt.Errorf("nn: transformer: dim %d: init \"identity\" needs dim = vocab = %d", c.Dim, c.Vocab)
		}
	default:
		return fmt.Errorf("nn: transformer: init %q: want \"table\" or \"identity\"", c.Init)
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
//	h_t = E[x_t] + P[t mod Context] + concat_heads(softmax(q k^T / sqrt(D/H) + mask) v) W_O
//	z_t(a) = B[entry(x_t, a)] + LN(h_t) . U[a]    for a in Support.Row(x_t)
//	pi(a | x_0..x_t) = softmax over a in Support.Row(x_t) of z_t(a)
//
// with q, k, v = h0 W_Q, h0 W_K, h0 W_V of h0 = E[x] + P, causal attention
// over the last Context positions (the current one included), P absent
// when Positional is "none", LN the identity without LayerNorm and B (one
// logit per support entry) absent with Init "identity". Only the valid
// next tokens of x_t get a logit: nothing of size V is computed per
// position. Positions are embedded modulo Context: within a window all
// residues differ, a token's key never changes as the window slides (the
// sampler's cache stays valid) and sequences have no length limit. t is
// the absolute position in the sequence, so a long sequence can be cut
// into windows (TransformerBatch.SetWindows) whose log-probs equal the
// whole sequence's wherever a window holds the Context-1 tokens before a
// position.
//
// With LayerNorm, LN(h) = (h - mean(h)) / sqrt(var(h) + 1e-5) * gamma +
// beta over the D features of one position (biased variance), gamma and
// beta learned (D) vectors.
//
// With Prompt, each sequence has a prompt token x_p (e.g. the target)
// before its first token: h0 = E[x_p] without any positional embedding,
// every position attends to it in addition to its window of Context real
// tokens, and it attends only to itself. It is not predicted and the
// transition x_p -> x_0 need not be in the support. At the exact
// initialisation it changes nothing.
//
// A Transformer owns its graph; build one Forward on it and run it with one
// tape machine (NewStep). The parameters are updated in place by solvers;
// Snapshot and Sampler read their current values.
type Transformer struct {
	cfg TransformerConfig
	g   *G.ExprGraph

	emb, pos, wq, wk, wv, wo, unemb *G.Node
	lnGain, lnBias                  *G.Node // (D) each, nil without LayerNorm
	bias                            *G.Node // (NNZ) per-entry logits B, nil with Init "identity"
	built                           bool    // Forward was called
}

// tableInitStd returns the standard deviation of the random parameters of
// the table initialisation at width d: 1/sqrt(d), so embedding rows have
// norm about 1 and the (D, D) weights keep it.
func tableInitStd(d int) float64 { return 1 / math.Sqrt(float64(d)) }

// identityInitStd is the standard deviation of W_Q, W_K and W_V in the
// identity initialisation.
const identityInitStd = 0.02

// NewTransformerFromBigram returns a transformer whose next-token
// distribution equals the bigram's on every prefix, bigramLogits holding
// one logit per support entry, in entry order. rng draws the random
// parameters. cfg.Init selects how:
//
// "table" (DefaultTransformerConfig's), at any width: B = bigramLogits and U = 0, so z_t(a)
// = B[entry(x_t, a)] exactly on every prefix, whatever h_t (with or without
// LayerNorm and Prompt); E, P, W_Q, W_K, W_V and W_O are drawn from N(0,
// 1/D) (tableInitStd), LN_gain = 1, LN_bias = 0. The first update moves B
// and U (d loss / d U[a] = sum of dz LN(h) is not 0, while h gets no
// gradient through U = 0); from the second on, U != 0 carries gradient into
// h, and since W_V, W_O and the embeddings are not 0, into every parameter
// of the attention.
//
// "identity" (the paper's construction, Dim = Vocab; also Init ""): E = identity, P = 0,
// W_O = 0 (attention adds nothing, but its gradient is not zero), U (D, V)
// with U[x][a] = the bigram logit of x -> a on support entries and 0
// elsewhere (masked anyway; see below for LayerNorm), and W_Q, W_K, W_V
// drawn from N(0, 0.02^2).
//
// With LayerNorm and "identity", gamma = 1 and beta = 0, and the residual
// stream e_x becomes LN(e_x) = (e_x - 1/V) / sigma for every x (all one-hot
// vectors share mean 1/V and variance (1/V)(1 - 1/V)), so the logit of a
// after x is (U[x][a] - mean_y U[y][a]) / sigma. The masked entries of U are
// free (their logits never reach a probability), so U = sigma M, M holding
// the bigram logits on support entries and, on one masked entry per column,
// minus the sum of that column's support entries: every column of M sums to
// 0 and the logits are exactly the bigram's (layerNormUnembedding). It fails
// when some token follows every token (its column has no masked entry),
// which is not the case for the project's task graphs.
func NewTransformerFromBigram(cfg TransformerConfig, bigramLogits []float64, rng *rand.Rand) (tr *Transformer, err error) {
	defer recoverGraph("transformer", &err)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("nn: transformer: nil rng")
	}
	if err := checkLogits(bigramLogits, cfg.Support.NNZ()); err != nil {
		return nil, fmt.Errorf("nn: transformer: bigram logits: %w", err)
	}
	cfg.Support = Support{Offsets: slices.Clone(cfg.Support.Offsets), Next: slices.Clone(cfg.Support.Next)}
	cfg.Init = cfg.initName()
	tr = &Transformer{cfg: cfg, g: G.NewGraph()}
	if cfg.Init == "identity" {
		err = tr.initIdentity(bigramLogits, rng)
	} else {
		tr.initTable(bigramLogits, rng)
	}
	if err != nil {
		return nil, err
	}
	return tr, nil
}

// normal returns n values drawn from N(0, std^2).
func normal(rng *rand.Rand, n int, std float64) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = std * rng.NormFloat64()
	}
	return w
}

// initTable adds the parameters of the "table" initialisation.
func (tr *Transformer) initTable(bigramLogits []float64, rng *rand.Rand) {
	cfg := tr.cfg
	v, d := cfg.Vocab, cfg.Dim
	std := tableInitStd(d)
	tr.emb = tr.param("E", normal(rng, v*d, std), v, d) // (V, D)
	if cfg.Positional == "learned" {
		tr.pos = tr.param("P", normal(rng, cfg.Context*d, std), cfg.Context, d) // (C, D)
	}
	tr.wq = tr.param("WQ", normal(rng, d*d, std), d, d) // (D, D)
	tr.wk = tr.param("WK", normal(rng, d*d, std), d, d) // (D, D)
	tr.wv = tr.param("WV", normal(rng, d*d, std), d, d) // (D, D)
	tr.wo = tr.param("WO", normal(rng, d*d, std), d, d) // (D, D)
	tr.addLayerNorm()
	tr.unemb = tr.param("U", make([]float64, v*d), v, d) // (V, D): row a is the output embedding of token a
	tr.bias = tr.vector("B", slices.Clone(bigramLogits)) // (NNZ)
}

// initIdentity adds the parameters of the "identity" initialisation.
func (tr *Transformer) initIdentity(bigramLogits []float64, rng *rand.Rand) error {
	cfg := tr.cfg
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
		var err error
		if unemb, err = layerNormUnembedding(cfg.Support, bigramLogits); err != nil {
			return fmt.Errorf("nn: transformer: layer_norm: %w", err)
		}
	}
	tr.emb = tr.param("E", emb, v, d) // (V, D)
	if cfg.Positional == "learned" {
		tr.pos = tr.param("P", make([]float64, cfg.Context*d), cfg.Context, d) // (C, D)
	}
	tr.wq = tr.param("WQ", normal(rng, d*d, identityInitStd), d, d) // (D, D)
	tr.wk = tr.param("WK", normal(rng, d*d, identityInitStd), d, d) // (D, D)
	tr.wv = tr.param("WV", normal(rng, d*d, identityInitStd), d, d) // (D, D)
	tr.wo = tr.param("WO", make([]float64, d*d), d, d)              // (D, D)
	tr.addLayerNorm()
	tr.unemb = tr.param("U", unemb, d, v) // (D, V): column a is the output embedding of token a
	return nil
}

// addLayerNorm adds LN_gain = 1 and LN_bias = 0 when the config has
// LayerNorm.
func (tr *Transformer) addLayerNorm() {
	if !tr.cfg.LayerNorm {
		return
	}
	d := tr.cfg.Dim
	gain := make([]float64, d)
	for i := range gain {
		gain[i] = 1
	}
	tr.lnGain = tr.vector("LN_gain", gain)               // (D)
	tr.lnBias = tr.vector("LN_bias", make([]float64, d)) // (D)
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
// LN_bias (D) when LayerNorm is true, U ((V, D) with Init "table", row a
// the output embedding of token a; (D, V) with Init "identity", column a),
// then B (NNZ, the per-entry logits) with Init "table". Each node is named
// as listed (E, P, WQ, WK, WV, WO, LN_gain, LN_bias, U, B).
func (tr *Transformer) Learnables() G.Nodes {
	ns := G.Nodes{tr.emb}
	if tr.pos != nil {
		ns = append(ns, tr.pos)
	}
	ns = append(ns, tr.wq, tr.wk, tr.wv, tr.wo)
	if tr.lnGain != nil {
		ns = append(ns, tr.lnGain, tr.lnBias)
	}
	ns = append(ns, tr.unemb)
	if tr.bias != nil {
		ns = append(ns, tr.bias)
	}
	return ns
}

// TableLogits returns the per-entry logits B (NNZ, the support's entries
// in order), nil with Init "identity". The slice is the parameter's own
// memory: read it between updates, do not keep it.
func (tr *Transformer) TableLogits() []float64 {
	if tr.bias == nil {
		return nil
	}
	return floatsOf(tr.bias)
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
