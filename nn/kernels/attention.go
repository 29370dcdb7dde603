package kernels

import "math"

// AttentionScale is the factor 1 / sqrt(dh) of the attention scores of
// heads of width dh: score = AttentionScale(dh) q . k.
func AttentionScale(dh int) float64 { return 1 / math.Sqrt(float64(dh)) }

// Heads is the shape of a multi-head attention of width D: its number of
// heads, their width D / heads and AttentionScale of it, computed once
// (NewHeads) instead of at every position: the division and the square
// root were 4% of the sampler's time.
type Heads struct {
	n, dim int
	scale  float64
}

// NewHeads is the shape of heads heads over width d (heads divides d).
func NewHeads(d, heads int) Heads {
	return Heads{n: heads, dim: d / heads, scale: AttentionScale(d / heads)}
}

// Attend adds to out (D) the multi-head attention of one query, the
// forward of the training graph's attention at each position and the
// sampler's at each token: for each of heads heads of width dh = D/heads,
//
//	out += sum_i w_hi v_i[h],  w_h. = softmax_i(AttentionScale(dh) q[h] . k_i[h])
//
// over n keys and values stored in rows stride apart: key i's head h is
// keys[i*stride+h*dh:][:dh], and its value, already through the output
// projection (D wide per head), vals[i*stride+h*D:][:D]. When pk is not
// nil there is one more key pk (D) with values pv (heads x D), put first.
// weights receives each head's softmax weights: head h's at
// weights[h*wstride:][:n+1] with the extra key first, or [:n] without.
// hs is NewHeads(len(out), heads).
func Attend(out, weights []float64, wstride int, q, keys, vals []float64, stride, n int, hs Heads, pk, pv []float64) {
	d, heads, dh, scale := len(out), hs.n, hs.dim, hs.scale
	lead := 0
	if pk != nil {
		lead = 1
	}
	for h := 0; h < heads; h++ {
		qh, w := q[h*dh:(h+1)*dh], weights[h*wstride:h*wstride+lead+n]
		if pk != nil {
			w[0] = Dot(qh, pk[h*dh:(h+1)*dh])
		}
		Dots(w[lead:], qh, keys[h*dh:], stride) // (n, dh) x (dh) -> (n)
		m := math.Inf(-1)
		for i := range w {
			w[i] *= scale
			m = max(m, w[i])
		}
		Exps(w, w, m) // the maximum's is exactly 1
		sum := 0.0
		for _, v := range w {
			sum += v
		}
		inv := 1 / sum
		for i := range w {
			w[i] *= inv
		}
		Axpys(out, w[lead:], vals[h*d:], stride) // (D, n) x (n) -> (D)
		if pv != nil {
			Axpy(out, w[0], pv[h*d:(h+1)*d])
		}
	}
}

// WeightsAll writes W_all = [W_Q | W_K | W_V[:, head 1] W_O[head 1, :] |
// ... | W_V[:, head H] W_O[head H, :]] (D, (2+H) D) into dst and returns
// it: a token's or position's row x W_all is its query, key and values of
// every head already through W_O (the first layer is linear in its input).
func WeightsAll(dst, wq, wk, wv, wo []float64, d, heads int) []float64 {
	w, dh := (2+heads)*d, d/heads
	for i := 0; i < d; i++ {
		copy(dst[i*w:i*w+d], wq[i*d:(i+1)*d])
		copy(dst[i*w+d:i*w+2*d], wk[i*d:(i+1)*d])
	}
	for h := 0; h < heads; h++ { // (D, dh) x (dh, D) -> (D, D)
		Gemm(false, false, 1, View(wv, h*dh, d, dh, d), View(wo, h*dh*d, dh, d, d), 0, View(dst, (2+h)*d, d, d, w))
	}
	return dst
}
