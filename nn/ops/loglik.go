package ops

import (
	"fmt"
	"hash"
	"slices"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// Compile-time interface checks: the forward op is differentiable
// symbolically (G.Grad), the backward op is a plain op writing into a
// register it keeps.
var (
	_ G.SDOp            = (*segmentLogLik)(nil)
	_ G.Op              = (*segmentLogLikDiff)(nil)
	_ G.UsePreallocDoer = (*segmentLogLikDiff)(nil)
)

// SegmentLogLik returns the scalar sum_e w[e] log softmax_row(e)(x)[e], the
// weighted log-likelihood of the ragged rows x[offsets[r]:offsets[r+1]]
// (SegmentLogSoftmax), as one fused op whose backward, written by hand, is
// one pass too:
//
//	d/dx[e] = g (w[e] - softmax[e] * sum_row(w))
//
// with the softmax kept from the forward's exponentials. It is the same
// function as G.Mul(w, SegmentLogSoftmax(x, offsets)), which
// TestSegmentLogLikMatchesStock checks it against (values and gradients,
// against gorgonia's autodiff of the stock ops), without that graph's
// per-step vectors: a step of exact RLVR at the paper's size spent a fifth
// of its time allocating them. The weights w are constants: the op has no
// gradient with respect to them.
func SegmentLogLik(x, w *G.Node, offsets []int) (out *G.Node, err error) {
	return SegmentLogLikRepeat(x, w, offsets, nil)
}

// SegmentLogLikRepeat is SegmentLogLik whose forward copies the rows of a
// repeat (kernels.Repeat, checked by kernels.CheckRepeats against offsets)
// whose values in x equal its source's bit for bit, giving the same values
// (kernels.LogSoftmaxRowsRepeat), and its backward their gradient where
// the weights repeat too (kernels.LogSoftmaxRowsBackwardRepeat): the
// headline's 15 identical branches cost one log-softmax.
func SegmentLogLikRepeat(x, w *G.Node, offsets []int, reps []kernels.Repeat) (out *G.Node, err error) {
	defer recoverGraph("segment log-likelihood", &err)
	if x == nil || w == nil {
		return nil, fmt.Errorf("ops: segment log-likelihood: nil input")
	}
	for _, in := range []*G.Node{x, w} {
		if in.Dims() != 1 || in.Dtype() != G.Float64 {
			return nil, fmt.Errorf("ops: segment log-likelihood: input %q is %v %v: want a float64 vector", in.Name(), in.Dtype(), in.Shape())
		}
	}
	n := x.Shape().TotalSize()
	if w.Shape().TotalSize() != n {
		return nil, fmt.Errorf("ops: segment log-likelihood: %d weights for %d entries", w.Shape().TotalSize(), n)
	}
	if err := checkOffsets(offsets, n); err != nil {
		return nil, fmt.Errorf("ops: segment log-likelihood: %w", err)
	}
	if err := kernels.CheckRepeats(offsets, reps); err != nil {
		return nil, fmt.Errorf("ops: segment log-likelihood: %w", err)
	}
	op := &segmentLogLik{rows: newSegmentLogSoftmax(offsets), reps: slices.Clone(reps), copied: make([]bool, len(reps))}
	out, err = G.ApplyOp(op, x, w) // (n), (n) -> ()
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-likelihood: %w", err)
	}
	return out, nil
}

// segmentLogLik is the forward op: (x (n), w (n)) -> (). Its rows'
// log-softmax and softmax go to the buffers of a segmentLogSoftmax it
// owns (never part of a graph), reused from run to run.
type segmentLogLik struct {
	rows   *segmentLogSoftmax
	logp   []float64        // the last Do's log-softmax
	reps   []kernels.Repeat // rows copied when they repeat earlier ones
	copied []bool           // Do's scratch: which repeats it copied
}

func (op *segmentLogLik) Arity() int { return 2 }

func (op *segmentLogLik) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 1, Of: a}, G.TensorType{Dims: 1, Of: a}, a)
}

func (op *segmentLogLik) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	if _, err := inferVectorShape(op.rows.n(), ds...); err != nil {
		return nil, err
	}
	return tensor.ScalarShape(), nil
}

func (op *segmentLogLik) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: segment log-likelihood: got %d inputs, want 2", len(vals))
	}
	n := op.rows.n()
	x, err := float64Data(vals[0], n)
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-likelihood: input: %w", err)
	}
	w, err := float64Data(vals[1], n)
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-likelihood: weights: %w", err)
	}
	op.logp = kernels.Grow(op.logp, n)
	if len(op.reps) > 0 {
		kernels.LogSoftmaxRowsRepeat(op.logp, op.rows.prob, x, op.rows.offsets, op.rows.lse, op.reps, op.copied)
	} else {
		kernels.LogSoftmaxRows(op.logp, op.rows.prob, x, op.rows.offsets, op.rows.lse)
	}
	return G.NewF64(kernels.Dot(w, op.logp)), nil
}

func (op *segmentLogLik) ReturnsPtr() bool     { return false }
func (op *segmentLogLik) CallsExtern() bool    { return false }
func (op *segmentLogLik) OverwritesInput() int { return -1 }

func (op *segmentLogLik) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "SegmentLogLik{rows=%d,n=%d,sig=%x}", len(op.rows.offsets)-1, op.rows.n(), op.rows.sig)
}

func (op *segmentLogLik) Hashcode() uint32 { return hashOp(op) }

func (op *segmentLogLik) String() string {
	return fmt.Sprintf("SegmentLogLik{rows=%d}", len(op.rows.offsets)-1)
}

func (op *segmentLogLik) DiffWRT(inputs int) []bool { return []bool{true, false} }

// SymDiff builds the backward with respect to x as one fused op on the
// weights and the incoming gradient (the output is an input so that the
// backward runs after the forward whose softmax it reads); the weights get
// none.
func (op *segmentLogLik) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 2 {
		return nil, fmt.Errorf("ops: segment log-likelihood: got %d inputs, want 2", len(inputs))
	}
	dx, err := G.ApplyOp(&segmentLogLikDiff{fwd: op}, inputs[1], output, grad) // (n), (), () -> (n)
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-likelihood backward: %w", err)
	}
	return G.Nodes{dx, nil}, nil
}

// segmentLogLikDiff is the backward op: (w (n), out (), g ()) -> grad_x
// (n), g (w - softmax * sum_row(w)). Do reuses its output vector from run
// to run.
type segmentLogLikDiff struct {
	fwd *segmentLogLik
	out *tensor.Dense
}

func (op *segmentLogLikDiff) Arity() int { return 3 }

func (op *segmentLogLikDiff) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 1, Of: a}, a, a, G.TensorType{Dims: 1, Of: a})
}

func (op *segmentLogLikDiff) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	if len(ds) != 3 {
		return nil, fmt.Errorf("ops: segment log-likelihood backward: got %d inputs, want 3", len(ds))
	}
	return tensor.Shape{op.fwd.rows.n()}, nil
}

func (op *segmentLogLikDiff) Do(vals ...G.Value) (G.Value, error) {
	return reuseDo(&op.out, op.UsePreallocDo, vals)
}

func (op *segmentLogLikDiff) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	if len(vals) != 3 {
		return nil, fmt.Errorf("ops: segment log-likelihood backward: got %d inputs, want 3", len(vals))
	}
	n := op.fwd.rows.n()
	w, err := float64Data(vals[0], n)
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-likelihood backward: weights: %w", err)
	}
	g, err := Scalar(vals[2])
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-likelihood backward: gradient: %w", err)
	}
	out, data := outputVector(prealloc, n)
	if len(op.fwd.reps) > 0 { // the rows whose probabilities the forward copied, and whose weights repeat too
		kernels.LogSoftmaxRowsBackwardRepeat(data, op.fwd.rows.prob, w, op.fwd.rows.offsets, op.fwd.reps, op.fwd.copied)
	} else {
		kernels.LogSoftmaxRowsBackward(data, op.fwd.rows.prob, w, op.fwd.rows.offsets)
	}
	if g != 1 {
		for i := range data {
			data[i] *= g
		}
	}
	return out, nil
}

func (op *segmentLogLikDiff) ReturnsPtr() bool     { return false }
func (op *segmentLogLikDiff) CallsExtern() bool    { return false }
func (op *segmentLogLikDiff) OverwritesInput() int { return -1 }

func (op *segmentLogLikDiff) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "SegmentLogLikDiff{rows=%d,n=%d,sig=%x}", len(op.fwd.rows.offsets)-1, op.fwd.rows.n(), op.fwd.rows.sig)
}

func (op *segmentLogLikDiff) Hashcode() uint32 { return hashOp(op) }

func (op *segmentLogLikDiff) String() string {
	return fmt.Sprintf("SegmentLogLikDiff{rows=%d}", len(op.fwd.rows.offsets)-1)
}

// Scalar returns the float64 held by a scalar value (a float64, or a
// []float64 of one element).
func Scalar(v G.Value) (float64, error) {
	if v == nil {
		return 0, fmt.Errorf("no value read")
	}
	switch d := v.Data().(type) {
	case float64:
		return d, nil
	case []float64:
		if len(d) == 1 {
			return d[0], nil
		}
	}
	return 0, fmt.Errorf("got %v %v, want a float64 scalar", v.Dtype(), v.Shape())
}
