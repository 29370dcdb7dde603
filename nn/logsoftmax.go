package nn

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

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
// no allocation per element or per step; its backward is one fused op too,
// grad_x[e] = g[e] - softmax[e] * sum_row(g). A row of length 1 gives
// exactly 0 (and gradient 0). offsets must start at 0, increase strictly
// (every row has at least one entry) and end at len(x).
//
// It replaces gorgonia v0.9.18's softmax family, which is wrong: G.SoftMax
// and G.LogSoftMax start each row's maximum from the first element of the
// whole tensor, so a row far below it gives NaN or +Inf
// (TestGorgoniaSoftMaxBug, TestGorgoniaLogSoftMaxBug); their op hash ignores
// the log flag, so SoftMax(x) and LogSoftMax(x) in one graph are merged into
// one node and one of them returns the other's values
// (TestGorgoniaSoftMaxLogSoftMaxMerge); and G.LogSumExp adds the maximum
// inside the log (TestGorgoniaLogSumExpBug).
func SegmentLogSoftmax(x *G.Node, offsets []int) (out *G.Node, err error) {
	defer recoverGraph("segment log-softmax", &err)
	if x == nil {
		return nil, fmt.Errorf("nn: segment log-softmax: nil input")
	}
	if x.Dims() != 1 {
		return nil, fmt.Errorf("nn: segment log-softmax: input shape %v: want a vector", x.Shape())
	}
	if dt := x.Dtype(); dt != G.Float64 {
		return nil, fmt.Errorf("nn: segment log-softmax: input dtype %v: want float64", dt)
	}
	if err := checkOffsets(offsets, x.Shape().TotalSize()); err != nil {
		return nil, fmt.Errorf("nn: segment log-softmax: %w", err)
	}
	op := newSegmentLogSoftmax(offsets)
	out, err = G.ApplyOp(op, x) // (n) -> (n)
	if err != nil {
		return nil, fmt.Errorf("nn: segment log-softmax: %w", err)
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
type segmentLogSoftmax struct {
	offsets []int         // row starts, len rows+1, owned by the op
	sig     uint64        // hash of offsets, so ops over different rows never merge
	out     *tensor.Dense // output reused by Do
	lse     []float64     // per-row scratch
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
	return &segmentLogSoftmax{offsets: append([]int(nil), offsets...), sig: h.Sum64(), lse: make([]float64, len(offsets)-1)}
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

// reuseDo runs do with *buf as its preallocated output and keeps the output
// for the next run (one machine per graph, so nothing else holds it).
func reuseDo(buf **tensor.Dense, do func(G.Value, ...G.Value) (G.Value, error), vals []G.Value) (G.Value, error) {
	var prealloc G.Value // a nil *tensor.Dense must not become a non-nil Value
	if *buf != nil {
		prealloc = *buf
	}
	out, err := do(prealloc, vals...)
	if err == nil {
		*buf = out.(*tensor.Dense)
	}
	return out, err
}

// UsePreallocDo writes into prealloc when it is a float64 vector of the
// right length, and into a fresh vector otherwise.
func (op *segmentLogSoftmax) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("nn: segment log-softmax: got %d inputs, want 1", len(vals))
	}
	x, err := float64Data(vals[0], op.n())
	if err != nil {
		return nil, fmt.Errorf("nn: segment log-softmax: input: %w", err)
	}
	out, data := outputVector(prealloc, op.n())
	if &data[0] == &x[0] {
		return nil, fmt.Errorf("nn: segment log-softmax: output aliases the input")
	}
	segmentLogSoftmaxForward(data, x, op.offsets, op.lse)
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

// SymDiff builds the backward as one fused op on the probabilities and the
// incoming gradient: grad_x[e] = g[e] - pi[e] * sum_row(g), pi = exp(out).
// pi is the node G.Exp(out): when the loss already holds that node (an
// expected cost sum c*pi does), gorgonia's hash-consing returns the same
// node and the exponentials are computed once per step for both.
func (op *segmentLogSoftmax) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("nn: segment log-softmax: got %d inputs, want 1", len(inputs))
	}
	pi, err := G.Exp(output) // (n) -> (n)
	if err != nil {
		return nil, fmt.Errorf("nn: segment log-softmax backward: %w", err)
	}
	dx, err := G.ApplyOp(&segmentLogSoftmaxDiff{fwd: op}, pi, grad) // (n), (n) -> (n)
	if err != nil {
		return nil, fmt.Errorf("nn: segment log-softmax backward: %w", err)
	}
	return G.Nodes{dx}, nil
}

// segmentLogSoftmaxDiff is the backward op: (pi (n), g (n)) -> grad_x (n).
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
		return nil, fmt.Errorf("nn: segment log-softmax backward: got %d inputs, want 2", len(vals))
	}
	n := op.fwd.n()
	pi, err := float64Data(vals[0], n)
	if err != nil {
		return nil, fmt.Errorf("nn: segment log-softmax backward: probabilities: %w", err)
	}
	g, err := float64Data(vals[1], n)
	if err != nil {
		return nil, fmt.Errorf("nn: segment log-softmax backward: gradient: %w", err)
	}
	out, data := outputVector(prealloc, n)
	segmentLogSoftmaxBackward(data, pi, g, op.fwd.offsets)
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

// segmentLogSoftmaxForward writes out[e] = (x[e] - m) - log sum exp(x - m)
// row by row, m the row maximum: the largest term of the sum is exp(0) = 1
// (added as 1, without calling exp), so the sum lies in [1, len(row)] and
// neither overflows nor underflows to 0. out may alias x; lse is scratch of
// one value per row (nil: allocated here).
//
// The logs of the row sums are taken in a separate loop: there they do not
// wait on one another, while inside the row loop each log waits on its row's
// sum (about 4x slower at rows of 6).
func segmentLogSoftmaxForward(out, x []float64, offsets []int, lse []float64) {
	if lse == nil {
		lse = make([]float64, len(offsets)-1)
	}
	lo := offsets[0]
	for r, hi := range offsets[1:] {
		row, o := x[lo:hi], out[lo:hi]
		o = o[:len(row)]
		lo = hi
		m, j := row[0], 0
		for i, v := range row {
			if v > m {
				m, j = v, i
			}
		}
		sum := 1.0
		for i, v := range row {
			d := v - m
			o[i] = d
			if i != j {
				sum += exp(d)
			}
		}
		lse[r] = sum
	}
	for r, sum := range lse {
		lse[r] = math.Log(sum)
	}
	lo = offsets[0]
	for r, hi := range offsets[1:] {
		l, o := lse[r], out[lo:hi]
		for i := range o {
			o[i] -= l
		}
		lo = hi
	}
}

// rowLogSoftmax writes the log-softmax of the row z into logp (which may
// alias z) and its softmax into prob, as segmentLogSoftmaxForward does on
// one row (to rounding: the exponentials are taken four at a time by exps
// and summed in row order); each exponential is taken once for both. It
// returns the row's maximum m and l = log sum exp(z - m): log-softmax(z) =
// (z - m) - l.
func rowLogSoftmax(logp, prob, z []float64) (m, l float64) {
	prob = prob[:len(z)]
	logp = logp[:len(z)]
	m = z[0]
	for _, v := range z {
		if v > m {
			m = v
		}
	}
	exps(prob, z, m) // the maximum's is exactly 1
	sum := 0.0
	for _, p := range prob {
		sum += p
	}
	l, inv := math.Log(sum), 1/sum
	for i, v := range z {
		logp[i] = (v - m) - l
		prob[i] *= inv
	}
	return m, l
}

// segmentLogSoftmaxBackward writes grad[e] = g[e] - pi[e] * sum_row(g), the
// vector-Jacobian product of the row-wise log-softmax, pi the softmax.
func segmentLogSoftmaxBackward(grad, pi, g []float64, offsets []int) {
	for r := 0; r+1 < len(offsets); r++ {
		lo, hi := offsets[r], offsets[r+1]
		gr := g[lo:hi]
		sum := 0.0
		for _, v := range gr {
			sum += v
		}
		p, o := pi[lo:hi], grad[lo:hi]
		for i, v := range gr {
			o[i] = v - p[i]*sum
		}
	}
}

// inferVectorShape checks that every input is a vector of length n.
func inferVectorShape(n int, ds ...G.DimSizer) (tensor.Shape, error) {
	for i, d := range ds {
		s, ok := d.(tensor.Shape)
		if !ok || s.Dims() != 1 || s.TotalSize() != n {
			return nil, fmt.Errorf("nn: input %d has shape %v: want (%d)", i, d, n)
		}
	}
	return tensor.Shape{n}, nil
}

// float64Data returns the contiguous float64 data of a vector value of length n.
func float64Data(v G.Value, n int) ([]float64, error) {
	if d, ok := v.(*tensor.Dense); ok && d.RequiresIterator() {
		v = d.Materialize()
	}
	data, ok := v.Data().([]float64)
	if !ok {
		return nil, fmt.Errorf("got %T data, want []float64", v.Data())
	}
	if len(data) != n {
		return nil, fmt.Errorf("got %d values, want %d", len(data), n)
	}
	return data, nil
}

// outputVector reuses prealloc when it is a contiguous float64 vector of
// length n and allocates a new one otherwise.
func outputVector(prealloc G.Value, n int) (G.Value, []float64) {
	if d, ok := prealloc.(*tensor.Dense); ok && !d.RequiresIterator() && d.Shape().Dims() == 1 {
		if data, ok := d.Data().([]float64); ok && len(data) == n {
			return d, data
		}
	}
	data := make([]float64, n)
	return tensor.New(tensor.WithShape(n), tensor.WithBacking(data)), data
}

// hashOp hashes an op by its WriteHash text, as gorgonia's own ops do.
func hashOp(op G.Op) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
