package stock

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// These tests pin bugs of gorgonia v0.9.18 / tensor v0.9.24 that this
// package routes around. Each asserts the wrong behaviour: if one starts
// failing after an upgrade, the bug is fixed and the workaround it names
// can be reconsidered.

// runMatrix evaluates build on a 2x3 input holding data.
func runMatrix(t *testing.T, data []float64, build func(x *G.Node) []*G.Node) [][]float64 {
	t.Helper()
	g := G.NewGraph()
	x := G.NewMatrix(g, G.Float64, G.WithShape(2, 3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(append([]float64(nil), data...))))) // (2, 3)
	outs := build(x)
	vals := make([]G.Value, len(outs))
	for i, n := range outs {
		G.Read(n, &vals[i])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	res := make([][]float64, len(vals))
	for i, v := range vals {
		res[i] = append([]float64(nil), v.Data().([]float64)...)
	}
	return res
}

// The softmax kernels start each row's maximum from the first element of
// the whole tensor, not of the row: a row lying far below x[0] underflows.
// Workaround: LogSoftmax here (Max, BroadcastSub, Exp, Sum, Log), and the
// fused ops.SegmentLogSoftmax.
func TestGorgoniaSoftMaxBug(t *testing.T) {
	got := runMatrix(t, []float64{1000, 0, 0, 0, 1, 2}, func(x *G.Node) []*G.Node {
		return []*G.Node{G.Must(G.SoftMax(x))} // (2, 3) -> (2, 3)
	})[0]
	for i, v := range got[3:] {
		if !math.IsNaN(v) {
			t.Errorf("SoftMax row 2 [0 1 2] entry %d: got %v, want the bug's NaN", i, v)
		}
	}
}

func TestGorgoniaLogSoftMaxBug(t *testing.T) {
	got := runMatrix(t, []float64{1000, 0, 0, 0, 1, 2}, func(x *G.Node) []*G.Node {
		return []*G.Node{G.Must(G.LogSoftMax(x))} // (2, 3) -> (2, 3)
	})[0]
	for i, v := range got[3:] {
		if !math.IsInf(v, 1) {
			t.Errorf("LogSoftMax row 2 [0 1 2] entry %d: got %v, want the bug's +Inf", i, v)
		}
	}
}

// softmaxOp.WriteHash ignores isLog, so the graph's hash-consing merges
// SoftMax(x) and LogSoftMax(x): whichever is built second returns the
// first's values (this is how "LogSoftMax returns probabilities" shows up).
// SegmentLogSoftmax hashes its offsets (TestSegmentLogSoftmaxDistinctOffsetsDoNotMerge).
func TestGorgoniaSoftMaxLogSoftMaxMerge(t *testing.T) {
	var sm, lsm *G.Node
	got := runMatrix(t, []float64{0, 0, 0, 800, 801, 802}, func(x *G.Node) []*G.Node {
		sm = G.Must(G.SoftMax(x))     // (2, 3) -> (2, 3)
		lsm = G.Must(G.LogSoftMax(x)) // (2, 3) -> (2, 3)
		return []*G.Node{lsm}
	})[0]
	if sm != lsm {
		t.Errorf("SoftMax and LogSoftMax of one node: got two nodes, want the bug's one")
	}
	if want := 1.0 / 3; math.Abs(got[0]-want) > 1e-15 {
		t.Errorf("LogSoftMax[0]: got %v, want the bug's probability %v (log would be %v)", got[0], want, math.Log(want))
	}
}

// LogSumExp computes log(sum exp(x - max) + max) instead of
// max + log sum exp(x - max). Workaround: SegmentLogSoftmax.
func TestGorgoniaLogSumExpBug(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float64, G.WithShape(3), G.WithName("x"), G.WithValue(vec([]float64{1, 2, 3}))) // (3)
	lse := G.Must(G.LogSumExp(x, 0))                                                                      // (3) -> ()
	var v G.Value
	G.Read(lse, &v)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := v.Data().(float64)
	right := 3 + math.Log(math.Exp(-2)+math.Exp(-1)+1)
	bug := math.Log(math.Exp(-2) + math.Exp(-1) + 1 + 3)
	if math.Abs(got-bug) > 1e-12 {
		t.Errorf("LogSumExp([1 2 3]): got %v, want the bug's %v (right: %v)", got, bug, right)
	}
}

// After RunAll a node's Value() can hold a later node's result: the tape
// machine lets a later op overwrite the register in place once the node's
// last reader has run. Workaround: read values with G.Read while building
// (a read node keeps the value alive until it is copied; Step reads its
// cost so).
func TestTapeMachineStaleValue(t *testing.T) {
	g := G.NewGraph()
	a := G.NewVector(g, G.Float64, G.WithShape(3), G.WithName("a"), G.WithValue(vec([]float64{0, 1, 2})))    // (3)
	b := G.NewVector(g, G.Float64, G.WithShape(3), G.WithName("b"), G.WithValue(vec([]float64{10, 10, 10}))) // (3)
	e := G.Must(G.Exp(a))                                                                                    // (3) -> (3)
	f := G.Must(G.Add(e, b))                                                                                 // (3) + (3) -> (3)
	h := G.Must(G.HadamardProd(f, b))                                                                        // (3) * (3) -> (3)
	G.Must(G.Sum(h))                                                                                         // (3) -> ()
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got, want := e.Value().Data().([]float64)[1], (math.E+10)*10; math.Abs(got-want) > 1e-12 {
		t.Errorf("exp(a).Value()[1] after RunAll: got %v, want the bug's %v (the value of (exp(a)+b)*b)", got, want)
	}
}

// ByIndices's backward on a vector adds the gradient of index position i
// at the wrong place once i reaches the vector's length (tensor's
// selectByIndicesB, innermost axis, takes each position's offset in the
// input's shape and the index's in the output gradient's). Workaround:
// Gather gathers a vector as a (len, 1) matrix.
func TestGorgoniaByIndicesVectorGradBug(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float64, G.WithShape(2), G.WithName("x"), G.WithValue(vec([]float64{1, 2}))) // (2)
	idx := ints(g, "idx", []int{0, 0, 1})                                                              // (3)
	w := G.NewVector(g, G.Float64, G.WithShape(3), G.WithName("w"), G.WithValue(vec([]float64{1, 10, 100})))
	loss := G.Must(G.Mul(G.Must(G.ByIndices(x, idx, 0)), w)) // (3) . (3) -> ()
	grads, err := G.Grad(loss, x)
	if err != nil {
		t.Fatal(err)
	}
	var gv G.Value
	G.Read(grads[0], &gv)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got, right := gv.Data().([]float64), []float64{11, 100}
	if got[0] == right[0] && got[1] == right[1] {
		t.Errorf("d/dx of x[0]+10x[0]+100x[1] by ByIndices: got the right %v, want the bug", got)
	}
	t.Logf("d/dx of x[0]+10x[0]+100x[1] by ByIndices: got %v (right: %v)", got, right)
}
