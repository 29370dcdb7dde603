package ops

import (
	"github.com/rlvr-backtrack/backtrack/nn/kernels"

	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Compile-time interface checks: the forward op is differentiable
// symbolically (G.Grad), the backward op is a plain op; both can write into
// a register the tape machine hands them.
var (
	_ G.SDOp            = (*segmentLogSoftmax)(nil)
	_ G.UsePreallocDoer = (*segmentLogSoftmax)(nil)
	_ G.Op              = (*segmentLogSoftmaxDiff)(nil)
	_ G.UsePreallocDoer = (*segmentLogSoftmaxDiff)(nil)
)

// SegmentLogSoftmax returns the log-softmax of each ragged row of the 1-D
// float64 vector x, the rows being x[offsets[r]:offsets[r+1]]:
//
//	out[e] = x[e] - log sum_{e' in row(e)} exp(x[e'])
//
// computed stably (the row maximum is subtracted first) by one fused op, with
// no allocation per element or per step; its backward, written by hand, is
// one fused op too, grad_x[e] = g[e] - softmax[e] * sum_row(g), the softmax
// kept from the forward's exponentials
// (TestSegmentLogSoftmaxMatchesStock checks it against gorgonia's autodiff
// of stock.MaskedLogSoftmax). A row of length 1 gives exactly 0 (and
// gradient 0). offsets must start at 0, increase strictly (every row has at
// least one entry) and end at len(x).
//
// It replaces gorgonia v0.9.18's softmax family, which is wrong: G.SoftMax
// and G.LogSoftMax start each row's maximum from the first element of the
// whole tensor, so a row far below it gives NaN or +Inf; their op hash
// ignores the log flag, so SoftMax(x) and LogSoftMax(x) in one graph are
// merged into one node and one of them returns the other's values; and
// G.LogSumExp adds the maximum inside the log (package stock's
// TestGorgoniaSoftMaxBug, TestGorgoniaLogSoftMaxBug,
// TestGorgoniaSoftMaxLogSoftMaxMerge, TestGorgoniaLogSumExpBug).
func SegmentLogSoftmax(x *G.Node, offsets []int) (out *G.Node, err error) {
	defer recoverGraph("segment log-softmax", &err)
	if x == nil {
		return nil, fmt.Errorf("ops: segment log-softmax: nil input")
	}
	if x.Dims() != 1 {
		return nil, fmt.Errorf("ops: segment log-softmax: input shape %v: want a vector", x.Shape())
	}
	if dt := x.Dtype(); dt != G.Float64 {
		return nil, fmt.Errorf("ops: segment log-softmax: input dtype %v: want float64", dt)
	}
	if err := checkOffsets(offsets, x.Shape().TotalSize()); err != nil {
		return nil, fmt.Errorf("ops: segment log-softmax: %w", err)
	}
	op := newSegmentLogSoftmax(offsets)
	out, err = G.ApplyOp(op, x) // (n) -> (n)
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-softmax: %w", err)
	}
	return out, nil
}

// checkOffsets checks that offsets cut [0, n) into non-empty rows.
func checkOffsets(offsets []int, n int) error {
	if len(offsets) < 2 || offsets[0] != 0 || offsets[len(offsets)-1] != n {
		return fmt.Errorf("offsets must run from 0 to the input length %d in at least one row", n)
	}
	for r := 0; r+1 < len(offsets); r++ {
		if offsets[r+1] <= offsets[r] {
			return fmt.Errorf("row %d has %d entries: want >= 1", r, offsets[r+1]-offsets[r])
		}
	}
	return nil
}

// segmentLogSoftmax is the forward op: (n) -> (n).
//
// Do writes into a vector the op keeps from one run to the next instead of
// allocating one per step (the tape machine's Reset drops every register,
// so without it each step would allocate and zero 8n bytes). This is safe
// because the op runs once per run of its graph's one machine and every run
// overwrites the whole vector; values read after a run must be copied out
// (G.Read), as for any gorgonia node.
//
// Do also keeps the softmax of its input in prob, from the same
// exponentials: the backward op reads it there (it runs after the forward
// in the same run), so a step takes one exponential per entry.
type segmentLogSoftmax struct {
	offsets []int         // row starts, len rows+1, owned by the op
	sig     uint64        // hash of offsets, so ops over different rows never merge
	out     *tensor.Dense // output reused by Do
	lse     []float64     // per-row scratch
	prob    []float64     // the softmax of the last Do's input
}

func newSegmentLogSoftmax(offsets []int) *segmentLogSoftmax {
	h := fnv.New64a()
	var buf [8]byte
	for _, o := range offsets {
		for i := range buf {
			buf[i] = byte(uint64(o) >> (8 * i))
		}
		h.Write(buf[:])
	}
	return &segmentLogSoftmax{offsets: append([]int(nil), offsets...), sig: h.Sum64(), lse: make([]float64, len(offsets)-1),
		prob: make([]float64, offsets[len(offsets)-1])}
}

func (op *segmentLogSoftmax) n() int { return op.offsets[len(op.offsets)-1] }

func (op *segmentLogSoftmax) Arity() int { return 1 }

func (op *segmentLogSoftmax) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}

func (op *segmentLogSoftmax) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	return inferVectorShape(op.n(), ds...)
}

func (op *segmentLogSoftmax) Do(vals ...G.Value) (G.Value, error) {
	return reuseDo(&op.out, op.UsePreallocDo, vals)
}

// UsePreallocDo writes into prealloc when it is a float64 vector of the
// right length, and into a fresh vector otherwise.
func (op *segmentLogSoftmax) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("ops: segment log-softmax: got %d inputs, want 1", len(vals))
	}
	x, err := float64Data(vals[0], op.n())
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-softmax: input: %w", err)
	}
	out, data := outputVector(prealloc, op.n())
	if &data[0] == &x[0] {
		return nil, fmt.Errorf("ops: segment log-softmax: output aliases the input")
	}
	kernels.LogSoftmaxRows(data, op.prob, x, op.offsets, op.lse)
	return out, nil
}

func (op *segmentLogSoftmax) ReturnsPtr() bool     { return false }
func (op *segmentLogSoftmax) CallsExtern() bool    { return false }
func (op *segmentLogSoftmax) OverwritesInput() int { return -1 }

func (op *segmentLogSoftmax) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "SegmentLogSoftmax{rows=%d,n=%d,sig=%x}", len(op.offsets)-1, op.n(), op.sig)
}

func (op *segmentLogSoftmax) Hashcode() uint32 { return hashOp(op) }

func (op *segmentLogSoftmax) String() string {
	return fmt.Sprintf("SegmentLogSoftmax{rows=%d}", len(op.offsets)-1)
}

func (op *segmentLogSoftmax) DiffWRT(inputs int) []bool { return []bool{true} }

// SymDiff builds the backward as one fused op on the forward's output and
// the incoming gradient: grad_x[e] = g[e] - pi[e] * sum_row(g), pi the
// softmax the forward kept (the output is an input so that the backward
// runs after it).
func (op *segmentLogSoftmax) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("ops: segment log-softmax: got %d inputs, want 1", len(inputs))
	}
	dx, err := G.ApplyOp(&segmentLogSoftmaxDiff{fwd: op}, output, grad) // (n), (n) -> (n)
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-softmax backward: %w", err)
	}
	return G.Nodes{dx}, nil
}

// segmentLogSoftmaxDiff is the backward op: (log-softmax (n), g (n)) ->
// grad_x (n); it reads the softmax its forward op kept.
// Like the forward op, Do reuses its output vector from run to run.
type segmentLogSoftmaxDiff struct {
	fwd *segmentLogSoftmax
	out *tensor.Dense // output reused by Do
}

func (op *segmentLogSoftmaxDiff) Arity() int { return 2 }

func (op *segmentLogSoftmaxDiff) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}

func (op *segmentLogSoftmaxDiff) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	return inferVectorShape(op.fwd.n(), ds...)
}

func (op *segmentLogSoftmaxDiff) Do(vals ...G.Value) (G.Value, error) {
	return reuseDo(&op.out, op.UsePreallocDo, vals)
}

func (op *segmentLogSoftmaxDiff) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: segment log-softmax backward: got %d inputs, want 2", len(vals))
	}
	n := op.fwd.n()
	if _, err := float64Data(vals[0], n); err != nil {
		return nil, fmt.Errorf("ops: segment log-softmax backward: log-probabilities: %w", err)
	}
	g, err := float64Data(vals[1], n)
	if err != nil {
		return nil, fmt.Errorf("ops: segment log-softmax backward: gradient: %w", err)
	}
	out, data := outputVector(prealloc, n)
	kernels.LogSoftmaxRowsBackward(data, op.fwd.prob, g, op.fwd.offsets)
	return out, nil
}

func (op *segmentLogSoftmaxDiff) ReturnsPtr() bool     { return false }
func (op *segmentLogSoftmaxDiff) CallsExtern() bool    { return false }
func (op *segmentLogSoftmaxDiff) OverwritesInput() int { return -1 }

func (op *segmentLogSoftmaxDiff) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "SegmentLogSoftmaxDiff{rows=%d,n=%d,sig=%x}", len(op.fwd.offsets)-1, op.fwd.n(), op.fwd.sig)
}

func (op *segmentLogSoftmaxDiff) Hashcode() uint32 { return hashOp(op) }

func (op *segmentLogSoftmaxDiff) String() string {
	return fmt.Sprintf("SegmentLogSoftmaxDiff{rows=%d}", len(op.fwd.offsets)-1)
}
