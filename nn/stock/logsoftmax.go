package stock

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LogSoftmax returns the log-softmax of each row of x (N, R):
//
//	out[n] = (x[n] - m_n) - log sum exp(x[n] - m_n),  m_n = max x[n],
//
// from Max, BroadcastSub, Exp, Sum and Log (gorgonia's LogSoftMax is
// wrong: TestGorgoniaLogSoftMaxBug). The shift by the row maximum keeps
// exp from overflowing, and its gradient cancels (to rounding).
func LogSoftmax(x *G.Node) (out *G.Node, err error) {
	defer recoverGraph("log-softmax", &err)
	if x.Dims() != 2 {
		return nil, fmt.Errorf("stock: log-softmax: input shape %v: want a matrix", x.Shape())
	}
	m := G.Must(G.Max(x, 1))                                  // (N, R) -> (N)
	sh := G.Must(G.BroadcastSub(x, m, nil, []byte{1}))        // (N, R) - (N) -> (N, R)
	lse := G.Must(G.Log(G.Must(G.Sum(G.Must(G.Exp(sh)), 1)))) // (N, R) -> (N)
	return G.BroadcastSub(sh, lse, nil, []byte{1})            // (N, R) - (N) -> (N, R)
}

// MaskedLogSoftmax returns the log-softmax of each row of r slots of z
// (n*r), the masked slots' logits replaced: z valid + mask, valid 1 on an
// unmasked slot and 0 on a masked one, mask 0 on an unmasked slot and
// ops.MaskLogit on a masked one (a masked slot's probability is exactly
// 0, and no gradient reaches its z).
func MaskedLogSoftmax(z, valid, mask *G.Node, n, r int) (out *G.Node, err error) {
	defer recoverGraph("masked log-softmax", &err)
	zm := G.Must(G.Add(G.Must(G.HadamardProd(z, valid)), mask))     // (N*R)
	rows := G.Must(G.Reshape(zm, tensor.Shape{n, r}))               // (N*R) -> (N, R)
	return G.Reshape(G.Must(LogSoftmax(rows)), tensor.Shape{n * r}) // (N, R) -> (N*R)
}

// recoverGraph turns a panic of gorgonia's graph building (G.Must) into
// an error: defer recoverGraph("what", &err) in a function with a named
// error result.
func recoverGraph(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("stock: %s: %v", what, r)
	}
}
