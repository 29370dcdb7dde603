package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Compile-time interface checks for the gather op and its backward.
var (
	_ G.SDOp = (*gatherOp)(nil)
	_ G.Op   = (*scatterAddOp)(nil)
)

// Gather returns x's entries (x a vector) or rows (x a matrix) picked by
// the Int index vector idx (n): out[i] = x[idx[i]], or zero where idx[i] =
// -1 (no gradient flows there). Its hand-written backward scatter-adds the
// incoming gradient, so repeated indices accumulate.
//
// It computes what G.ByIndices computes (TestGatherMatchesByIndices
// checks values and gradients against it), but writes into outputs kept
// from run to run: ByIndices and its backward allocate a new tensor at
// every run, and the table pass gathers from vectors of hundreds of
// thousands of slots a few hundred times a step.
func Gather(x, idx *G.Node) (*G.Node, error) {
	if x.Dims() < 1 || x.Dims() > 2 {
		return nil, fmt.Errorf("ops: gather: input shape %v: want a vector or a matrix", x.Shape())
	}
	if idx.Dims() != 1 || idx.Dtype() != G.Int {
		return nil, fmt.Errorf("ops: gather: indices %v %v: want an Int vector", idx.Dtype(), idx.Shape())
	}
	op := &gatherOp{in: x.Shape().Clone(), n: idx.Shape()[0]}
	return G.ApplyOp(op, x, idx) // (M[, W]), (n) -> (n[, W])
}

// gatherOp is (x (M[, W]) float64, idx (n) Int) -> (n[, W]). Do writes
// into an output it keeps from run to run (as the fused ops do).
type gatherOp struct {
	in  tensor.Shape  // input shape
	n   int           // number of indices
	out *tensor.Dense // output reused by Do
}

// width returns the length of one gathered item (1 for a vector input).
func (op *gatherOp) width() int {
	if len(op.in) == 2 {
		return op.in[1]
	}
	return 1
}

func (op *gatherOp) outShape() tensor.Shape {
	if len(op.in) == 2 {
		return tensor.Shape{op.n, op.in[1]}
	}
	return tensor.Shape{op.n}
}

func (op *gatherOp) Arity() int { return 2 }

func (op *gatherOp) Type() hm.Type {
	f := G.TensorType{Dims: len(op.in), Of: G.Float64}
	return hm.NewFnType(f, G.TensorType{Dims: 1, Of: G.Int}, f)
}

func (op *gatherOp) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	return op.outShape(), nil
}

func (op *gatherOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: gather: got %d inputs, want 2", len(vals))
	}
	x, err := float64Data(vals[0], op.in.TotalSize())
	if err != nil {
		return nil, fmt.Errorf("ops: gather: input: %w", err)
	}
	idx, ok := vals[1].Data().([]int)
	if !ok || len(idx) != op.n {
		return nil, fmt.Errorf("ops: gather: indices %T of %d: want %d ints", vals[1].Data(), vals[1].Shape().TotalSize(), op.n)
	}
	w, m := op.width(), op.in[0]
	val := buffer(&op.out, op.outShape())
	out := val.Data().([]float64)
	for i, j := range idx {
		if j < -1 || j >= m {
			return nil, fmt.Errorf("ops: gather: index %d is %d: want in [0, %d) or -1", i, j, m)
		}
		switch {
		case j == -1:
			clear(out[i*w : (i+1)*w])
		case w == 1: // the table pass's taken log-probabilities: one value, not a copy call each
			out[i] = x[j]
		default:
			copy(out[i*w:(i+1)*w], x[j*w:(j+1)*w])
		}
	}
	return val, nil
}

func (op *gatherOp) ReturnsPtr() bool     { return false }
func (op *gatherOp) CallsExtern() bool    { return false }
func (op *gatherOp) OverwritesInput() int { return -1 }

func (op *gatherOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "Gather{in=%v,n=%d}", op.in, op.n)
}
func (op *gatherOp) Hashcode() uint32 { return hashOp(op) }
func (op *gatherOp) String() string   { return fmt.Sprintf("Gather{in=%v,n=%d}", op.in, op.n) }

func (op *gatherOp) DiffWRT(inputs int) []bool { return []bool{true, false} }

func (op *gatherOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 2 {
		return nil, fmt.Errorf("ops: gather backward: got %d inputs, want 2", len(inputs))
	}
	dx, err := G.ApplyOp(&scatterAddOp{fwd: op}, grad, inputs[1]) // (n[, W]), (n) -> (M[, W])
	if err != nil {
		return nil, fmt.Errorf("ops: gather backward: %w", err)
	}
	return G.Nodes{dx, nil}, nil
}

// scatterAddOp is the backward of gatherOp: (g (n[, W]), idx (n)) -> dx
// (M[, W]) with dx[idx[i]] += g[i]. Do reuses its output from run to run.
type scatterAddOp struct {
	fwd *gatherOp
	out *tensor.Dense
}

func (op *scatterAddOp) Arity() int { return 2 }

func (op *scatterAddOp) Type() hm.Type {
	f := G.TensorType{Dims: len(op.fwd.in), Of: G.Float64}
	return hm.NewFnType(f, G.TensorType{Dims: 1, Of: G.Int}, f)
}

func (op *scatterAddOp) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	return op.fwd.in.Clone(), nil
}

func (op *scatterAddOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("ops: gather backward: got %d inputs, want 2", len(vals))
	}
	w := op.fwd.width()
	g, err := float64Data(vals[0], op.fwd.n*w)
	if err != nil {
		return nil, fmt.Errorf("ops: gather backward: gradient: %w", err)
	}
	idx, ok := vals[1].Data().([]int)
	if !ok || len(idx) != op.fwd.n {
		return nil, fmt.Errorf("ops: gather backward: indices %T: want %d ints", vals[1].Data(), op.fwd.n)
	}
	m := op.fwd.in[0]
	val := buffer(&op.out, op.fwd.in)
	out := val.Data().([]float64)
	clear(out)
	for i, j := range idx {
		if j < -1 || j >= m {
			return nil, fmt.Errorf("ops: gather backward: index %d is %d: want in [0, %d) or -1", i, j, m)
		}
		if j == -1 {
			continue
		}
		if w == 1 {
			out[j] += g[i]
			continue
		}
		dst, src := out[j*w:(j+1)*w], g[i*w:(i+1)*w]
		for c, v := range src {
			dst[c] += v
		}
	}
	return val, nil
}

func (op *scatterAddOp) ReturnsPtr() bool     { return false }
func (op *scatterAddOp) CallsExtern() bool    { return false }
func (op *scatterAddOp) OverwritesInput() int { return -1 }

func (op *scatterAddOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "ScatterAdd{out=%v,n=%d}", op.fwd.in, op.fwd.n)
}
func (op *scatterAddOp) Hashcode() uint32 { return hashOp(op) }
func (op *scatterAddOp) String() string {
	return fmt.Sprintf("ScatterAdd{out=%v,n=%d}", op.fwd.in, op.fwd.n)
}
