package nn

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/ops"
	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// stockInputs are the index and mask inputs of a transformer graph of
// stock ops, refilled from the layout by every SetWindows (ops.Indices).
type stockInputs struct {
	tokens, positions, keep      *G.Node // (B*L), (B*L), (N) Int
	slotPos, slotNext, slotEntry *G.Node // (N*R) Int each
	valid, mask                  *G.Node // (N*R)
	ix                           ops.Indices
	l                            int // key slots per row: T, or T+1 with a prompt
}

func newStockInputs(g *G.ExprGraph, b, t, r int, prompt bool) *stockInputs {
	n, l := b*t, t
	if prompt {
		l++
	}
	ints := func(name string, k int) *G.Node { return G.NewVector(g, G.Int, G.WithShape(k), G.WithName(name)) }
	floats := func(name string, k int) *G.Node { return G.NewVector(g, G.Float64, G.WithShape(k), G.WithName(name)) }
	return &stockInputs{l: l,
		tokens: ints("key_tokens", b*l), positions: ints("key_positions", b*l), keep: ints("token_slots", n),
		slotPos: ints("slot_positions", n*r), slotNext: ints("slot_next", n*r), slotEntry: ints("slot_entries", n*r),
		valid: floats("slot_valid", n*r), mask: floats("slot_mask", n*r)}
}

// let fills the inputs from the layout's last Fill.
func (s *stockInputs) let(lay *ops.Layout) error {
	lay.Indices(&s.ix)
	for _, in := range []struct {
		n *G.Node
		v []int
	}{{s.tokens, s.ix.Tokens}, {s.positions, s.ix.Positions}, {s.keep, s.ix.Keep}, {s.slotPos, s.ix.SlotPos}, {s.slotNext, s.ix.SlotNext}, {s.slotEntry, s.ix.SlotEntry}} {
		if err := letInts(in.n, in.v); err != nil {
			return err
		}
	}
	if err := letFloats(s.valid, s.ix.Valid); err != nil {
		return err
	}
	return letFloats(s.mask, s.ix.Mask)
}

// forwardStock builds the transformer's forward from stock ops: the
// residual stream of the attention block (stock.Block: embeddings
// gathered per key slot, dense (B, L, L) masked attention, heads cut out
// by 0/1 matrices), the layer norm (stock.LayerNorm), the unembedding of
// each position's valid next tokens only (stock.Unembed) and the taken
// tokens' log-probabilities (stock.Gather).
func (fw *TransformerBatch) forwardStock() (err error) {
	tr, s := fw.tr, fw.stock
	cfg := tr.cfg
	n := fw.b * fw.t
	h, err := stock.Block(tr.emb, tr.pos, tr.wq, tr.wk, tr.wv, tr.wo, s.tokens, s.positions, s.keep,
		fw.b, s.l, cfg.Heads, cfg.Context, cfg.Prompt, ops.MaskLogit) // -> (N, D)
	if err != nil {
		return err
	}
	if tr.lnGain != nil {
		if h, err = stock.LayerNorm(h, tr.lnGain, tr.lnBias, kernels.LayerNormEps); err != nil { // (N, D) -> (N, D)
			return err
		}
	}
	u := tr.unemb // (V, D)
	if cfg.initName() == "identity" {
		if u, err = G.Transpose(u); err != nil { // (D, V) -> (V, D)
			return err
		}
	}
	if fw.logp, err = stock.Unembed(h, u, tr.bias, s.slotPos, s.slotNext, s.slotEntry, s.valid, s.mask, n, fw.r); err != nil { // -> (N*R)
		return err
	}
	fw.taken, err = stock.Gather(fw.logp, fw.takenIdx) // (N*R), (N) -> (N)
	return err
}

// letInts sets an Int input node to a vector backed by v.
func letInts(n *G.Node, v []int) error {
	return G.Let(n, tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(v)))
}

// letFloats sets a float64 input node to a vector backed by v.
func letFloats(n *G.Node, v []float64) error {
	return G.Let(n, tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(v)))
}
