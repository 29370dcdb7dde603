package nn

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TableLoss is the scalar sum_t w[t] log pi_t(a_t) over up to Capacity
// tokens whose next-token logits are a per-entry logit table plus
// constant offsets: token t's slots are entries of the table, slot k's
// logit is table[entry] + offset, pi_t is the softmax over its slots and
// a_t the slot it took. Only the table (a (P) vector node) is
// differentiable: this is a transformer's logit table B trained on every
// sampled token with the rest of the logit (LN(h) U, a constant here)
// taken from the sampler, or a bigram with offsets 0.
//
// The graph is built once with a fixed shape and refilled between runs
// (Fill), as the windows graph is: a batch of any size is a sequence of
// fills whose gradients nn.Step.Accumulate sums, so the memory is bounded
// by Capacity and no graph is built per batch. The per-token
// log-likelihood is one fused op (tableKernel): its forward keeps each
// slot's probability for its backward, so a token costs one exponential
// per slot, and both run on every core.
type TableLoss struct {
	Cost *G.Node // the scalar

	k         *tableKernel
	weights   *G.Node
	weightVal *tensor.Dense
}

// NewTableLoss adds the loss to table's graph for fills of up to capacity
// tokens.
func NewTableLoss(table *G.Node, capacity int) (tl *TableLoss, err error) {
	defer recoverGraph("table loss", &err)
	if table == nil || table.Dims() != 1 || table.Dtype() != G.Float64 {
		return nil, fmt.Errorf("nn: table loss: table must be a float64 vector node")
	}
	if capacity < 1 {
		return nil, fmt.Errorf("nn: table loss: capacity %d: want >= 1", capacity)
	}
	g := table.Graph()
	tl = &TableLoss{k: &tableKernel{p: table.Shape()[0], capacity: capacity}}
	tl.weightVal = tensor.New(tensor.WithShape(capacity), tensor.WithBacking(make([]float64, capacity)))
	tl.weights = G.NewVector(g, G.Float64, G.WithShape(capacity), G.WithName("table_weights"), G.WithValue(tl.weightVal))
	logp, err := applyFused("TableLogLik", tl.k, tensor.Shape{capacity}, table) // (P) -> (N): log pi_t(a_t)
	if err != nil {
		return nil, fmt.Errorf("nn: table loss: %w", err)
	}
	if tl.Cost, err = G.Mul(tl.weights, logp); err != nil { // (N) . (N) -> ()
		return nil, fmt.Errorf("nn: table loss: %w", err)
	}
	return tl, nil
}

// Capacity is the most tokens one fill holds.
func (tl *TableLoss) Capacity() int { return tl.k.capacity }

// Fill sets the loss's tokens for the next run: n tokens (at most
// Capacity), token t's slots [rows[t], rows[t+1]) of entries and offsets,
// taken[t] the slot it took and w[t] its weight. Tokens past n get no
// weight. The slices are kept, not copied (at the paper's size the copy
// was a tenth of the pass): leave them unchanged until the graph has run.
func (tl *TableLoss) Fill(entries, rows, taken []int, offsets, w []float64) error {
	k := tl.k
	n := len(rows) - 1
	if n < 0 || n > k.capacity || len(taken) != n || len(w) != n || rows[0] != 0 || rows[n] != len(entries) || len(offsets) != len(entries) {
		return fmt.Errorf("nn: table loss: %d rows (capacity %d), %d taken, %d weights, %d entries, %d offsets: want one taken and weight per row, rows from 0 to the entries, one offset per entry", n, k.capacity, len(taken), len(w), len(entries), len(offsets))
	}
	for t := range n {
		if rows[t+1] <= rows[t] {
			return fmt.Errorf("nn: table loss: token %d has %d slots: want at least 1", t, rows[t+1]-rows[t])
		}
		if taken[t] < 0 || taken[t] >= rows[t+1]-rows[t] {
			return fmt.Errorf("nn: table loss: token %d took slot %d of %d", t, taken[t], rows[t+1]-rows[t])
		}
	}
	for i, e := range entries {
		if e < 0 || e >= k.p {
			return fmt.Errorf("nn: table loss: slot %d: entry %d: want in [0, %d)", i, e, k.p)
		}
	}
	k.n = n
	k.entries, k.rows, k.taken, k.offsets = entries, rows, taken, offsets
	k.pi = grow(k.pi, len(entries))
	wt := tl.weightVal.Data().([]float64)
	copy(wt, w)
	clear(wt[n:])
	return G.Let(tl.weights, tl.weightVal)
}

// tableKernel is the per-token log-likelihood of a logit table plus
// offsets: (table (P)) -> (log pi_t(a_t) (Capacity)), 0 past the fill.
// Its derivative: d log pi_t(a_t) / d table[e] = sum over t's slots k with
// entry e of 1{k = a_t} - pi_t(k).
type tableKernel struct {
	p, capacity int
	n           int // tokens of the current fill
	entries     []int
	rows, taken []int
	offsets     []float64
	pi          []float64 // each slot's probability, kept by forward for backward
	scratch     []float64 // backward: one table-sized accumulator per block
}

// tableBlock is the number of tokens one goroutine handles serially: the
// blocks' gradients are summed in block order, so results do not depend on
// the number of cores.
const tableBlock = 4096

func (k *tableKernel) forward(out []float64, in [][]float64) error {
	table := in[0]
	clear(out[k.n:])
	parallelFor(k.n, tableBlock, func(lo, hi int) {
		for t := lo; t < hi; t++ { // pi holds z - max(z) per token, out the taken one's
			a, b := k.rows[t], k.rows[t+1]
			m := math.Inf(-1)
			for s := a; s < b; s++ {
				k.pi[s] = table[k.entries[s]] + k.offsets[s]
				m = max(m, k.pi[s])
			}
			for s := a; s < b; s++ {
				k.pi[s] -= m
			}
			out[t] = k.pi[a+k.taken[t]]
		}
		slots := k.pi[k.rows[lo]:k.rows[hi]]
		exps(slots, slots, 0) // the whole block's exponentials at once
		for t := lo; t < hi; t++ {
			a, b := k.rows[t], k.rows[t+1]
			sum := 0.0
			for s := a; s < b; s++ {
				sum += k.pi[s]
			}
			inv := 1 / sum
			for s := a; s < b; s++ {
				k.pi[s] *= inv
			}
			out[t] -= math.Log(sum)
		}
	})
	return nil
}

func (k *tableKernel) backward(grads [][]float64, _ [][]float64, g []float64) error {
	grad := grads[0]
	clear(grad)
	blocks := (k.n + tableBlock - 1) / tableBlock
	k.scratch = grow(k.scratch, blocks*k.p)
	parallelFor(blocks, 1, func(lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			acc := k.scratch[bk*k.p : (bk+1)*k.p]
			clear(acc)
			for t := bk * tableBlock; t < min(k.n, (bk+1)*tableBlock); t++ {
				gt := g[t]
				if gt == 0 {
					continue
				}
				a, b := k.rows[t], k.rows[t+1]
				for s := a; s < b; s++ {
					acc[k.entries[s]] -= gt * k.pi[s]
				}
				acc[k.entries[a+k.taken[t]]] += gt
			}
		}
	})
	for bk := range blocks {
		addTo(grad, k.scratch[bk*k.p:(bk+1)*k.p])
	}
	return nil
}
