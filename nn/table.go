package nn

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// padLogit is the logit of an unused slot of a TableLoss row: its
// probability exp(padLogit - max) is exactly 0, and it stays finite, so no
// infinity or NaN enters the graph.
const padLogit = -1e30

// TableLoss is the scalar sum_t w[t] log pi_t(a_t) over up to Capacity
// tokens whose next-token logits are a per-entry logit table plus
// constant offsets: token t has Slots slots, slot k's logit is
// table[entry] + offset, pi_t is the softmax over its used slots and a_t
// the slot it took. Only the table (a (P) vector node) is differentiable:
// this is a transformer's logit table B trained on every sampled token with
// the rest of the logit (LN(h) U, a constant here) taken from the sampler,
// or a bigram with offsets 0.
//
// The graph is built once with a fixed shape and refilled between runs
// (Fill), as the windows graph is: a batch of any size is a sequence of
// fills whose gradients nn.Step.Accumulate sums, so the memory is bounded
// by Capacity and no graph is built per batch.
type TableLoss struct {
	Cost *G.Node // the scalar

	capacity, slots, p int
	entries, taken     *G.Node
	weights            *G.Node
	entryVal, takenVal *tensor.Dense
	weightVal          *tensor.Dense
	offsets            []float64 // read by the gather at each run
}

// NewTableLoss adds the loss to table's graph for fills of up to capacity
// tokens of at most slots slots each.
func NewTableLoss(table *G.Node, capacity, slots int) (tl *TableLoss, err error) {
	defer recoverGraph("table loss", &err)
	if table == nil || table.Dims() != 1 || table.Dtype() != G.Float64 {
		return nil, fmt.Errorf("nn: table loss: table must be a float64 vector node")
	}
	if capacity < 1 || slots < 1 {
		return nil, fmt.Errorf("nn: table loss: capacity %d, slots %d: want >= 1 each", capacity, slots)
	}
	g, m := table.Graph(), capacity*slots
	tl = &TableLoss{capacity: capacity, slots: slots, p: table.Shape()[0], offsets: make([]float64, m)}
	ints := func(name string, n int) (*G.Node, *tensor.Dense) {
		v := tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]int, n)))
		return G.NewVector(g, G.Int, G.WithShape(n), G.WithName(name), G.WithValue(v)), v
	}
	tl.entries, tl.entryVal = ints("table_entries", m)
	tl.taken, tl.takenVal = ints("table_taken", capacity)
	tl.weightVal = tensor.New(tensor.WithShape(capacity), tensor.WithBacking(make([]float64, capacity)))
	tl.weights = G.NewVector(g, G.Float64, G.WithShape(capacity), G.WithName("table_weights"), G.WithValue(tl.weightVal))
	op := &gatherOp{in: table.Shape().Clone(), n: m, add: tl.offsets}
	logits, err := G.ApplyOp(op, table, tl.entries) // (P), (M) -> (M): table[entries] + offsets
	if err != nil {
		return nil, fmt.Errorf("nn: table loss: %w", err)
	}
	rows := make([]int, capacity+1)
	for t := range rows {
		rows[t] = t * slots
	}
	logp, err := SegmentLogSoftmax(logits, rows) // (M) -> (M)
	if err != nil {
		return nil, fmt.Errorf("nn: table loss: %w", err)
	}
	tk, err := gather(logp, tl.taken) // (M), (N) -> (N)
	if err != nil {
		return nil, fmt.Errorf("nn: table loss: %w", err)
	}
	if tl.Cost, err = G.Mul(tl.weights, tk); err != nil { // (N) . (N) -> ()
		return nil, fmt.Errorf("nn: table loss: %w", err)
	}
	return tl, nil
}

// Capacity is the most tokens one fill holds.
func (tl *TableLoss) Capacity() int { return tl.capacity }

// Fill sets the loss's tokens for the next run: n tokens (at most
// Capacity), token t's slots [rows[t], rows[t+1]) of entries and offsets
// (at most Slots of them), taken[t] the slot it took and w[t] its weight.
// Unused slots and tokens get no probability and no weight.
func (tl *TableLoss) Fill(entries, rows, taken []int, offsets, w []float64) error {
	n := len(rows) - 1
	if n < 0 || n > tl.capacity || len(taken) != n || len(w) != n || rows[0] != 0 || rows[n] != len(entries) || len(offsets) != len(entries) {
		return fmt.Errorf("nn: table loss: %d rows (capacity %d), %d taken, %d weights, %d entries, %d offsets: want one taken and weight per row, rows from 0 to the entries, one offset per entry", n, tl.capacity, len(taken), len(w), len(entries), len(offsets))
	}
	ent := tl.entryVal.Data().([]int)
	tk := tl.takenVal.Data().([]int)
	wt := tl.weightVal.Data().([]float64)
	for t := range tl.capacity {
		lo, hi := 0, 0
		if t < n {
			lo, hi = rows[t], rows[t+1]
		}
		if hi-lo > tl.slots || hi < lo || (t < n && hi == lo) {
			return fmt.Errorf("nn: table loss: token %d has %d slots: want 1 to %d", t, hi-lo, tl.slots)
		}
		base := t * tl.slots
		for k := range tl.slots {
			if lo+k < hi {
				e := entries[lo+k]
				if e < 0 || e >= tl.p {
					return fmt.Errorf("nn: table loss: token %d slot %d: entry %d: want in [0, %d)", t, k, e, tl.p)
				}
				ent[base+k], tl.offsets[base+k] = e, offsets[lo+k]
			} else {
				ent[base+k], tl.offsets[base+k] = -1, padLogit // the gather's 0, plus the pad
			}
		}
		if t >= n {
			tk[t], wt[t] = base, 0
			continue
		}
		if taken[t] < 0 || taken[t] >= hi-lo {
			return fmt.Errorf("nn: table loss: token %d took slot %d of %d", t, taken[t], hi-lo)
		}
		tk[t], wt[t] = base+taken[t], w[t]
	}
	for _, in := range []struct {
		n *G.Node
		v *tensor.Dense
	}{{tl.entries, tl.entryVal}, {tl.taken, tl.takenVal}, {tl.weights, tl.weightVal}} {
		if err := G.Let(in.n, in.v); err != nil {
			return fmt.Errorf("nn: table loss: %w", err)
		}
	}
	return nil
}
