package stock

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gather returns x's entries (x a vector) or rows (x a matrix) picked by
// the Int index vector idx: out[i] = x[idx[i]], by G.ByIndices along axis
// 0; autodiff scatter-adds the gradient back, so repeated indices
// accumulate.
//
// A vector is gathered as a (len, 1) matrix: ByIndices's backward on a
// vector (tensor's selectByIndicesB along its innermost axis) reads the
// incoming gradient at a wrong offset for every index position past the
// vector's length (TestGorgoniaByIndicesVectorGradBug); on a matrix along
// axis 0 it is right (TestGather).
func Gather(x, idx *G.Node) (out *G.Node, err error) {
	defer recoverGraph("gather", &err)
	switch x.Dims() {
	case 2:
		return G.ByIndices(x, idx, 0) // (M, W), (n) -> (n, W)
	case 1:
		m := G.Must(G.Reshape(x, tensor.Shape{x.Shape()[0], 1})) // (M) -> (M, 1)
		rows := G.Must(G.ByIndices(m, idx, 0))                   // (M, 1), (n) -> (n, 1)
		return G.Reshape(rows, tensor.Shape{idx.Shape()[0]})     // (n, 1) -> (n)
	}
	return nil, fmt.Errorf("stock: gather: input shape %v: want a vector or a matrix", x.Shape())
}
