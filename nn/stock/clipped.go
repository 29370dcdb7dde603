package stock

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// ClippedSurrogate is PPO's clipped surrogate (Schulman et al. 2017)
// summed over items, from stock ops:
//
//	sum_i advPos_i min(r_i, 1+eps) + advNeg_i max(r_i, 1-eps),  r_i = exp(logp_i - oldLogp_i),
//
// with advPos (advNeg) each item's summed positive (negative) advantage,
// all four (N) vectors. min(r, c) = r - relu(r - c) and max(r, c) = r +
// relu(c - r) keep it in stock ops.
func ClippedSurrogate(logp, oldLogp, advPos, advNeg *G.Node, eps float64) (obj *G.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			obj, err = nil, fmt.Errorf("stock: clipped surrogate: %v", r)
		}
	}()
	hi := G.NewConstant(1+eps, G.WithName("1+eps"))
	lo := G.NewConstant(1-eps, G.WithName("1-eps"))
	r := G.Must(G.Exp(G.Must(G.Sub(logp, oldLogp))))                   // (N) ratio pi/pi_old
	upper := G.Must(G.Sub(r, G.Must(G.Rectify(G.Must(G.Sub(r, hi)))))) // (N) min(r, 1+eps)
	lower := G.Must(G.Add(r, G.Must(G.Rectify(G.Must(G.Sub(lo, r)))))) // (N) max(r, 1-eps)
	pos := G.Must(G.Mul(advPos, upper))                                // (N) . (N) -> ()
	neg := G.Must(G.Mul(advNeg, lower))                                // (N) . (N) -> ()
	return G.Add(pos, neg)
}
