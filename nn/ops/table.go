package ops

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// TableLayout is the integer and constant side of a TableLogSoftmax: up
// to Capacity tokens of R logit slots each, token t's slot j (j < its
// count) the support entry first[t]+j of the table with a constant offset,
// every other slot masked. The caller fills it (Set, SetLen) before each
// run; the op reads it at every run. A token past the fill's length has
// no unmasked slot.
type TableLayout struct {
	capacity, r int
	n           int       // tokens of the current fill
	first, cnt  []int     // (Capacity) each token's first entry and number of unmasked slots
	offsets     []float64 // (Capacity*R) each slot's constant, 0 on masked slots
	taken       []int     // (Capacity) the slot t*R+k of the token each position took
}

// NewTableLayout returns an empty layout of capacity tokens of r slots.
func NewTableLayout(capacity, r int) *TableLayout {
	return &TableLayout{capacity: capacity, r: r, first: make([]int, capacity), cnt: make([]int, capacity),
		offsets: make([]float64, capacity*r), taken: make([]int, capacity)}
}

// Capacity returns the most tokens a fill holds.
func (l *TableLayout) Capacity() int { return l.capacity }

// Width returns R, the slots per token.
func (l *TableLayout) Width() int { return l.r }

// Set lays out token t (< Capacity) as count (1 to R) unmasked slots over
// the entries first, first+1, ... of the table, having taken slot k <
// count, and returns its count offsets for the caller to write; its
// masked slots get offset 0. Tokens set on several goroutines must differ.
func (l *TableLayout) Set(t, first, count, k int) []float64 {
	l.first[t], l.cnt[t], l.taken[t] = first, count, t*l.r+k
	o := l.offsets[t*l.r : (t+1)*l.r]
	clear(o[count:])
	return o[:count]
}

// SetLen ends a fill of n tokens, set by Set; the tokens from n on have
// no unmasked slot (and take slot 0).
func (l *TableLayout) SetLen(n int) {
	for t := n; t < l.n; t++ {
		l.cnt[t], l.taken[t] = 0, t*l.r
		clear(l.offsets[t*l.r : (t+1)*l.r])
	}
	l.n = n
}

// Taken returns the slot of each token's taken next token (t*R+k). Do not
// modify it.
func (l *TableLayout) Taken() []int { return l.taken }

// Check checks the fill against a table of p entries: every slot count
// in [1, R], every taken slot among the unmasked ones, every entry in
// [0, p).
func (l *TableLayout) Check(p int) error { return l.checkRange(p, 0, l.n) }

// checkRange is Check over the filled tokens [lo, hi): the ops check each
// block of tokens where they compute it, on every core (two serial checks
// of each fill, in nn.TableBatch.SetLen and in the op, took 0.2-0.5 s of a
// paper-size transformer update's 2.8-3.2).
func (l *TableLayout) checkRange(p, lo, hi int) error {
	for t := lo; t < hi; t++ {
		c, k := l.cnt[t], l.taken[t]-t*l.r
		if c < 1 || c > l.r {
			return fmt.Errorf("token %d has %d slots: want 1 to %d", t, c, l.r)
		}
		if k < 0 || k >= c {
			return fmt.Errorf("token %d took slot %d of %d", t, k, c)
		}
		if l.first[t] < 0 || l.first[t]+c > p {
			return fmt.Errorf("token %d: entries %d to %d: want in [0, %d)", t, l.first[t], l.first[t]+c, p)
		}
	}
	return nil
}

// TableIndices is a TableLayout as the index and mask vectors of a graph
// of stock ops (package stock).
type TableIndices struct {
	SlotEntry []int     // (Capacity*R) the entry of each slot, 0 when masked
	Valid     []float64 // (Capacity*R) 1 on an unmasked slot, 0 on a masked one
	Mask      []float64 // (Capacity*R) 0 on an unmasked slot, MaskLogit on a masked one
	Offsets   []float64 // (Capacity*R) each slot's constant, 0 on masked slots: the layout's own
}

// Indices returns the fill as index and mask vectors, written into in's
// slices (reused when large enough).
func (l *TableLayout) Indices(in *TableIndices) {
	m := l.capacity * l.r
	in.SlotEntry, in.Valid, in.Mask = kernels.Grow(in.SlotEntry, m), kernels.Grow(in.Valid, m), kernels.Grow(in.Mask, m)
	for t := range l.capacity {
		for j := range l.r {
			s := t*l.r + j
			if j < l.cnt[t] {
				in.SlotEntry[s], in.Valid[s], in.Mask[s] = l.first[t]+j, 1, 0
			} else {
				in.SlotEntry[s], in.Valid[s], in.Mask[s] = 0, 0, MaskLogit
			}
		}
	}
	in.Offsets = l.offsets
}

// TableLogSoftmax adds the fused op of a logit table's per-token
// log-softmax: for token t of the fill laid out by lay and its slot j,
//
//	z_tj = table[first_t + j] + offset_tj   for j < count_t,
//	z_tj = MaskLogit                        otherwise,
//	out_tj = z_tj - log sum_j' exp(z_tj')
//
// a (Capacity*R) vector of log-probabilities laid out as Unembed's. It is
// a transformer's logit table B trained on every sampled token with the
// rest of each logit (LN(h) . U, a constant here) taken from the sampler.
// Its forward keeps each slot's probability for its backward, written by
// hand: dz = g - pi sum_row(g) on unmasked slots, dtable[e] = the sum of
// dz over the slots of entry e, summed in fixed blocks of tokens in block
// order (results do not depend on the number of cores).
// TestTableLogSoftmaxMatchesStock checks it against gorgonia's autodiff of
// stock.TableLogSoftmax.
func TableLogSoftmax(lay *TableLayout, table *G.Node) (*G.Node, error) {
	if table.Dims() != 1 {
		return nil, fmt.Errorf("ops: table log-softmax: table shape %v: want a vector", table.Shape())
	}
	k := &tableKernel{lay: lay, p: table.Shape()[0]}
	return applyFused("TableLogSoftmax", k, tensor.Shape{lay.capacity * lay.r}, table) // (P) -> (Capacity*R)
}

// tableKernel computes TableLogSoftmax's forward and backward.
type tableKernel struct {
	lay     *TableLayout
	p       int
	pi      []float64 // (Capacity*R) each slot's probability, kept by forward for backward
	scratch []float64 // backward: one table-sized accumulator per block
	fwd     []float64 // forward: each goroutine's packed exponentials and sums
	errs    []error   // forward: each block's layout check
}

// tableBlock is the number of tokens of one block: the forward takes a
// block's exponentials at once, the backward sums a block's gradient into
// one accumulator. The blocks are fixed, so results do not depend on the
// number of cores.
const tableBlock = 4096

func (k *tableKernel) forward(out []float64, in [][]float64) error {
	l, table, r := k.lay, in[0], k.lay.r
	k.pi = kernels.Grow(k.pi, len(out))
	empty := -math.Log(float64(r)) // a row of R masked slots: log-softmax of R equal logits
	blocks := (l.capacity + tableBlock - 1) / tableBlock
	// Each of ParallelFor's calls (at most GOMAXPROCS) claims its own
	// scratch, kept from run to run: allocated afresh at every run (a
	// quarter megabyte a goroutine, hundreds of runs a step), it cost the
	// table pass tens of thousands of page faults a step.
	size := tableBlock*r + 3 + tableBlock
	parts := runtime.GOMAXPROCS(0)
	k.fwd = kernels.Grow(k.fwd, parts*size)
	var part atomic.Int64
	k.errs = kernels.Grow(k.errs, blocks)
	kernels.ParallelFor(blocks, 1, func(blo, bhi int) {
		var s []float64
		if i := int(part.Add(1) - 1); i < parts {
			s = k.fwd[i*size : (i+1)*size]
		} else {
			s = make([]float64, size)
		}
		// packed holds a block's unmasked z - max(z), token after token,
		// padded with zeros to a multiple of four: Exps takes every one
		// four at a time, wherever a token falls in the block. (Its last
		// few scalar exponentials can differ in the last bit, and when
		// each goroutine packed its whole share, which ones took that
		// path depended on the number of cores.) It stays in cache, where
		// a share's millions did not.
		packed := s[:tableBlock*r+3]
		sums := s[tableBlock*r+3:] // each token's sum of exponentials, then its log
		for bk := blo; bk < bhi; bk++ {
			lo, hi := bk*tableBlock, min(l.capacity, (bk+1)*tableBlock)
			n := max(lo, min(hi, l.n)) // tokens [lo, n) are filled, [n, hi) empty
			if k.errs[bk] = l.checkRange(k.p, lo, n); k.errs[bk] != nil {
				continue
			}
			tableBlockForward(out[lo*r:n*r], k.pi[lo*r:n*r], table, l.first[lo:n], l.cnt[lo:n], l.offsets[lo*r:n*r], r, packed, sums)
			for t := n; t < hi; t++ {
				z, pi := out[t*r:(t+1)*r], k.pi[t*r:(t+1)*r]
				for j := range z {
					z[j], pi[j] = empty, 0
				}
			}
		}
	})
	return firstError(k.errs)
}

// firstError is the first of a run's per-block errors, in block order:
// the error a serial check of the whole fill returns.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// tableBlockForward is the forward of one block's filled tokens, given as
// local slices: out and pi (R slots a token), each token's first entry and
// count of unmasked slots, the slots' offsets, the block's packed and sums
// scratch. (Run inside the op's closure, the loops reloaded the layout's
// slices from memory after every store.)
func tableBlockForward(out, pi, table []float64, first, cnt []int, offsets []float64, r int, packed, sums []float64) {
	at := 0
	for t, e0 := range first {
		c, off, z := cnt[t], offsets[t*r:(t+1)*r], out[t*r:(t+1)*r]
		m := logits(z[:c], table[e0:e0+c], off)
		for j := range c {
			z[j] -= m
			packed[at+j] = z[j]
		}
		for j := c; j < r; j++ {
			z[j] = MaskLogit - m
		}
		at += c
	}
	sums = blockLogSums(pi, cnt, r, packed, at, sums)
	for t, lse := range sums {
		z := out[t*r : (t+1)*r]
		for j := range z {
			z[j] -= lse
		}
	}
}

// logits writes z[j] = e[j] + off[j], a token's logits, and returns their
// maximum (-Inf when there are none). The maximum is taken in two chains
// of max, each half as long; max is exact, so it is the same maximum.
func logits(z, e, off []float64) float64 {
	m, m1 := math.Inf(-1), math.Inf(-1)
	e, off = e[:len(z)], off[:len(z)]
	j := 0
	for ; j+1 < len(z); j += 2 {
		z[j], z[j+1] = e[j]+off[j], e[j+1]+off[j+1]
		m, m1 = max(m, z[j]), max(m1, z[j+1])
	}
	if j < len(z) {
		z[j] = e[j] + off[j]
		m = max(m, z[j])
	}
	return max(m, m1)
}

// blockLogSums is the rest of a block's forward once packed holds its
// tokens' at unmasked z - max(z), token after token (cnt slots each): it
// writes each slot's probability into pi (R a token, masked slots 0) and
// returns each token's log-sum of exponentials, in sums' memory. The sums,
// their logs and the probabilities each take a loop of their own: a log
// taken in the token's loop waits on its sum, and one after another they
// took a quarter of the op.
func blockLogSums(pi []float64, cnt []int, r int, packed []float64, at int, sums []float64) []float64 {
	n4 := (at + 3) &^ 3
	clear(packed[at:n4])
	kernels.Exps(packed[:n4], packed[:n4], 0)
	sums = sums[:len(cnt)]
	at = 0
	for t, c := range cnt {
		sum := 0.0
		for _, v := range packed[at : at+c] {
			sum += v
		}
		sums[t] = sum
		at += c
	}
	at = 0
	for t, c := range cnt {
		p := pi[t*r : (t+1)*r]
		inv := 1 / sums[t]
		for j := range c {
			p[j] = packed[at+j] * inv
		}
		for j := c; j < r; j++ { // masked: probability exactly 0 (clear's call cost more than these few)
			p[j] = 0
		}
		at += c
	}
	kernels.Logs(sums, sums) // math.Log's bits, four at a time
	return sums
}

func (k *tableKernel) backward(grads [][]float64, _ [][]float64, g []float64) error {
	l, r := k.lay, k.lay.r
	k.scratch = blockGradient(grads[0], k.scratch, l.n, func(acc []float64, t0, t1 int) {
		for t := t0; t < t1; t++ {
			gr, pi := g[t*r:(t+1)*r], k.pi[t*r:(t+1)*r]
			sum := 0.0
			for _, v := range gr {
				sum += v
			}
			a := acc[l.first[t] : l.first[t]+l.cnt[t]]
			for j := range a {
				a[j] += gr[j] - pi[j]*sum
			}
		}
	})
	return nil
}

// blockGradient writes into grad (the table's gradient) the sum over the
// fill's n tokens that add, for each fixed block of tableBlock tokens,
// into an accumulator of its own (scratch, grown and returned, holds one
// a block): add(acc, t0, t1) for the block's tokens [t0, t1), the blocks
// on every core, then their accumulators added in block order, so the
// result does not depend on the number of cores.
func blockGradient(grad, scratch []float64, n int, add func(acc []float64, t0, t1 int)) []float64 {
	p := len(grad)
	blocks := (n + tableBlock - 1) / tableBlock
	scratch = kernels.Grow(scratch, blocks*p)
	kernels.ParallelFor(blocks, 1, func(lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			acc := scratch[bk*p : (bk+1)*p]
			clear(acc)
			add(acc, bk*tableBlock, min(n, (bk+1)*tableBlock))
		}
	})
	clear(grad)
	for bk := range blocks {
		kernels.AddTo(grad, scratch[bk*p:(bk+1)*p])
	}
	return scratch
}
