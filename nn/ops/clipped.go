package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// Compile-time interface checks.
var (
	_ G.SDOp            = (*clippedSurrogate)(nil)
	_ G.Op              = (*clippedSurrogateDiff)(nil)
	_ G.UsePreallocDoer = (*clippedSurrogateDiff)(nil)
)

// ClippedSurrogate is stock.ClippedSurrogate, PPO's clipped surrogate
// summed over N items,
//
//	sum_i advPos_i min(r_i, 1+eps) + advNeg_i max(r_i, 1-eps),  r_i = exp(logp_i - oldLogp_i),
//
// as one fused op whose backward, written by hand, is one pass too:
//
//	d/dlogp_i = g r_i (advPos_i [r_i <= 1+eps] + advNeg_i [r_i >= 1-eps])
//
// (the derivative of the stock form at the kinks). Only logp is
// differentiated: the old log-probabilities and the advantages are a
// loss's constants. The stock form is a dozen ops over N-vectors, each
// allocating per run: on a paper-size transformer step, whose table pass
// runs it on every sampled token, they cost more than the table's own
// log-softmax. TestClippedSurrogateMatchesStock checks values and
// gradients against gorgonia's autodiff of the stock form. Sums are taken
// in fixed blocks, so results do not depend on the number of cores.
func ClippedSurrogate(logp, oldLogp, advPos, advNeg *G.Node, eps float64) (out *G.Node, err error) {
	defer recoverGraph("clipped surrogate", &err)
	n := logp.Shape().TotalSize()
	for _, in := range []*G.Node{logp, oldLogp, advPos, advNeg} {
		if in.Dims() != 1 || in.Dtype() != G.Float64 || in.Shape().TotalSize() != n {
			return nil, fmt.Errorf("ops: clipped surrogate: input %q is %v %v: want a float64 vector of %d", in.Name(), in.Dtype(), in.Shape(), n)
		}
	}
	if !(eps >= 0) {
		return nil, fmt.Errorf("ops: clipped surrogate: eps %v: want >= 0", eps)
	}
	op := &clippedSurrogate{n: n, eps: eps}
	out, err = G.ApplyOp(op, logp, oldLogp, advPos, advNeg) // 4 x (N) -> ()
	if err != nil {
		return nil, fmt.Errorf("ops: clipped surrogate: %w", err)
	}
	return out, nil
}

// clippedBlock is the number of items one goroutine handles serially.
const clippedBlock = 8192

// clippedSurrogate is the forward op: (logp, old, advPos, advNeg) -> ().
// It keeps the ratios for its backward.
type clippedSurrogate struct {
	n      int
	eps    float64
	ratio  []float64 // the last Do's ratios
	blocks []float64 // per-block sums
}

func (op *clippedSurrogate) Arity() int { return 4 }

func (op *clippedSurrogate) Type() hm.Type {
	a := hm.TypeVariable('a')
	v := G.TensorType{Dims: 1, Of: a}
	return hm.NewFnType(v, v, v, v, a)
}

func (op *clippedSurrogate) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	if _, err := inferVectorShape(op.n, ds...); err != nil {
		return nil, err
	}
	return tensor.ScalarShape(), nil
}

func (op *clippedSurrogate) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 4 {
		return nil, fmt.Errorf("ops: clipped surrogate: got %d inputs, want 4", len(vals))
	}
	var in [4][]float64
	for i, v := range vals {
		d, err := float64Data(v, op.n)
		if err != nil {
			return nil, fmt.Errorf("ops: clipped surrogate: input %d: %w", i, err)
		}
		in[i] = d
	}
	logp, old, pos, neg := in[0], in[1], in[2], in[3]
	hi, lo := 1+op.eps, 1-op.eps
	op.ratio = kernels.Grow(op.ratio, op.n)
	op.blocks = kernels.Grow(op.blocks, (op.n+clippedBlock-1)/clippedBlock)
	kernels.ParallelFor(len(op.blocks), 1, func(b0, b1 int) {
		for b := b0; b < b1; b++ {
			i0, i1 := b*clippedBlock, min(op.n, (b+1)*clippedBlock)
			op.blocks[b] = clippedBlockSum(op.ratio[i0:i1], logp[i0:i1], old[i0:i1], pos[i0:i1], neg[i0:i1], hi, lo)
		}
	})
	sum := 0.0
	for _, s := range op.blocks {
		sum += s
	}
	return G.NewF64(sum), nil
}

// clippedBlockSum writes one block's ratios exp(logp - old) into r (which
// may be logp) and returns the block's surrogate sum: the forward of
// ClippedSurrogate and of TableClippedSurrogate, which must agree bit for
// bit.
func clippedBlockSum(r, logp, old, pos, neg []float64, hi, lo float64) float64 {
	old, pos, neg = old[:len(r)], pos[:len(r)], neg[:len(r)]
	for i := range r {
		r[i] = logp[i] - old[i]
	}
	kernels.Exps(r, r, 0)
	s := 0.0
	for i, x := range r {
		s += pos[i]*min(x, hi) + neg[i]*max(x, lo) // the builtins: math.Min's and math.Max's values, inlined
	}
	return s
}

// clippedGrad is the gradient of one item's term with respect to its
// log-probability, given the output's gradient g and its ratio x: the
// backward of ClippedSurrogate and of TableClippedSurrogate.
func clippedGrad(g, x, pos, neg, hi, lo float64) float64 {
	d := 0.0
	if x <= hi {
		d += pos
	}
	if x >= lo {
		d += neg
	}
	return g * x * d
}

func (op *clippedSurrogate) ReturnsPtr() bool     { return false }
func (op *clippedSurrogate) CallsExtern() bool    { return false }
func (op *clippedSurrogate) OverwritesInput() int { return -1 }

func (op *clippedSurrogate) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "ClippedSurrogate{n=%d,eps=%v}", op.n, op.eps)
}

func (op *clippedSurrogate) Hashcode() uint32 { return hashOp(op) }

func (op *clippedSurrogate) String() string { return fmt.Sprintf("ClippedSurrogate{n=%d}", op.n) }

func (op *clippedSurrogate) DiffWRT(inputs int) []bool { return []bool{true, false, false, false} }

// SymDiff builds the backward with respect to logp as one op on the
// advantages, the output and its gradient (the output orders it after the
// forward, whose ratios it reads).
func (op *clippedSurrogate) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 4 {
		return nil, fmt.Errorf("ops: clipped surrogate: got %d inputs, want 4", len(inputs))
	}
	d, err := G.ApplyOp(&clippedSurrogateDiff{fwd: op}, inputs[2], inputs[3], output, grad) // (N), (N), (), () -> (N)
	if err != nil {
		return nil, fmt.Errorf("ops: clipped surrogate backward: %w", err)
	}
	return G.Nodes{d, nil, nil, nil}, nil
}

// clippedSurrogateDiff is the backward op: (advPos, advNeg, out, g) ->
// the gradient with respect to logp. Do reuses its output vector.
type clippedSurrogateDiff struct {
	fwd *clippedSurrogate
	out *tensor.Dense
}

func (op *clippedSurrogateDiff) Arity() int { return 4 }

func (op *clippedSurrogateDiff) Type() hm.Type {
	a := hm.TypeVariable('a')
	v := G.TensorType{Dims: 1, Of: a}
	return hm.NewFnType(v, v, a, a, v)
}

func (op *clippedSurrogateDiff) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	if len(ds) != 4 {
		return nil, fmt.Errorf("ops: clipped surrogate backward: got %d inputs, want 4", len(ds))
	}
	return tensor.Shape{op.fwd.n}, nil
}

func (op *clippedSurrogateDiff) Do(vals ...G.Value) (G.Value, error) {
	return reuseDo(&op.out, op.UsePreallocDo, vals)
}

func (op *clippedSurrogateDiff) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	if len(vals) != 4 {
		return nil, fmt.Errorf("ops: clipped surrogate backward: got %d inputs, want 4", len(vals))
	}
	n := op.fwd.n
	pos, err := float64Data(vals[0], n)
	if err != nil {
		return nil, fmt.Errorf("ops: clipped surrogate backward: advantages: %w", err)
	}
	neg, err := float64Data(vals[1], n)
	if err != nil {
		return nil, fmt.Errorf("ops: clipped surrogate backward: advantages: %w", err)
	}
	g, err := Scalar(vals[3])
	if err != nil {
		return nil, fmt.Errorf("ops: clipped surrogate backward: gradient: %w", err)
	}
	if len(op.fwd.ratio) != n {
		return nil, fmt.Errorf("ops: clipped surrogate backward: no forward to differentiate")
	}
	out, data := outputVector(prealloc, n)
	hi, lo := 1+op.fwd.eps, 1-op.fwd.eps
	kernels.ParallelFor(n, clippedBlock, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			data[i] = clippedGrad(g, op.fwd.ratio[i], pos[i], neg[i], hi, lo)
		}
	})
	return out, nil
}

func (op *clippedSurrogateDiff) ReturnsPtr() bool     { return false }
func (op *clippedSurrogateDiff) CallsExtern() bool    { return false }
func (op *clippedSurrogateDiff) OverwritesInput() int { return -1 }

func (op *clippedSurrogateDiff) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "ClippedSurrogateDiff{n=%d,eps=%v}", op.fwd.n, op.fwd.eps)
}

func (op *clippedSurrogateDiff) Hashcode() uint32 { return hashOp(op) }

func (op *clippedSurrogateDiff) String() string {
	return fmt.Sprintf("ClippedSurrogateDiff{n=%d}", op.fwd.n)
}
