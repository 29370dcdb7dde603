package nn

import (
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// maskLogit is the large finite negative number a masked logit takes
// before the max-shifted log-softmax: exp(maskLogit - max) underflows to
// exactly 0, so masked entries get probability exactly 0 while no -Inf
// enters arithmetic. Unmasked logits must stay far above it (|value| < 1e8
// keeps them exact).
const maskLogit = -1e9

// uniformOffsets returns the offsets of rows rows of width w each.
func uniformOffsets(rows, w int) []int {
	off := make([]int, rows+1)
	for r := range off {
		off[r] = r * w
	}
	return off
}

// attend adds the fused embedding and banded causal attention op to the
// graph of E: for each token position n of the batch laid out by lay,
//
//	h_n = h0_n + sum_heads sum_j alpha_nj (h0_j W_V[:, head] W_O[head, :])
//	alpha_n. = softmax_j(q_n[head] . k_j[head] / sqrt(D/H)),
//	q = h0 W_Q, k = h0 W_K, h0_n = E[x_n] + P[c_n]
//
// over the keys j of position n: the prompt of its row (h0 = E[prompt],
// no positional embedding) when there is one, then the positions of its
// row from max(0, t-Context+1) to t itself. It returns h (B*T, D), the
// residual stream before the unembedding (prompt slots dropped). pos is
// nil without positional embeddings.
//
// The first layer is linear in h0 = E[x] + P[c], so the op multiplies the
// weights into tables of the distinct tokens of the batch (at most once
// per token while the parameters do not change) and of the Context
// positions (attentionKernel), and each position costs O(Context*D*H)
// instead of O(D^2).
func attend(lay *windowLayout, heads int, emb, pos, wq, wk, wv, wo *G.Node) (*G.Node, error) {
	d := emb.Shape()[1]
	k := &attentionKernel{lay: lay, d: d, heads: heads, hasPos: pos != nil}
	in := G.Nodes{emb}
	if pos != nil {
		in = append(in, pos)
	}
	in = append(in, wq, wk, wv, wo)
	return applyFused("Attention", k, tensor.Shape{lay.n(), d}, in...) // E, [P,] W_Q, W_K, W_V, W_O -> (B*T, D)
}

// weightsAll writes W_all = [W_Q | W_K | W_V[:, head 1] W_O[head 1, :] |
// ... | W_V[:, head H] W_O[head H, :]] (D, (2+H) D) into dst and returns it.
func weightsAll(dst, wq, wk, wv, wo []float64, d, heads int) []float64 {
	w, dh := (2+heads)*d, d/heads
	for i := 0; i < d; i++ {
		copy(dst[i*w:i*w+d], wq[i*d:(i+1)*d])
		copy(dst[i*w+d:i*w+2*d], wk[i*d:(i+1)*d])
	}
	for h := 0; h < heads; h++ { // (D, dh) x (dh, D) -> (D, D)
		gemm(false, false, 1, view(wv, h*dh, d, dh, d), view(wo, h*dh*d, dh, d, d), 0, view(dst, (2+h)*d, d, d, w))
	}
	return dst
}

// attentionKernel computes attend's forward and backward.
//
// With W = (2+H) D and W_all = [W_Q | W_K | W_V[:, head 1] W_O[head 1, :] |
// ... ] (D, W), the forward computes the tables T_E = E_u W_all (U, W) of
// the U distinct tokens of the batch (E_u their embedding rows; kept from
// run to run while the parameters do not change, tokenTables) and T_P = P
// W_all (C, W); the record of a token at position residue c is T_E[x] +
// T_P[c] = [q | k | vo_1 .. vo_H], vo_h its value of head h already
// through W_O. Attention then costs O(K D) per head and position, K <=
// Context+1 keys.
//
// The backward runs the same steps in reverse: per row, the gradients of
// its records (dq, dk, dvo) from the attention weights kept by the forward,
// summed per token into dT_E and per residue into dT_P (with the
// residual's dE and dP); then dW_all = E_u^T dT_E + P^T dT_P, split into
// dW_Q, dW_K and, head by head, dW_V and dW_O, and dE_u += dT_E W_all^T,
// dP += dT_P W_all^T.
//
// Rows are cut into attentionShards fixed shards run in parallel, each
// with its own row-sized records (rebuilt by the backward rather than
// kept: a row's records fit in a core's cache, the batch's would not) and
// its own per-token sums, added in shard order: results do not depend on
// the number of cores.
type attentionKernel struct {
	lay      *windowLayout
	d, heads int
	hasPos   bool
	wAll     []float64   // (D, W)
	tabs     tokenTables // T_E, the token records, kept while the parameters do not change
	eU       []float64   // (U, D) the embedding rows of the batch's distinct tokens
	tabP     []float64   // (C, W)
	alpha    []float64   // (N, H, Context+1) attention weights, prompt first
	shards   [attentionShards]attentionShard
	dtabE    []float64    // (U, W)
	dtabP    []float64    // (C, W)
	dEU      []float64    // (U, D)
	gAll     [2][]float64 // (D, W) each: dW_all over each half of the tokens
}

// attentionShards is the number of fixed shards of rows the attention
// runs in parallel.
const attentionShards = 2

// attentionShard is the scratch of one shard of rows.
type attentionShard struct {
	rec, drec   []float64 // (T+1, W) records of one row and their gradients: tokens, then the prompt
	da          []float64 // (Context+1) gradients of the attention weights
	dtabE, dEU  []float64 // (U, W), (U, D) the shard's sums per token
	dtabP, dPos []float64 // (C, W), (C, D) the shard's sums per residue
}

// width returns W = (2+H) D, the width of a record.
func (k *attentionKernel) width() int { return (2 + k.heads) * k.d }

// params splits the inputs into E, P (nil without positions), W_Q, W_K,
// W_V, W_O.
func (k *attentionKernel) params(in [][]float64) (e, p, wq, wk, wv, wo []float64) {
	e, rest := in[0], in[1:]
	if k.hasPos {
		p, rest = rest[0], rest[1:]
	}
	return e, p, rest[0], rest[1], rest[2], rest[3]
}

// eachShard runs fn on every shard in parallel with its range of rows.
func (k *attentionKernel) eachShard(fn func(sh *attentionShard, lo, hi int)) {
	b := k.lay.b
	parallelFor(attentionShards, 1, func(s0, s1 int) {
		for s := s0; s < s1; s++ {
			fn(&k.shards[s], s*b/attentionShards, (s+1)*b/attentionShards)
		}
	})
}

// rowRecords writes the records of row b into sh.rec: token t's in local
// slot t, the prompt's in local slot T.
func (k *attentionKernel) rowRecords(sh *attentionShard, b int) {
	l, w := k.lay, k.width()
	sh.rec = grow(sh.rec, (l.t+1)*w)
	for t := 0; t < l.t; t++ {
		s := b*l.t + t
		r, te := sh.rec[t*w:(t+1)*w], k.tabs.row(l.tok[s], w)
		if k.hasPos {
			addTwo(r, te, k.tabP[l.pos[s]*w:(l.pos[s]+1)*w])
		} else {
			copy(r, te)
		}
	}
	if l.prompt {
		copy(sh.rec[l.t*w:(l.t+1)*w], k.tabs.row(l.tok[l.n()+b], w))
	}
}

func (k *attentionKernel) forward(out []float64, in [][]float64) error {
	l, d, w, hd := k.lay, k.d, k.width(), k.heads
	dh := d / hd
	e, p, wq, wk, wv, wo := k.params(in)
	nu, c := len(l.uniq), l.ctx

	if k.tabs.refresh(in, len(e)/d, w) {
		k.wAll = weightsAll(grow(k.wAll, d*w), wq, wk, wv, wo, d, hd)
		if p != nil {
			k.tabP = grow(k.tabP, c*w)
			gemm(false, false, 1, dense(p, c, d), dense(k.wAll, d, w), 0, dense(k.tabP, c, w)) // (C, D) x (D, W) -> (C, W)
		}
	}
	k.tabs.fill(l.uniq, e, k.wAll, d, w) // T_E = E_u W_all: (U, D) x (D, W) -> (U, W), rows not yet current only
	k.eU = grow(k.eU, nu*d)
	for u, x := range l.uniq {
		copy(k.eU[u*d:(u+1)*d], e[x*d:(x+1)*d])
	}

	kmax := c + 1
	k.alpha = grow(k.alpha, l.n()*hd*kmax)
	scale := 1 / math.Sqrt(float64(dh))
	lead := 0
	if l.prompt {
		lead = 1
	}
	k.eachShard(func(sh *attentionShard, lo, hi int) {
		pr := l.t * w // the prompt's record in sh.rec
		for b := lo; b < hi; b++ {
			k.rowRecords(sh, b)
			for t := 0; t < l.t; t++ {
				n, j0 := b*l.t+t, max(0, t-c+1) // keys: [the prompt,] tokens j0..t
				nw := t - j0 + 1
				hn, x := out[n*d:(n+1)*d], l.tok[n]
				if p != nil {
					addTwo(hn, e[x*d:(x+1)*d], p[l.pos[n]*d:(l.pos[n]+1)*d])
				} else {
					copy(hn, e[x*d:(x+1)*d])
				}
				q := sh.rec[t*w : t*w+d]
				for h := 0; h < hd; h++ {
					qh := q[h*dh : (h+1)*dh]
					al := k.alpha[(n*hd+h)*kmax : (n*hd+h)*kmax+lead+nw]
					if l.prompt {
						al[0] = dot(qh, sh.rec[pr+d+h*dh:pr+d+(h+1)*dh]) * scale
					}
					gemv(false, scale, view(sh.rec, j0*w+d+h*dh, nw, dh, w), qh, 0, al[lead:]) // (nw, dh) x (dh) -> (nw)
					m := al[0]
					for _, v := range al {
						if v > m {
							m = v
						}
					}
					exps(al, al, m)
					sum := 0.0
					for _, v := range al {
						sum += v
					}
					inv := 1 / sum
					for i := range al {
						al[i] *= inv
					}
					gemv(true, 1, view(sh.rec, j0*w+(2+h)*d, nw, d, w), al[lead:], 1, hn) // (D, nw) x (nw) -> (D)
					if l.prompt {
						axpy(hn, al[0], sh.rec[pr+(2+h)*d:pr+(3+h)*d])
					}
				}
			}
		}
	})
	return nil
}

func (k *attentionKernel) backward(grads [][]float64, in [][]float64, g []float64) error {
	l, d, w, hd := k.lay, k.d, k.width(), k.heads
	dh := d / hd
	_, p, _, _, wv, wo := k.params(in)
	de, dp, dwq, dwk, dwv, dwo := k.params(grads)
	nu, c, kmax := len(l.uniq), l.ctx, l.ctx+1
	scale := 1 / math.Sqrt(float64(dh))
	lead := 0
	if l.prompt {
		lead = 1
	}

	// Per shard of rows: the gradients of each row's records, summed per
	// token and per residue with the residual's.
	k.eachShard(func(sh *attentionShard, lo, hi int) {
		sh.drec, sh.da = grow(sh.drec, (l.t+1)*w), grow(sh.da, kmax)
		sh.dtabE, sh.dEU = grow(sh.dtabE, nu*w), grow(sh.dEU, nu*d)
		clear(sh.dtabE)
		clear(sh.dEU)
		if p != nil {
			sh.dtabP, sh.dPos = grow(sh.dtabP, c*w), grow(sh.dPos, c*d)
			clear(sh.dtabP)
			clear(sh.dPos)
		}
		pr := l.t * w // the prompt's record in sh.rec and sh.drec
		for b := lo; b < hi; b++ {
			k.rowRecords(sh, b)
			clear(sh.drec)
			for t := 0; t < l.t; t++ {
				n, j0 := b*l.t+t, max(0, t-c+1)
				nw := t - j0 + 1
				gn := g[n*d : (n+1)*d]
				q, dq := sh.rec[t*w:t*w+d], sh.drec[t*w:t*w+d]
				for h := 0; h < hd; h++ {
					qh, dqh := q[h*dh:(h+1)*dh], dq[h*dh:(h+1)*dh]
					al := k.alpha[(n*hd+h)*kmax : (n*hd+h)*kmax+lead+nw]
					da := sh.da[:lead+nw]
					vals, dvals := view(sh.rec, j0*w+(2+h)*d, nw, d, w), view(sh.drec, j0*w+(2+h)*d, nw, d, w)
					keys, dkeys := view(sh.rec, j0*w+d+h*dh, nw, dh, w), view(sh.drec, j0*w+d+h*dh, nw, dh, w)
					gemv(false, 1, vals, gn, 0, da[lead:]) // (nw, D) x (D) -> (nw): d loss / d alpha
					if l.prompt {
						da[0] = dot(gn, sh.rec[pr+(2+h)*d:pr+(3+h)*d])
					}
					sum := 0.0
					for i, a := range al {
						sum += a * da[i]
					}
					ger(1, al[lead:], gn, dvals) // (nw) x (D) -> (nw, D): d loss / d vo
					for i, a := range al {
						da[i] = a * (da[i] - sum) * scale // d loss / d score
					}
					gemv(true, 1, keys, da[lead:], 1, dqh) // (dh, nw) x (nw) -> (dh)
					ger(1, da[lead:], qh, dkeys)           // (nw) x (dh) -> (nw, dh): d loss / d k
					if l.prompt {
						axpy(sh.drec[pr+(2+h)*d:pr+(3+h)*d], al[0], gn)
						axpy(dqh, da[0], sh.rec[pr+d+h*dh:pr+d+(h+1)*dh])
						axpy(sh.drec[pr+d+h*dh:pr+d+(h+1)*dh], da[0], qh)
					}
				}
			}
			for t := 0; t <= l.t; t++ {
				s := b*l.t + t
				if t == l.t {
					if !l.prompt {
						break
					}
					s = l.n() + b
				}
				u := l.uidx[s]
				addTo(sh.dtabE[u*w:(u+1)*w], sh.drec[t*w:(t+1)*w])
				if t == l.t {
					continue // the prompt: no residual, no position
				}
				addTo(sh.dEU[u*d:(u+1)*d], g[s*d:(s+1)*d])
				if p != nil {
					c := l.pos[s]
					addTo(sh.dtabP[c*w:(c+1)*w], sh.drec[t*w:(t+1)*w])
					addTo(sh.dPos[c*d:(c+1)*d], g[s*d:(s+1)*d])
				}
			}
		}
	})
	k.dtabE, k.dEU = grow(k.dtabE, nu*w), grow(k.dEU, nu*d)
	sumShards(k.dtabE, func(s int) []float64 { return k.shards[s].dtabE })
	sumShards(k.dEU, func(s int) []float64 { return k.shards[s].dEU })

	// Through the tables to the weights and embeddings.
	half := nu / 2
	parallelFor(2, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			u0, u1 := i*half, nu
			if i == 0 {
				u1 = half
			}
			k.gAll[i] = grow(k.gAll[i], d*w)
			gemm(true, false, 1, view(k.eU, u0*d, u1-u0, d, d), view(k.dtabE, u0*w, u1-u0, w, w), 0, dense(k.gAll[i], d, w)) // (D, U/2) x (U/2, W) -> (D, W)
		}
	})
	gAll := k.gAll[0]
	addTo(gAll, k.gAll[1])
	if p != nil {
		k.dtabP = grow(k.dtabP, c*w)
		sumShards(k.dtabP, func(s int) []float64 { return k.shards[s].dtabP })
		sumShards(dp, func(s int) []float64 { return k.shards[s].dPos })
		gemm(true, false, 1, dense(p, c, d), dense(k.dtabP, c, w), 1, dense(gAll, d, w))    // (D, C) x (C, W) -> (D, W)
		gemm(false, true, 1, dense(k.dtabP, c, w), dense(k.wAll, d, w), 1, dense(dp, c, d)) // (C, W) x (W, D) -> (C, D)
	}
	for i := 0; i < d; i++ {
		copy(dwq[i*d:(i+1)*d], gAll[i*w:i*w+d])
		copy(dwk[i*d:(i+1)*d], gAll[i*w+d:i*w+2*d])
	}
	for h := 0; h < hd; h++ {
		gh := view(gAll, (2+h)*d, d, d, w)                                                 // (D, D): dW_V W_O of head h
		gemm(false, true, 1, gh, view(wo, h*dh*d, dh, d, d), 0, view(dwv, h*dh, d, dh, d)) // (D, D) x (D, dh) -> (D, dh)
		gemm(true, false, 1, view(wv, h*dh, d, dh, d), gh, 0, view(dwo, h*dh*d, dh, d, d)) // (dh, D) x (D, D) -> (dh, D)
	}
	gemm(false, true, 1, dense(k.dtabE, nu, w), dense(k.wAll, d, w), 1, dense(k.dEU, nu, d)) // (U, W) x (W, D) -> (U, D)
	clear(de)
	for u, x := range l.uniq {
		copy(de[x*d:(x+1)*d], k.dEU[u*d:(u+1)*d])
	}
	return nil
}

// sumShards overwrites dst with the sum of the shards' part(s), in shard
// order, spread over the cores by element.
func sumShards(dst []float64, part func(s int) []float64) {
	parallelFor(len(dst), 4096, func(lo, hi int) {
		copy(dst[lo:hi], part(0)[lo:hi])
		for s := 1; s < attentionShards; s++ {
			addTo(dst[lo:hi], part(s)[lo:hi])
		}
	})
}
