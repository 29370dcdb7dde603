package stock

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// LayerNorm returns LN(h) = (h - mean(h)) / sqrt(var(h) + eps) * gain +
// bias for each row of h (N, D), mean and (biased) variance over the D
// features, gain and bias (D) vectors: ops.LayerNorm's function.
func LayerNorm(h, gain, bias *G.Node, eps float64) (out *G.Node, err error) {
	defer recoverGraph("layer norm", &err)
	if h.Dims() != 2 {
		return nil, fmt.Errorf("stock: layer norm: input shape %v: want a matrix", h.Shape())
	}
	inv := G.NewConstant(1/float64(h.Shape()[1]), G.WithName("1/D"))
	mean := G.Must(G.HadamardProd(G.Must(G.Sum(h, 1)), inv))                       // (N, D) -> (N)
	c := G.Must(G.BroadcastSub(h, mean, nil, []byte{1}))                           // (N, D) - (N) -> (N, D)
	variance := G.Must(G.HadamardProd(G.Must(G.Sum(G.Must(G.Square(c)), 1)), inv)) // (N, D) -> (N)
	sigma := G.Must(G.Sqrt(G.Must(G.Add(variance, G.NewConstant(eps)))))           // (N)
	z := G.Must(G.BroadcastHadamardDiv(c, sigma, nil, []byte{1}))                  // (N, D) / (N) -> (N, D)
	z = G.Must(G.BroadcastHadamardProd(z, gain, nil, []byte{0}))                   // (N, D) * (D) -> (N, D)
	return G.BroadcastAdd(z, bias, nil, []byte{0})                                 // (N, D) + (D) -> (N, D)
}
