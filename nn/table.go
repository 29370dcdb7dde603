package nn

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/ops"
	"github.com/rlvr-backtrack/backtrack/nn/stock"
)

// TableBatch is the graph of a logit table's next-token log-probabilities
// over up to Capacity tokens: token t's R slots are entries first_t,
// first_t+1, ... of the table, slot j's logit is table[first_t+j] plus a
// constant offset, the log-softmax is taken over the token's slots, and
// the slots past its row are masked (probability exactly 0), as in
// TransformerBatch. It is a transformer's logit table B trained on every
// sampled token, with the rest of each logit (LN(h) . U, a constant here)
// taken from the sampler; with offsets 0 it is a bigram. Only the table (a
// (P) vector node) is differentiable.
//
// LogProbs (Capacity*R) and Taken (Capacity) have TransformerBatch's
// layout, so a loss built over a TransformerBatch's items is built over a
// TableBatch's alike. The graph is built once with a fixed shape and
// refilled between runs (Set, then SetLen): a batch of any size is a
// sequence of fills whose gradients Step.Accumulate sums.
type TableBatch struct {
	p        int // entries of the table
	table    *G.Node
	ops      Ops
	lay      *ops.TableLayout
	takenIdx *G.Node // (Capacity) Int: the slot of each taken token
	logp     *G.Node // (Capacity*R)
	taken    *G.Node // (Capacity)
	entries  []int   // (Capacity*R) SlotEntries' buffer

	// Stock: the layout as index and mask inputs.
	slotEntry, offsets, valid, mask *G.Node
	ix                              ops.TableIndices
}

// NewTableBatch lays out up to capacity tokens of width slots each over
// table (a float64 vector node) and, when slots is true, adds their
// log-probabilities to its graph, of the given Ops: Fused, one op of
// package ops (ops.TableLogSoftmax) and a gather; Stock, the same
// function from stock ops (stock.TableLogSoftmax, stock.Gather). Without
// slots, LogProbs and Taken are nil and the batch serves ClippedSurrogate
// alone (a graph runs every node it holds, and that loss as one op needs
// neither); with Stock ops the slots are always added, as its
// ClippedSurrogate is built over Taken.
func NewTableBatch(table *G.Node, capacity, width int, o Ops, slots bool) (tb *TableBatch, err error) {
	defer recoverGraph("table batch", &err)
	if table == nil || table.Dims() != 1 || table.Dtype() != G.Float64 {
		return nil, fmt.Errorf("nn: table batch: table must be a float64 vector node")
	}
	if capacity < 1 || width < 1 {
		return nil, fmt.Errorf("nn: table batch: capacity %d, width %d: want >= 1 each", capacity, width)
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("nn: table batch: %w", err)
	}
	g := table.Graph()
	tb = &TableBatch{p: table.Shape()[0], lay: ops.NewTableLayout(capacity, width)}
	tb.takenIdx = G.NewVector(g, G.Int, G.WithShape(capacity), G.WithName("table_taken_slots")) // (Capacity)
	if o == Stock {
		m := capacity * width
		tb.slotEntry = G.NewVector(g, G.Int, G.WithShape(m), G.WithName("table_slot_entries"))
		tb.offsets = G.NewVector(g, G.Float64, G.WithShape(m), G.WithName("table_offsets"))
		tb.valid = G.NewVector(g, G.Float64, G.WithShape(m), G.WithName("table_valid"))
		tb.mask = G.NewVector(g, G.Float64, G.WithShape(m), G.WithName("table_mask"))
	}
	if err := tb.SetLen(0); err != nil {
		return nil, err
	}
	tb.table, tb.ops = table, o
	if !slots && o != Stock {
		return tb, nil
	}
	if o == Stock {
		if tb.logp, err = stock.TableLogSoftmax(table, tb.slotEntry, tb.offsets, tb.valid, tb.mask, capacity, width); err != nil { // (P) -> (Capacity*R)
			return nil, fmt.Errorf("nn: table batch: %w", err)
		}
		tb.taken, err = stock.Gather(tb.logp, tb.takenIdx) // (Capacity*R), (Capacity) -> (Capacity)
	} else {
		if tb.logp, err = ops.TableLogSoftmax(tb.lay, table); err != nil { // (P) -> (Capacity*R)
			return nil, fmt.Errorf("nn: table batch: %w", err)
		}
		tb.taken, err = ops.Gather(tb.logp, tb.takenIdx) // (Capacity*R), (Capacity) -> (Capacity)
	}
	if err != nil {
		return nil, fmt.Errorf("nn: table batch: %w", err)
	}
	return tb, nil
}

// Shape returns the capacity in tokens and R, the slots per token.
func (tb *TableBatch) Shape() (capacity, r int) { return tb.lay.Capacity(), tb.lay.Width() }

// Set lays out token t of the next fill (t < Capacity) as count (1 to R)
// slots over the table's entries first, first+1, ..., having taken slot
// k < count, and returns its count offsets for the caller to write. Tokens
// set on several goroutines must differ.
func (tb *TableBatch) Set(t, first, count, k int) []float64 { return tb.lay.Set(t, first, count, k) }

// SetLen ends a fill of n tokens (set by Set); the tokens from n on have
// no unmasked slot and must be weighted 0. The fill is checked (every
// slot count in [1, R], the taken slot among them, every entry in the
// table): here with Stock ops, and with Fused ops by the op that reads it,
// block by block on every core, when the graph runs.
func (tb *TableBatch) SetLen(n int) error {
	if n < 0 || n > tb.lay.Capacity() {
		return fmt.Errorf("nn: table batch: %d tokens: want 0 to %d", n, tb.lay.Capacity())
	}
	tb.lay.SetLen(n)
	if tb.ops == Stock {
		if err := tb.lay.Check(tb.p); err != nil {
			return fmt.Errorf("nn: table batch: %w", err)
		}
	}
	if err := letInts(tb.takenIdx, tb.lay.Taken()); err != nil {
		return fmt.Errorf("nn: table batch: %w", err)
	}
	if tb.slotEntry == nil {
		return nil
	}
	tb.lay.Indices(&tb.ix)
	if err := letInts(tb.slotEntry, tb.ix.SlotEntry); err != nil {
		return fmt.Errorf("nn: table batch: %w", err)
	}
	for _, in := range []struct {
		n *G.Node
		v []float64
	}{{tb.offsets, tb.ix.Offsets}, {tb.valid, tb.ix.Valid}, {tb.mask, tb.ix.Mask}} {
		if err := letFloats(in.n, in.v); err != nil {
			return fmt.Errorf("nn: table batch: %w", err)
		}
	}
	return nil
}

// LogProbs returns the (Capacity*R) node of each slot's log-probability
// (nil for a batch made without slots).
func (tb *TableBatch) LogProbs() *G.Node { return tb.logp }

// Taken returns the (Capacity) node of each token's taken log-probability
// (nil for a batch made without slots).
func (tb *TableBatch) Taken() *G.Node { return tb.taken }

// Positions returns the tokens of a fill and the slots of each, as the
// (N) and (N*R) shapes of Taken and LogProbs.
func (tb *TableBatch) Positions() (n, r int) { return tb.Shape() }

// ClippedSurrogate returns PPO's clipped surrogate over the fill's taken
// tokens, sum_t advPos_t min(r_t, 1+eps) + advNeg_t max(r_t, 1-eps) with
// r_t = exp(Taken_t - oldLogp_t), oldLogp, advPos and advNeg (Capacity)
// float64 nodes of the table's graph: with Fused ops one op
// (ops.TableClippedSurrogate, the three below bit for bit, without the
// (Capacity*R) log-probabilities); with Stock, stock.ClippedSurrogate over
// Taken.
func (tb *TableBatch) ClippedSurrogate(oldLogp, advPos, advNeg *G.Node, eps float64) (out *G.Node, err error) {
	defer recoverGraph("table clipped surrogate", &err)
	for _, in := range []*G.Node{oldLogp, advPos, advNeg} {
		if in == nil || in.Graph() != tb.table.Graph() {
			return nil, fmt.Errorf("nn: table clipped surrogate: the constants must be nodes of the table's graph")
		}
	}
	if tb.ops == Stock {
		return stock.ClippedSurrogate(tb.taken, oldLogp, advPos, advNeg, eps)
	}
	return ops.TableClippedSurrogate(tb.lay, tb.table, oldLogp, advPos, advNeg, eps)
}

// SlotEntries returns the table entry of each slot of the last fill, -1
// for a masked slot. The slice is reused by the next call.
func (tb *TableBatch) SlotEntries() []int {
	tb.lay.Indices(&tb.ix)
	tb.entries = append(tb.entries[:0], tb.ix.SlotEntry...)
	for s, v := range tb.ix.Valid {
		if v == 0 {
			tb.entries[s] = -1
		}
	}
	return tb.entries
}
