package stock

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Attention returns multi-head causal self-attention over windows of ctx
// positions for b sequences of t slots laid out row after row in h0 (b*t,
// D): position i attends to positions j with i-ctx < j <= i of its own
// sequence. With prompt, slot 0 of each row is the prompt, which every
// slot attends to and which attends only to itself; the window counts the
// other slots only. It returns the output projection (b*t, D) of the
// concatenated heads, ops.Attention's output without the residual h0:
//
//	out = concat_heads(softmax(q k^T / sqrt(D/H) + mask) v) W_O,  q, k, v = h0 W_Q, h0 W_K, h0 W_V
//
// Heads are cut out of the (b*t, D) projections by constant 0/1 selection
// matrices (exact: products with 1 and sums with 0), so no transposes or
// strided views enter the graph. The softmax is the exponential of
// LogSoftmax over rows of t scores, the masked scores having maskLogit
// added (AttentionMask): stable per row and exactly 0 off the window.
func Attention(h0, wq, wk, wv, wo *G.Node, b, t, heads, ctx int, prompt bool, maskLogit float64) (out *G.Node, err error) {
	defer recoverGraph("attention", &err)
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
		G.WithValue(AttentionMask(b, t, ctx, prompt, maskLogit))) // (B, T, T)
	scale := G.NewConstant(1/math.Sqrt(float64(dh)), G.WithName("attn_scale")) // ()
	var cat *G.Node                                                            // (N, D): the heads side by side
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
		rows, err := G.Reshape(s, tensor.Shape{b * t, t}) // (B, T, T) -> (B*T, T)
		if err != nil {
			return nil, err
		}
		logA, err := LogSoftmax(rows) // (B*T, T) -> (B*T, T)
		if err != nil {
			return nil, err
		}
		a, err := G.Exp(logA) // (B*T, T) -> (B*T, T)
		if err != nil {
			return nil, err
		}
		a3, err := G.Reshape(a, tensor.Shape{b, t, t}) // (B*T, T) -> (B, T, T)
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

// AttentionMask returns the (b, t, t) additive mask: 0 where query i may
// see key j (i-ctx < j <= i), maskLogit elsewhere. With prompt, slot 0 is
// the prompt: query 0 sees only key 0, and every query sees key 0 besides
// its window. Every row keeps its diagonal.
func AttentionMask(b, t, ctx int, prompt bool, maskLogit float64) *tensor.Dense {
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

// Block returns ops.Attention's output (N, D): the residual stream h0 +
// Attention(h0) at the token slots, h0 = E[tokens] + P'[positions] (P'
// is P with a zero row appended at index Context, a prompt's position;
// no P without positions, pos nil). tokens and positions (B*L) lay out
// b rows of l key slots, a row's prompt first with prompt; keep (N) lists
// the token slots (ops.Layout.Indices).
func Block(emb, pos, wq, wk, wv, wo, tokens, positions, keep *G.Node, b, l, heads, ctx int, prompt bool, maskLogit float64) (out *G.Node, err error) {
	defer recoverGraph("attention block", &err)
	h0 := G.Must(Gather(emb, tokens)) // (V, D) -> (B*L, D)
	if pos != nil {
		zero := G.NewMatrix(pos.Graph(), G.Float64, G.WithShape(1, pos.Shape()[1]), G.WithName("prompt_position"),
			G.WithValue(tensor.New(tensor.WithShape(1, pos.Shape()[1]), tensor.Of(tensor.Float64)))) // (1, D)
		padded := G.Must(G.Concat(0, pos, zero))                  // (C, D), (1, D) -> (C+1, D)
		h0 = G.Must(G.Add(h0, G.Must(Gather(padded, positions)))) // (B*L, D)
	}
	h := G.Must(G.Add(h0, G.Must(Attention(h0, wq, wk, wv, wo, b, l, heads, ctx, prompt, maskLogit)))) // (B*L, D)
	if !prompt {
		return h, nil
	}
	return Gather(h, keep) // (B*L, D) -> (N, D)
}
