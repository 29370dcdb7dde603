package ops

import (
	"fmt"
	"hash"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// Compile-time interface checks.
var (
	_ G.SDOp            = (*tableSurrogate)(nil)
	_ G.Op              = (*tableSurrogateDiff)(nil)
	_ G.UsePreallocDoer = (*tableSurrogateDiff)(nil)
)

// TableClippedSurrogate is PPO's clipped surrogate over the taken tokens
// of a table fill laid out by lay,
//
//	ClippedSurrogate(Gather(TableLogSoftmax(lay, table), lay.Taken()), oldLogp, advPos, advNeg, eps),
//
// as one op: a (Capacity) vector of each token's taken log-probability in
// place of the (Capacity*R) log-probabilities of every slot, one pass over
// the tokens forward and one backward, where the three ops took three
// each. Its value and its gradient with respect to table are those three
// ops' bit for bit (TestTableClippedSurrogateMatchesOps): every value is
// computed by the same operations in the same order. Only table is
// differentiated; oldLogp, advPos and advNeg are (Capacity) constants.
// TestTableClippedSurrogateMatchesStock checks it against gorgonia's
// autodiff of the stock form (stock.TableLogSoftmax, stock.Gather,
// stock.ClippedSurrogate).
func TableClippedSurrogate(lay *TableLayout, table, oldLogp, advPos, advNeg *G.Node, eps float64) (out *G.Node, err error) {
	defer recoverGraph("table clipped surrogate", &err)
	if table.Dims() != 1 || table.Dtype() != G.Float64 {
		return nil, fmt.Errorf("ops: table clipped surrogate: table %v %v: want a float64 vector", table.Dtype(), table.Shape())
	}
	n := lay.capacity
	for _, in := range []*G.Node{oldLogp, advPos, advNeg} {
		if in.Dims() != 1 || in.Dtype() != G.Float64 || in.Shape().TotalSize() != n {
			return nil, fmt.Errorf("ops: table clipped surrogate: input %q is %v %v: want a float64 vector of %d", in.Name(), in.Dtype(), in.Shape(), n)
		}
	}
	if !(eps >= 0) {
		return nil, fmt.Errorf("ops: table clipped surrogate: eps %v: want >= 0", eps)
	}
	op := &tableSurrogate{lay: lay, p: table.Shape()[0], eps: eps, id: fusedIDs.Add(1)}
	out, err = G.ApplyOp(op, table, oldLogp, advPos, advNeg) // (P), 3 x (Capacity) -> ()
	if err != nil {
		return nil, fmt.Errorf("ops: table clipped surrogate: %w", err)
	}
	return out, nil
}

// tableSurrogate is the forward op: (table, old, advPos, advNeg) -> (). It
// keeps each slot's probability and each token's ratio for its backward.
type tableSurrogate struct {
	lay    *TableLayout
	p      int // table entries
	eps    float64
	id     uint64    // unique: the op reads its layout, which no input names
	pi     []float64 // (Capacity*R) each slot's probability
	ratio  []float64 // (Capacity) each token's ratio (its taken log-probability until the ratios are taken)
	blocks []float64 // ClippedSurrogate's per-block sums
	fwd    []float64 // each goroutine's packed exponentials and sums (TableLogSoftmax's)
	errs   []error   // each clipped block's layout check
	runs   uint64    // forwards done
	acc    []float64 // backward: one table-sized accumulator per table block
}

func (op *tableSurrogate) Arity() int { return 4 }

func (op *tableSurrogate) Type() hm.Type {
	a := hm.TypeVariable('a')
	v := G.TensorType{Dims: 1, Of: a}
	return hm.NewFnType(v, v, v, v, a)
}

func (op *tableSurrogate) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	if len(ds) != 4 {
		return nil, fmt.Errorf("ops: table clipped surrogate: got %d inputs, want 4", len(ds))
	}
	if _, err := inferVectorShape(op.p, ds[0]); err != nil {
		return nil, err
	}
	if _, err := inferVectorShape(op.lay.capacity, ds[1:]...); err != nil {
		return nil, err
	}
	return tensor.ScalarShape(), nil
}

// Do is TableLogSoftmax's forward (tableBlockTaken), keeping of each
// token only its taken slot's log-probability, then ClippedSurrogate's
// forward on those, in ClippedSurrogate's blocks: each clipped block
// (clippedBlock tokens, a whole number of table blocks) is one
// goroutine's, so one parallel pass does both.
func (op *tableSurrogate) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 4 {
		return nil, fmt.Errorf("ops: table clipped surrogate: got %d inputs, want 4", len(vals))
	}
	l, r, n := op.lay, op.lay.r, op.lay.capacity
	table, err := float64Data(vals[0], op.p)
	if err != nil {
		return nil, fmt.Errorf("ops: table clipped surrogate: table: %w", err)
	}
	var in [3][]float64
	for i, v := range vals[1:] {
		if in[i], err = float64Data(v, n); err != nil {
			return nil, fmt.Errorf("ops: table clipped surrogate: input %d: %w", i+1, err)
		}
	}
	old, pos, neg := in[0], in[1], in[2]
	op.pi, op.ratio = kernels.Grow(op.pi, n*r), kernels.Grow(op.ratio, n)
	op.blocks = kernels.Grow(op.blocks, (n+clippedBlock-1)/clippedBlock)
	empty := -math.Log(float64(r)) // TableLogSoftmax's value on a token with no unmasked slot
	hi, lo := 1+op.eps, 1-op.eps
	size := tableBlock*r + 3 + tableBlock
	parts := runtime.GOMAXPROCS(0)
	op.fwd = kernels.Grow(op.fwd, parts*size)
	var part atomic.Int64 // each call of ParallelFor claims its own scratch (see TableLogSoftmax)
	op.errs = kernels.Grow(op.errs, len(op.blocks))
	kernels.ParallelFor(len(op.blocks), 1, func(b0, b1 int) {
		var s []float64
		if i := int(part.Add(1) - 1); i < parts {
			s = op.fwd[i*size : (i+1)*size]
		} else {
			s = make([]float64, size)
		}
		packed, sums := s[:tableBlock*r+3], s[tableBlock*r+3:]
		for b := b0; b < b1; b++ {
			i0, i1 := b*clippedBlock, min(n, (b+1)*clippedBlock)
			op.errs[b] = nil
			for s0 := i0; s0 < i1; s0 += tableBlock {
				s1 := min(i1, s0+tableBlock)
				m := max(s0, min(s1, l.n)) // tokens [s0, m) are filled, [m, s1) empty
				if op.errs[b] = l.checkRange(op.p, s0, m); op.errs[b] != nil {
					break
				}
				tableBlockTaken(op.ratio[s0:m], op.pi[s0*r:m*r], table, l.first[s0:m], l.cnt[s0:m], l.taken[s0:m], l.offsets[s0*r:m*r], s0, r, packed, sums)
				for t := m; t < s1; t++ {
					op.ratio[t] = empty
					clear(op.pi[t*r : (t+1)*r])
				}
			}
			if op.errs[b] != nil {
				continue
			}
			x := op.ratio[i0:i1] // the taken log-probabilities, then the ratios
			op.blocks[b] = clippedBlockSum(x, x, old[i0:i1], pos[i0:i1], neg[i0:i1], hi, lo)
		}
	})
	if err := firstError(op.errs); err != nil {
		return nil, fmt.Errorf("ops: table clipped surrogate: %w", err)
	}
	sum := 0.0
	for _, s := range op.blocks {
		sum += s
	}
	op.runs++
	return G.NewF64(sum), nil
}

// tableBlockTaken is tableBlockForward for one block of filled tokens
// (the first at token index t0) that writes, instead of every slot's
// log-probability, the taken slot's into taken: the same values, bit for
// bit.
func tableBlockTaken(taken, pi, table []float64, first, cnt, slot []int, offsets []float64, t0, r int, packed, sums []float64) {
	at := 0
	for t, e0 := range first {
		c, off := cnt[t], offsets[t*r:(t+1)*r]
		z := packed[at : at+c]
		m := logits(z, table[e0:e0+c], off)
		for j := range z {
			z[j] -= m
		}
		taken[t] = z[slot[t]-(t0+t)*r]
		at += c
	}
	for t, lse := range blockLogSums(pi, cnt, r, packed, at, sums) {
		taken[t] -= lse
	}
}

func (op *tableSurrogate) ReturnsPtr() bool     { return false }
func (op *tableSurrogate) CallsExtern() bool    { return false }
func (op *tableSurrogate) OverwritesInput() int { return -1 }

func (op *tableSurrogate) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "TableClippedSurrogate#%d{n=%d,eps=%v}", op.id, op.lay.capacity, op.eps)
}

func (op *tableSurrogate) Hashcode() uint32 { return hashOp(op) }

func (op *tableSurrogate) String() string {
	return fmt.Sprintf("TableClippedSurrogate{n=%d}", op.lay.capacity)
}

func (op *tableSurrogate) DiffWRT(inputs int) []bool { return []bool{true, false, false, false} }

// SymDiff builds the backward with respect to the table as one op on the
// advantages, the output and its gradient (the output orders it after
// the forward, whose probabilities and ratios it reads).
func (op *tableSurrogate) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 4 {
		return nil, fmt.Errorf("ops: table clipped surrogate: got %d inputs, want 4", len(inputs))
	}
	d, err := G.ApplyOp(&tableSurrogateDiff{fwd: op}, inputs[2], inputs[3], output, grad) // (N), (N), (), () -> (P)
	if err != nil {
		return nil, fmt.Errorf("ops: table clipped surrogate backward: %w", err)
	}
	return G.Nodes{d, nil, nil, nil}, nil
}

// tableSurrogateDiff is the backward op: (advPos, advNeg, out, g) -> the
// gradient with respect to the table. Do reuses its output vector.
type tableSurrogateDiff struct {
	fwd *tableSurrogate
	out *tensor.Dense
}

func (op *tableSurrogateDiff) Arity() int { return 4 }

func (op *tableSurrogateDiff) Type() hm.Type {
	a := hm.TypeVariable('a')
	v := G.TensorType{Dims: 1, Of: a}
	return hm.NewFnType(v, v, a, a, v)
}

func (op *tableSurrogateDiff) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	if len(ds) != 4 {
		return nil, fmt.Errorf("ops: table clipped surrogate backward: got %d inputs, want 4", len(ds))
	}
	return tensor.Shape{op.fwd.p}, nil
}

func (op *tableSurrogateDiff) Do(vals ...G.Value) (G.Value, error) {
	return reuseDo(&op.out, op.UsePreallocDo, vals)
}

// UsePreallocDo is ClippedSurrogate's backward, Gather's (a scatter into
// zeros) and TableLogSoftmax's in one pass over each table block's
// tokens: token t's gradient with respect to its taken log-probability is
// v = 0 + g r_t (advPos_t [r_t <= 1+eps] + advNeg_t [r_t >= 1-eps]) (the
// 0 + is the scatter's, which turns -0 into 0), and the sum of its slots'
// gradients, which TableLogSoftmax's backward takes, is v exactly (its
// other slots are 0). Each slot's term is gj - pi_j v with gj = v on the
// taken slot and 0 elsewhere; the loop subtracts pi_j v from every slot
// and then sets the taken one from its value before, without a branch per
// slot (mispredicted once a token: BenchmarkTableClippedSurrogate's
// backward took 21.5-24.9 ns a token on one core with it, 14.6-18.9
// without; docs/speed.md). a - x is a + (0 - x) bit for bit unless
// a is -0, and an accumulator that starts at +0 and only has values added
// is never -0.
func (op *tableSurrogateDiff) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	if len(vals) != 4 {
		return nil, fmt.Errorf("ops: table clipped surrogate backward: got %d inputs, want 4", len(vals))
	}
	f := op.fwd
	l, r, n := f.lay, f.lay.r, f.lay.capacity
	pos, err := float64Data(vals[0], n)
	if err != nil {
		return nil, fmt.Errorf("ops: table clipped surrogate backward: advantages: %w", err)
	}
	neg, err := float64Data(vals[1], n)
	if err != nil {
		return nil, fmt.Errorf("ops: table clipped surrogate backward: advantages: %w", err)
	}
	g, err := Scalar(vals[3])
	if err != nil {
		return nil, fmt.Errorf("ops: table clipped surrogate backward: gradient: %w", err)
	}
	if f.runs == 0 || len(f.ratio) != n {
		return nil, fmt.Errorf("ops: table clipped surrogate backward: no forward to differentiate")
	}
	out, grad := outputVector(prealloc, f.p)
	hi, lo := 1+f.eps, 1-f.eps
	f.acc = blockGradient(grad, f.acc, l.n, func(acc []float64, t0, t1 int) {
		for t := t0; t < t1; t++ {
			v := 0 + clippedGrad(g, f.ratio[t], pos[t], neg[t], hi, lo)
			k, pi := l.taken[t]-t*r, f.pi[t*r:(t+1)*r]
			a := acc[l.first[t] : l.first[t]+l.cnt[t]]
			ak := a[k] + (v - pi[k]*v)
			for j := range a {
				a[j] -= pi[j] * v
			}
			a[k] = ak
		}
	})
	return out, nil
}

func (op *tableSurrogateDiff) ReturnsPtr() bool     { return false }
func (op *tableSurrogateDiff) CallsExtern() bool    { return false }
func (op *tableSurrogateDiff) OverwritesInput() int { return -1 }

func (op *tableSurrogateDiff) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "TableClippedSurrogateDiff#%d", op.fwd.id)
}

func (op *tableSurrogateDiff) Hashcode() uint32 { return hashOp(op) }

func (op *tableSurrogateDiff) String() string {
	return fmt.Sprintf("TableClippedSurrogateDiff{n=%d}", op.fwd.lay.capacity)
}
