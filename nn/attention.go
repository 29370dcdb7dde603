package nn

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// maskLogit is the large finite negative number added to a masked score or
// logit before a max-shifted (log-)softmax: exp(maskLogit - max) underflows
// to exactly 0, so masked entries get probability exactly 0 while no -Inf
// enters arithmetic. Unmasked scores and logits must stay far above it
// (|value| < 1e8 keeps them exact).
const maskLogit = -1e9

// causalAttention builds multi-head causal self-attention over windows of
// ctx positions for b sequences of t slots laid out row after row in h0
// (b*t, D): position i attends to positions j with i-ctx < j <= i of its
// own sequence. With prompt, slot 0 of each row is the prompt, which every
// slot attends to and which attends only to itself; the window counts the
// other slots only. It returns the output projection (b*t, D) of the
// concatenated heads.
//
// Heads are cut out of the (b*t, D) projections by constant 0/1 selection
// matrices (exact: products with 1 and sums with 0), so no transposes or
// strided views enter the graph. The attention softmax is the exponential
// of SegmentLogSoftmax over rows of t scores, the masked scores having
// maskLogit added: stable per row and exactly 0 off the window.
func causalAttention(h0, wq, wk, wv, wo *G.Node, b, t, heads, ctx int, prompt bool) (*G.Node, error) {
	g := h0.Graph()
	n, d := b*t, h0.Shape()[1]
	dh := d / heads
	q, err := G.Mul(h0, wq) // (N, D) x (D, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	k, err := G.Mul(h0, wk) // (N, D) x (D, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	v, err := G.Mul(h0, wv) // (N, D) x (D, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	mask := G.NewTensor(g, G.Float64, 3, G.WithShape(b, t, t), G.WithName("attn_mask"),
		G.WithValue(attentionMask(b, t, ctx, prompt))) // (B, T, T)
	scale := G.NewConstant(1/math.Sqrt(float64(dh)), G.WithName("attn_scale")) // ()
	offsets := uniformOffsets(b*t, t)
	var cat *G.Node // (N, D): the heads side by side
	for hd := 0; hd < heads; hd++ {
		qh, kh, vh := q, k, v
		var put *G.Node // (dh, D): places head hd's columns
		if heads > 1 {
			take := G.NewMatrix(g, G.Float64, G.WithShape(d, dh), G.WithName(fmt.Sprintf("head%d_take", hd)),
				G.WithValue(headSelector(d, dh, hd, false))) // (D, dh)
			put = G.NewMatrix(g, G.Float64, G.WithShape(dh, d), G.WithName(fmt.Sprintf("head%d_put", hd)),
				G.WithValue(headSelector(d, dh, hd, true))) // (dh, D)
			if qh, err = G.Mul(q, take); err != nil { // (N, D) x (D, dh) -> (N, dh)
				return nil, err
			}
			if kh, err = G.Mul(k, take); err != nil { // (N, D) x (D, dh) -> (N, dh)
				return nil, err
			}
			if vh, err = G.Mul(v, take); err != nil { // (N, D) x (D, dh) -> (N, dh)
				return nil, err
			}
		}
		q3, err := G.Reshape(qh, tensor.Shape{b, t, dh}) // (N, dh) -> (B, T, dh)
		if err != nil {
			return nil, err
		}
		k3, err := G.Reshape(kh, tensor.Shape{b, t, dh}) // (N, dh) -> (B, T, dh)
		if err != nil {
			return nil, err
		}
		v3, err := G.Reshape(vh, tensor.Shape{b, t, dh}) // (N, dh) -> (B, T, dh)
		if err != nil {
			return nil, err
		}
		s, err := G.BatchedMatMul(q3, k3, false, true) // (B, T, dh) x (B, dh, T) -> (B, T, T)
		if err != nil {
			return nil, err
		}
		if s, err = G.Mul(s, scale); err != nil { // (B, T, T) * () -> (B, T, T)
			return nil, err
		}
		if s, err = G.Add(s, mask); err != nil { // (B, T, T) + (B, T, T) -> (B, T, T)
			return nil, err
		}
		flat, err := G.Reshape(s, tensor.Shape{b * t * t}) // (B, T, T) -> (B*T*T)
		if err != nil {
			return nil, err
		}
		logA, err := SegmentLogSoftmax(flat, offsets) // (B*T*T) -> (B*T*T), rows of T
		if err != nil {
			return nil, err
		}
		a, err := G.Exp(logA) // (B*T*T) -> (B*T*T)
		if err != nil {
			return nil, err
		}
		a3, err := G.Reshape(a, tensor.Shape{b, t, t}) // (B*T*T) -> (B, T, T)
		if err != nil {
			return nil, err
		}
		o, err := G.BatchedMatMul(a3, v3) // (B, T, T) x (B, T, dh) -> (B, T, dh)
		if err != nil {
			return nil, err
		}
		if o, err = G.Reshape(o, tensor.Shape{n, dh}); err != nil { // (B, T, dh) -> (N, dh)
			return nil, err
		}
		if put != nil {
			if o, err = G.Mul(o, put); err != nil { // (N, dh) x (dh, D) -> (N, D)
				return nil, err
			}
		}
		if cat == nil {
			cat = o
		} else if cat, err = G.Add(cat, o); err != nil { // (N, D) + (N, D) -> (N, D)
			return nil, err
		}
	}
	return G.Mul(cat, wo) // (N, D) x (D, D) -> (N, D)
}

// attentionMask returns the (b, t, t) additive mask: 0 where query i may
// see key j (i-ctx < j <= i), maskLogit elsewhere. With prompt, slot 0 is
// the prompt: query 0 sees only key 0, and every query sees key 0 besides
// its window. Every row keeps its diagonal.
func attentionMask(b, t, ctx int, prompt bool) *tensor.Dense {
	m := make([]float64, b*t*t)
	for s := 0; s < b; s++ {
		for i := 0; i < t; i++ {
			row := m[(s*t+i)*t : (s*t+i+1)*t]
			for j := range row {
				sees := j <= i && j > i-ctx
				if prompt {
					sees = j == 0 || (i > 0 && j <= i && j > i-ctx)
				}
				if !sees {
					row[j] = maskLogit
				}
			}
		}
	}
	return tensor.New(tensor.WithShape(b, t, t), tensor.WithBacking(m))
}

// headSelector returns the 0/1 matrix taking head hd's dh columns out of d
// (d x dh), or, transposed, putting them back (dh x d).
func headSelector(d, dh, hd int, transposed bool) *tensor.Dense {
	m := make([]float64, d*dh)
	for c := 0; c < dh; c++ {
		if transposed {
			m[c*d+hd*dh+c] = 1
		} else {
			m[(hd*dh+c)*dh+c] = 1
		}
	}
	if transposed {
		return tensor.New(tensor.WithShape(dh, d), tensor.WithBacking(m))
	}
	return tensor.New(tensor.WithShape(d, dh), tensor.WithBacking(m))
}

// uniformOffsets returns the offsets of rows rows of width w each.
func uniformOffsets(rows, w int) []int {
	off := make([]int, rows+1)
	for r := range off {
		off[r] = r * w
	}
	return off
}

// Compile-time interface checks for the gather op and its backward.
var (
	_ G.SDOp = (*gatherOp)(nil)
	_ G.Op   = (*scatterAddOp)(nil)
)

// gather returns x's entries (x a vector) or rows (x a matrix) picked by
// the Int index vector idx (n): out[i] = x[idx[i]], or zero where idx[i] =
// -1 (no gradient flows there). Its backward scatter-adds the incoming
// gradient, so repeated indices accumulate.
// It is used instead of G.ByIndices because its backward is a plain
// scatter-add checked here by finite differences (through the transformer);
// G.ByIndices's backward (tensor's SelectByIndicesB) was not checked.
func gather(x, idx *G.Node) (*G.Node, error) {
	if x.Dims() < 1 || x.Dims() > 2 {
		return nil, fmt.Errorf("nn: gather: input shape %v: want a vector or a matrix", x.Shape())
	}
	if idx.Dims() != 1 || idx.Dtype() != G.Int {
		return nil, fmt.Errorf("nn: gather: indices %v %v: want an Int vector", idx.Dtype(), idx.Shape())
	}
	op := &gatherOp{in: x.Shape().Clone(), n: idx.Shape()[0]}
	return G.ApplyOp(op, x, idx) // (M[, W]), (n) -> (n[, W])
}

// gatherOp is (x (M[, W]) float64, idx (n) Int) -> (n[, W]).
type gatherOp struct {
	in tensor.Shape // input shape
	n  int          // number of indices
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
		return nil, fmt.Errorf("nn: gather: got %d inputs, want 2", len(vals))
	}
	x, err := float64Data(vals[0], op.in.TotalSize())
	if err != nil {
		return nil, fmt.Errorf("nn: gather: input: %w", err)
	}
	idx, ok := vals[1].Data().([]int)
	if !ok || len(idx) != op.n {
		return nil, fmt.Errorf("nn: gather: indices %T of %d: want %d ints", vals[1].Data(), vals[1].Shape().TotalSize(), op.n)
	}
	w, m := op.width(), op.in[0]
	out := make([]float64, op.n*w)
	for i, j := range idx {
		if j < -1 || j >= m {
			return nil, fmt.Errorf("nn: gather: index %d is %d: want in [0, %d) or -1", i, j, m)
		}
		if j == -1 {
			continue
		}
		copy(out[i*w:(i+1)*w], x[j*w:(j+1)*w])
	}
	return tensor.New(tensor.WithShape(op.outShape()...), tensor.WithBacking(out)), nil
}

func (op *gatherOp) ReturnsPtr() bool     { return false }
func (op *gatherOp) CallsExtern() bool    { return false }
func (op *gatherOp) OverwritesInput() int { return -1 }

func (op *gatherOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "Gather{in=%v,n=%d}", op.in, op.n) }
func (op *gatherOp) Hashcode() uint32      { return hashOp(op) }
func (op *gatherOp) String() string        { return fmt.Sprintf("Gather{in=%v,n=%d}", op.in, op.n) }

func (op *gatherOp) DiffWRT(inputs int) []bool { return []bool{true, false} }

func (op *gatherOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 2 {
		return nil, fmt.Errorf("nn: gather backward: got %d inputs, want 2", len(inputs))
	}
	dx, err := G.ApplyOp(&scatterAddOp{fwd: op}, grad, inputs[1]) // (n[, W]), (n) -> (M[, W])
	if err != nil {
		return nil, fmt.Errorf("nn: gather backward: %w", err)
	}
	return G.Nodes{dx, nil}, nil
}

// scatterAddOp is the backward of gatherOp: (g (n[, W]), idx (n)) -> dx
// (M[, W]) with dx[idx[i]] += g[i].
type scatterAddOp struct{ fwd *gatherOp }

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
		return nil, fmt.Errorf("nn: gather backward: got %d inputs, want 2", len(vals))
	}
	w := op.fwd.width()
	g, err := float64Data(vals[0], op.fwd.n*w)
	if err != nil {
		return nil, fmt.Errorf("nn: gather backward: gradient: %w", err)
	}
	idx, ok := vals[1].Data().([]int)
	if !ok || len(idx) != op.fwd.n {
		return nil, fmt.Errorf("nn: gather backward: indices %T: want %d ints", vals[1].Data(), op.fwd.n)
	}
	m := op.fwd.in[0]
	out := make([]float64, op.fwd.in.TotalSize())
	for i, j := range idx {
		if j < -1 || j >= m {
			return nil, fmt.Errorf("nn: gather backward: index %d is %d: want in [0, %d) or -1", i, j, m)
		}
		if j == -1 {
			continue
		}
		dst, src := out[j*w:(j+1)*w], g[i*w:(i+1)*w]
		for c, v := range src {
			dst[c] += v
		}
	}
	return tensor.New(tensor.WithShape(op.fwd.in.Clone()...), tensor.WithBacking(out)), nil
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
