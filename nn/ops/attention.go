package ops

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// Attention adds the fused embedding and banded causal attention op to the
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
// instead of O(D^2). Each position's attention is kernels.Attend, the
// sampler's. The backward is written by hand (attentionKernel);
// TestAttentionMatchesStock checks it against gorgonia's autodiff of
// stock.Attention.
func Attention(lay *Layout, heads int, emb, pos, wq, wk, wv, wo *G.Node) (*G.Node, error) {
	d := emb.Shape()[1]
	k := &attentionKernel{lay: lay, d: d, heads: heads, hasPos: pos != nil}
	in := G.Nodes{emb}
	if pos != nil {
		in = append(in, pos)
	}
	in = append(in, wq, wk, wv, wo)
	return applyFused("Attention", k, tensor.Shape{lay.N(), d}, in...) // E, [P,] W_Q, W_K, W_V, W_O -> (B*T, D)
}

// attentionKernel computes Attention's forward and backward.
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
	lay      *Layout
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
	kernels.ParallelFor(attentionShards, 1, func(s0, s1 int) {
		for s := s0; s < s1; s++ {
			fn(&k.shards[s], s*b/attentionShards, (s+1)*b/attentionShards)
		}
	})
}

// rowRecords writes the records of row b into sh.rec: token t's in local
// slot t, the prompt's in local slot T.
func (k *attentionKernel) rowRecords(sh *attentionShard, b int) {
	l, w := k.lay, k.width()
	sh.rec = kernels.Grow(sh.rec, (l.t+1)*w)
	for t := 0; t < l.t; t++ {
		s := b*l.t + t
		r, te := sh.rec[t*w:(t+1)*w], k.tabs.row(l.tok[s], w)
		if k.hasPos {
			kernels.AddTwo(r, te, k.tabP[l.pos[s]*w:(l.pos[s]+1)*w])
		} else {
			copy(r, te)
		}
	}
	if l.prompt {
		copy(sh.rec[l.t*w:(l.t+1)*w], k.tabs.row(l.tok[l.N()+b], w))
	}
}

func (k *attentionKernel) forward(out []float64, in [][]float64) error {
	l, d, w, hd := k.lay, k.d, k.width(), k.heads
	e, p, wq, wk, wv, wo := k.params(in)
	nu, c := len(l.uniq), l.ctx

	if k.tabs.refresh(in, len(e)/d, w) {
		k.wAll = kernels.WeightsAll(kernels.Grow(k.wAll, d*w), wq, wk, wv, wo, d, hd)
		if p != nil {
			k.tabP = kernels.Grow(k.tabP, c*w)
			kernels.Gemm(false, false, 1, kernels.Dense(p, c, d), kernels.Dense(k.wAll, d, w), 0, kernels.Dense(k.tabP, c, w)) // (C, D) x (D, W) -> (C, W)
		}
	}
	k.tabs.fill(l.uniq, e, k.wAll, d, w) // T_E = E_u W_all: (U, D) x (D, W) -> (U, W), rows not yet current only
	k.eU = kernels.Grow(k.eU, nu*d)
	for u, x := range l.uniq {
		copy(k.eU[u*d:(u+1)*d], e[x*d:(x+1)*d])
	}

	kmax, hs := c+1, kernels.NewHeads(d, hd)
	k.alpha = kernels.Grow(k.alpha, l.N()*hd*kmax)
	k.eachShard(func(sh *attentionShard, lo, hi int) {
		for b := lo; b < hi; b++ {
			k.rowRecords(sh, b)
			var pk, pv []float64 // the prompt's key and values: local slot T of sh.rec
			if l.prompt {
				pr := l.t * w
				pk, pv = sh.rec[pr+d:pr+2*d], sh.rec[pr+2*d:pr+w]
			}
			for t := 0; t < l.t; t++ {
				n, j0 := b*l.t+t, max(0, t-c+1) // keys: [the prompt,] tokens j0..t
				hn, x := out[n*d:(n+1)*d], l.tok[n]
				if p != nil {
					kernels.AddTwo(hn, e[x*d:(x+1)*d], p[l.pos[n]*d:(l.pos[n]+1)*d])
				} else {
					copy(hn, e[x*d:(x+1)*d])
				}
				q := sh.rec[t*w : t*w+d]
				kernels.Attend(hn, k.alpha[n*hd*kmax:(n+1)*hd*kmax], kmax, q, sh.rec[j0*w+d:], sh.rec[j0*w+2*d:], w, t-j0+1, hs, pk, pv)
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
	scale := kernels.AttentionScale(dh)
	lead := 0
	if l.prompt {
		lead = 1
	}

	// Per shard of rows: the gradients of each row's records, summed per
	// token and per residue with the residual's.
	k.eachShard(func(sh *attentionShard, lo, hi int) {
		sh.drec, sh.da = kernels.Grow(sh.drec, (l.t+1)*w), kernels.Grow(sh.da, kmax)
		sh.dtabE, sh.dEU = kernels.Grow(sh.dtabE, nu*w), kernels.Grow(sh.dEU, nu*d)
		clear(sh.dtabE)
		clear(sh.dEU)
		if p != nil {
			sh.dtabP, sh.dPos = kernels.Grow(sh.dtabP, c*w), kernels.Grow(sh.dPos, c*d)
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
					vals, dvals := kernels.View(sh.rec, j0*w+(2+h)*d, nw, d, w), kernels.View(sh.drec, j0*w+(2+h)*d, nw, d, w)
					keys, dkeys := kernels.View(sh.rec, j0*w+d+h*dh, nw, dh, w), kernels.View(sh.drec, j0*w+d+h*dh, nw, dh, w)
					kernels.Gemv(false, 1, vals, gn, 0, da[lead:]) // (nw, D) x (D) -> (nw): d loss / d alpha
					if l.prompt {
						da[0] = kernels.Dot(gn, sh.rec[pr+(2+h)*d:pr+(3+h)*d])
					}
					sum := 0.0
					for i, a := range al {
						sum += a * da[i]
					}
					kernels.Ger(1, al[lead:], gn, dvals) // (nw) x (D) -> (nw, D): d loss / d vo
					for i, a := range al {
						da[i] = a * (da[i] - sum) * scale // d loss / d score
					}
					kernels.Gemv(true, 1, keys, da[lead:], 1, dqh) // (dh, nw) x (nw) -> (dh)
					kernels.Ger(1, da[lead:], qh, dkeys)           // (nw) x (dh) -> (nw, dh): d loss / d k
					if l.prompt {
						kernels.Axpy(sh.drec[pr+(2+h)*d:pr+(3+h)*d], al[0], gn)
						kernels.Axpy(dqh, da[0], sh.rec[pr+d+h*dh:pr+d+(h+1)*dh])
						kernels.Axpy(sh.drec[pr+d+h*dh:pr+d+(h+1)*dh], da[0], qh)
					}
				}
			}
			for t := 0; t <= l.t; t++ {
				s := b*l.t + t
				if t == l.t {
					if !l.prompt {
						break
					}
					s = l.N() + b
				}
				u := l.uidx[s]
				kernels.AddTo(sh.dtabE[u*w:(u+1)*w], sh.drec[t*w:(t+1)*w])
				if t == l.t {
					continue // the prompt: no residual, no position
				}
				kernels.AddTo(sh.dEU[u*d:(u+1)*d], g[s*d:(s+1)*d])
				if p != nil {
					c := l.pos[s]
					kernels.AddTo(sh.dtabP[c*w:(c+1)*w], sh.drec[t*w:(t+1)*w])
					kernels.AddTo(sh.dPos[c*d:(c+1)*d], g[s*d:(s+1)*d])
				}
			}
		}
	})
	k.dtabE, k.dEU = kernels.Grow(k.dtabE, nu*w), kernels.Grow(k.dEU, nu*d)
	sumShards(k.dtabE, func(s int) []float64 { return k.shards[s].dtabE })
	sumShards(k.dEU, func(s int) []float64 { return k.shards[s].dEU })

	// Through the tables to the weights and embeddings.
	half := nu / 2
	kernels.ParallelFor(2, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			u0, u1 := i*half, nu
			if i == 0 {
				u1 = half
			}
			k.gAll[i] = kernels.Grow(k.gAll[i], d*w)
			kernels.Gemm(true, false, 1, kernels.View(k.eU, u0*d, u1-u0, d, d), kernels.View(k.dtabE, u0*w, u1-u0, w, w), 0, kernels.Dense(k.gAll[i], d, w)) // (D, U/2) x (U/2, W) -> (D, W)
		}
	})
	gAll := k.gAll[0]
	kernels.AddTo(gAll, k.gAll[1])
	if p != nil {
		k.dtabP = kernels.Grow(k.dtabP, c*w)
		sumShards(k.dtabP, func(s int) []float64 { return k.shards[s].dtabP })
		sumShards(dp, func(s int) []float64 { return k.shards[s].dPos })
		kernels.Gemm(true, false, 1, kernels.Dense(p, c, d), kernels.Dense(k.dtabP, c, w), 1, kernels.Dense(gAll, d, w))    // (D, C) x (C, W) -> (D, W)
		kernels.Gemm(false, true, 1, kernels.Dense(k.dtabP, c, w), kernels.Dense(k.wAll, d, w), 1, kernels.Dense(dp, c, d)) // (C, W) x (W, D) -> (C, D)
	}
	for i := 0; i < d; i++ {
		copy(dwq[i*d:(i+1)*d], gAll[i*w:i*w+d])
		copy(dwk[i*d:(i+1)*d], gAll[i*w+d:i*w+2*d])
	}
	for h := 0; h < hd; h++ {
		gh := kernels.View(gAll, (2+h)*d, d, d, w)                                                                 // (D, D): dW_V W_O of head h
		kernels.Gemm(false, true, 1, gh, kernels.View(wo, h*dh*d, dh, d, d), 0, kernels.View(dwv, h*dh, d, dh, d)) // (D, D) x (D, dh) -> (D, dh)
		kernels.Gemm(true, false, 1, kernels.View(wv, h*dh, d, dh, d), gh, 0, kernels.View(dwo, h*dh*d, dh, d, d)) // (dh, D) x (D, D) -> (dh, D)
	}
	kernels.Gemm(false, true, 1, kernels.Dense(k.dtabE, nu, w), kernels.Dense(k.wAll, d, w), 1, kernels.Dense(k.dEU, nu, d)) // (U, W) x (W, D) -> (U, D)
	clear(de)
	for u, x := range l.uniq {
		copy(de[x*d:(x+1)*d], k.dEU[u*d:(u+1)*d])
	}
	return nil
}

// sumShards overwrites dst with the sum of the shards' part(s), in shard
// order, spread over the cores by element.
func sumShards(dst []float64, part func(s int) []float64) {
	kernels.ParallelFor(len(dst), 4096, func(lo, hi int) {
		copy(dst[lo:hi], part(0)[lo:hi])
		for s := 1; s < attentionShards; s++ {
			kernels.AddTo(dst[lo:hi], part(s)[lo:hi])
		}
	})
}
