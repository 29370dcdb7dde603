package ops

import (
	"github.com/rlvr-backtrack/backtrack/nn/kernels"

	"fmt"
	"hash"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// kernel is the plain-Go body of a fused op: a forward from float64 inputs
// of fixed shapes to one output, and a backward writing the gradients of
// all inputs at once from the inputs and the gradient of the output.
//
// A kernel may keep, between its forward and the backward of the same run,
// intermediate values in buffers of its own (attention weights, tables):
// one graph runs on one machine, the backward always follows the forward
// of its run (it reads the forward's output gradient), and the buffers are
// never handed to gorgonia, so no other op can write into them.
type kernel interface {
	// forward overwrites out from in.
	forward(out []float64, in [][]float64) error
	// backward overwrites grads[k] (the shape of input k) with the gradient
	// of the loss with respect to input k, given g, its gradient with
	// respect to the output.
	backward(grads [][]float64, in [][]float64, g []float64) error
}

// fused is a gorgonia op made of a kernel: applyFused adds its forward
// node; its SymDiff adds one gradient node per input, all computed by the
// first of them to run in a run (fusedGrad; differentiate a graph once, as
// gorgonia requires anyway: a second G.Grad on one graph does not give
// independent gradients even with stock ops). Outputs and gradients are
// written into buffers the op keeps from run to run (the tape machine's
// Reset drops every register, so fresh ones would be allocated and zeroed
// at every run); read values after a run with G.Read, as for any node.
type fused struct {
	name  string
	id    uint64         // unique, so gorgonia never merges two fused ops
	in    []tensor.Shape // input shapes
	out   tensor.Shape   // output shape
	k     kernel
	runs  uint64 // forwards done
	grads uint64 // the forward the gradients were computed for
	outV  *tensor.Dense
	gradV []*tensor.Dense
	inBuf [][]float64 // scratch: input slices of one call
	gBuf  [][]float64 // scratch: gradient slices of one call
}

var fusedIDs atomic.Uint64

// applyFused adds op k (named name, output shape out) over inputs to the
// graph of the inputs. Input shapes are fixed at build time.
func applyFused(name string, k kernel, out tensor.Shape, inputs ...*G.Node) (*G.Node, error) {
	f := &fused{name: name, id: fusedIDs.Add(1), out: out.Clone(), k: k}
	for i, n := range inputs {
		if n.Dtype() != G.Float64 {
			return nil, fmt.Errorf("ops: %s: input %d (%s) dtype %v: want float64", name, i, n.Name(), n.Dtype())
		}
		f.in = append(f.in, n.Shape().Clone())
	}
	return G.ApplyOp(&fusedForward{f}, inputs...)
}

// inputs returns the float64 data of vals[:len(f.in)], checked against the
// input shapes.
func (f *fused) inputs(vals []G.Value) ([][]float64, error) {
	if len(vals) < len(f.in) {
		return nil, fmt.Errorf("ops: %s: got %d inputs, want %d", f.name, len(vals), len(f.in))
	}
	f.inBuf = kernels.Grow(f.inBuf, len(f.in))
	for i, s := range f.in {
		d, err := float64Data(vals[i], s.TotalSize())
		if err != nil {
			return nil, fmt.Errorf("ops: %s: input %d: %w", f.name, i, err)
		}
		f.inBuf[i] = d
	}
	return f.inBuf, nil
}

// buffer returns *t, allocated with shape s on first use.
func buffer(t **tensor.Dense, s tensor.Shape) *tensor.Dense {
	if *t == nil {
		*t = tensor.New(tensor.WithShape(s.Clone()...), tensor.WithBacking(make([]float64, s.TotalSize())))
	}
	return *t
}

func tensorType(s tensor.Shape) hm.Type { return G.TensorType{Dims: s.Dims(), Of: G.Float64} }

// fusedForward is the forward node of a fused op.
type fusedForward struct{ f *fused }

// Compile-time interface checks.
var (
	_ G.SDOp = (*fusedForward)(nil)
	_ G.Op   = (*fusedGrad)(nil)
)

func (op *fusedForward) Arity() int { return len(op.f.in) }

func (op *fusedForward) Type() hm.Type {
	ts := make([]hm.Type, 0, len(op.f.in)+1)
	for _, s := range op.f.in {
		ts = append(ts, tensorType(s))
	}
	return hm.NewFnType(append(ts, tensorType(op.f.out))...)
}

func (op *fusedForward) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	return op.f.out.Clone(), nil
}

func (op *fusedForward) Do(vals ...G.Value) (G.Value, error) {
	f := op.f
	in, err := f.inputs(vals)
	if err != nil {
		return nil, err
	}
	out := buffer(&f.outV, f.out)
	if err := f.k.forward(out.Data().([]float64), in); err != nil {
		return nil, fmt.Errorf("ops: %s: %w", f.name, err)
	}
	f.runs++
	return out, nil
}

func (op *fusedForward) ReturnsPtr() bool     { return false }
func (op *fusedForward) CallsExtern() bool    { return false }
func (op *fusedForward) OverwritesInput() int { return -1 }

func (op *fusedForward) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s#%d", op.f.name, op.f.id) }
func (op *fusedForward) Hashcode() uint32      { return hashOp(op) }
func (op *fusedForward) String() string        { return op.f.name }

func (op *fusedForward) DiffWRT(inputs int) []bool {
	d := make([]bool, inputs)
	for i := range d {
		d[i] = true
	}
	return d
}

// SymDiff adds one fusedGrad node per input, each reading every input and
// the output's gradient.
func (op *fusedForward) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != len(op.f.in) {
		return nil, fmt.Errorf("ops: %s backward: got %d inputs, want %d", op.f.name, len(inputs), len(op.f.in))
	}
	args := append(append(G.Nodes(nil), inputs...), grad)
	out := make(G.Nodes, len(inputs))
	for k := range inputs {
		n, err := G.ApplyOp(&fusedGrad{f: op.f, k: k}, args...) // inputs..., (out) -> (shape of input k)
		if err != nil {
			return nil, fmt.Errorf("ops: %s backward: %w", op.f.name, err)
		}
		out[k] = n
	}
	return out, nil
}

// fusedGrad is the gradient node of input k of a fused op: (inputs...,
// output gradient) -> gradient of input k. The first of an op's gradient
// nodes to run after a forward runs the kernel's backward for all inputs;
// the others return their part.
type fusedGrad struct {
	f *fused
	k int
}

func (op *fusedGrad) Arity() int { return len(op.f.in) + 1 }

func (op *fusedGrad) Type() hm.Type {
	ts := make([]hm.Type, 0, len(op.f.in)+2)
	for _, s := range op.f.in {
		ts = append(ts, tensorType(s))
	}
	return hm.NewFnType(append(ts, tensorType(op.f.out), tensorType(op.f.in[op.k]))...)
}

func (op *fusedGrad) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	return op.f.in[op.k].Clone(), nil
}

func (op *fusedGrad) Do(vals ...G.Value) (G.Value, error) {
	f := op.f
	if f.runs == 0 {
		return nil, fmt.Errorf("ops: %s backward: no forward to differentiate", f.name)
	}
	if f.grads != f.runs {
		if len(vals) != len(f.in)+1 {
			return nil, fmt.Errorf("ops: %s backward: got %d inputs, want %d", f.name, len(vals), len(f.in)+1)
		}
		in, err := f.inputs(vals)
		if err != nil {
			return nil, err
		}
		g, err := float64Data(vals[len(f.in)], f.out.TotalSize())
		if err != nil {
			return nil, fmt.Errorf("ops: %s backward: output gradient: %w", f.name, err)
		}
		f.gradV = kernels.Grow(f.gradV, len(f.in))
		f.gBuf = kernels.Grow(f.gBuf, len(f.in))
		for i, s := range f.in {
			f.gBuf[i] = buffer(&f.gradV[i], s).Data().([]float64)
		}
		if err := f.k.backward(f.gBuf, in, g); err != nil {
			return nil, fmt.Errorf("ops: %s backward: %w", f.name, err)
		}
		f.grads = f.runs
	}
	return f.gradV[op.k], nil
}

func (op *fusedGrad) ReturnsPtr() bool     { return false }
func (op *fusedGrad) CallsExtern() bool    { return false }
func (op *fusedGrad) OverwritesInput() int { return -1 }

func (op *fusedGrad) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%sGrad#%d/%d", op.f.name, op.f.id, op.k)
}
func (op *fusedGrad) Hashcode() uint32 { return hashOp(op) }
func (op *fusedGrad) String() string   { return fmt.Sprintf("%sGrad/%d", op.f.name, op.k) }
