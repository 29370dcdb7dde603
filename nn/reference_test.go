package nn

import (
	"fmt"
	"math"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The transformer's layers built from gorgonia's stock ops, as they were
// before the fused ops replaced them: an independent reference (values
// and autodiff gradients) for the fused attention and layer norm.

// referenceAttention builds multi-head causal self-attention over windows of
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
func referenceAttention(h0, wq, wk, wv, wo *G.Node, b, t, heads, ctx int, prompt bool) (*G.Node, error) {
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

// referenceLayerNorm builds LN(h) = (h - mean(h)) / sqrt(var(h) + eps) * gain + bias
// for each row of h (N, D), mean and (biased) variance over the D features,
// gain and bias (D) vectors. Row means are products with a constant (D, 1)
// column of 1/D; rows are broadcast by products with constant columns or
// rows of ones (exact: products with 1 and sums with 0), so only stock ops
// with well-tested backwards enter the graph.
func referenceLayerNorm(h, gain, bias *G.Node) (*G.Node, error) {
	g := h.Graph()
	n, d := h.Shape()[0], h.Shape()[1]
	avg := G.NewMatrix(g, G.Float64, G.WithShape(d, 1), G.WithName("ln_avg"),
		G.WithValue(filled(d, 1, 1/float64(d)))) // (D, 1)
	perCol := G.NewMatrix(g, G.Float64, G.WithShape(1, d), G.WithName("ln_cols"),
		G.WithValue(filled(1, d, 1))) // (1, D)
	perRow := G.NewMatrix(g, G.Float64, G.WithShape(n, 1), G.WithName("ln_rows"),
		G.WithValue(filled(n, 1, 1))) // (N, 1)
	eps := G.NewConstant(layerNormEps, G.WithName("ln_eps")) // ()

	mean, err := G.Mul(h, avg) // (N, D) x (D, 1) -> (N, 1)
	if err != nil {
		return nil, err
	}
	spread, err := G.Mul(mean, perCol) // (N, 1) x (1, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	c, err := G.Sub(h, spread) // (N, D) - (N, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	sq, err := G.HadamardProd(c, c) // (N, D) * (N, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	variance, err := G.Mul(sq, avg) // (N, D) x (D, 1) -> (N, 1)
	if err != nil {
		return nil, err
	}
	if variance, err = G.Add(variance, eps); err != nil { // (N, 1) + () -> (N, 1)
		return nil, err
	}
	sigma, err := G.Sqrt(variance) // (N, 1) -> (N, 1)
	if err != nil {
		return nil, err
	}
	if spread, err = G.Mul(sigma, perCol); err != nil { // (N, 1) x (1, D) -> (N, D)
		return nil, err
	}
	z, err := G.HadamardDiv(c, spread) // (N, D) / (N, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	gain2, err := G.Reshape(gain, tensor.Shape{1, d}) // (D) -> (1, D)
	if err != nil {
		return nil, err
	}
	bias2, err := G.Reshape(bias, tensor.Shape{1, d}) // (D) -> (1, D)
	if err != nil {
		return nil, err
	}
	gains, err := G.Mul(perRow, gain2) // (N, 1) x (1, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	biases, err := G.Mul(perRow, bias2) // (N, 1) x (1, D) -> (N, D)
	if err != nil {
		return nil, err
	}
	if z, err = G.HadamardProd(z, gains); err != nil { // (N, D) * (N, D) -> (N, D)
		return nil, err
	}
	return G.Add(z, biases) // (N, D) + (N, D) -> (N, D)
}

// filled returns an (r, c) tensor whose entries are all x.
func filled(r, c int, x float64) *tensor.Dense {
	data := make([]float64, r*c)
	for i := range data {
		data[i] = x
	}
	return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(data))
}

// reference is the transformer's forward and a weighted log-likelihood
// built as before the fused ops, on a graph of its own holding copies of
// a transformer's parameters: embeddings gathered per slot, the dense
// (B, L, L) attention of referenceAttention, the stock-op layer norm, a
// dense (N, D) x (D, V) logit product gathered to the slots plus the
// per-entry table B, and SegmentLogSoftmax. Its values and autodiff
// gradients are an independent check of the fused graph's.
type reference struct {
	params     G.Nodes
	logp, loss G.Value
	grads      []G.Value
	vm         G.VM
}

// newReference builds the reference of tr for rows (b rows of at most n
// tokens) and the loss sum_s w[s] logp[s] over all B*n*R slots.
func newReference(t *testing.T, tr *Transformer, b, n int, rows []Window, w []float64) *reference {
	t.Helper()
	cfg := tr.Config()
	s := cfg.Support
	g := G.NewGraph()
	ref := &reference{}
	for _, p := range tr.Learnables() {
		data := slices.Clone(p.Value().Data().([]float64))
		ref.params = append(ref.params, G.NewTensor(g, G.Float64, p.Dims(), G.WithShape(p.Shape()...), G.WithName(p.Name()),
			G.WithValue(tensor.New(tensor.WithShape(p.Shape()...), tensor.WithBacking(data)))))
	}
	param := func(name string) *G.Node {
		for _, p := range ref.params {
			if p.Name() == name {
				return p
			}
		}
		return nil
	}
	ints := func(name string, data []int) *G.Node {
		return G.NewVector(g, G.Int, G.WithShape(len(data)), G.WithName(name),
			G.WithValue(tensor.New(tensor.WithShape(len(data)), tensor.WithBacking(data))))
	}
	lay := newWindowLayout(s, b, n, cfg.maxRow(), cfg.Context, cfg.Prompt)
	lay.fill(rows)
	l, first := n, 0
	if cfg.Prompt {
		l, first = n+1, 1
	}
	tok, pos, keep := make([]int, b*l), make([]int, b*l), make([]int, b*n)
	for r := 0; r < b; r++ {
		if cfg.Prompt {
			tok[r*l], pos[r*l] = lay.tok[b*n+r], -1
		}
		for k := 0; k < n; k++ {
			tok[r*l+first+k], pos[r*l+first+k] = lay.tok[r*n+k], lay.pos[r*n+k]
			keep[r*n+k] = r*l + first + k
		}
	}
	v, r := cfg.Vocab, cfg.maxRow()
	sel, ent, mask := make([]int, b*n*r), make([]int, b*n*r), make([]float64, b*n*r)
	for sl, e := range lay.entries {
		p := sl / r
		ent[sl] = e
		if e < 0 {
			sel[sl], mask[sl] = -1, maskLogit // logit exactly maskLogit, no gradient
			continue
		}
		sel[sl] = p*v + s.Next[e]
	}
	h0 := G.Must(gather(param("E"), ints("tokens", tok))) // (B*L, D)
	if p := param("P"); p != nil {
		h0 = G.Must(G.Add(h0, G.Must(gather(p, ints("positions", pos))))) // (B*L, D)
	}
	attn, err := referenceAttention(h0, param("WQ"), param("WK"), param("WV"), param("WO"), b, l, cfg.Heads, cfg.Context, cfg.Prompt)
	if err != nil {
		t.Fatal(err)
	}
	h := G.Must(G.Add(h0, attn)) // (B*L, D)
	if cfg.Prompt {
		h = G.Must(gather(h, ints("keep", keep))) // (N, D)
	}
	if gain := param("LN_gain"); gain != nil {
		h = G.Must(referenceLayerNorm(h, gain, param("LN_bias"))) // (N, D)
	}
	u := param("U")
	if cfg.Init == "table" {
		u = G.Must(G.Transpose(u)) // (V, D) -> (D, V)
	}
	logits := G.Must(G.Mul(h, u))                                                                 // (N, D) x (D, V) -> (N, V)
	slots := G.Must(gather(G.Must(G.Reshape(logits, tensor.Shape{b * n * v})), ints("sel", sel))) // (N*R)
	slots = G.Must(G.Add(slots, G.NewVector(g, G.Float64, G.WithShape(len(mask)), G.WithName("mask"),
		G.WithValue(tensor.New(tensor.WithShape(len(mask)), tensor.WithBacking(mask)))))) // (N*R)
	if bias := param("B"); bias != nil {
		slots = G.Must(G.Add(slots, G.Must(gather(bias, ints("entries", ent))))) // (N*R)
	}
	logp := G.Must(SegmentLogSoftmax(slots, uniformOffsets(b*n, r))) // (N*R)
	wn := G.NewVector(g, G.Float64, G.WithShape(len(w)), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(len(w)), tensor.WithBacking(slices.Clone(w)))))
	loss := G.Must(G.Mul(wn, logp)) // ()
	G.Read(logp, &ref.logp)
	G.Read(loss, &ref.loss)
	grads, err := G.Grad(loss, ref.params...)
	if err != nil {
		t.Fatal(err)
	}
	ref.grads = make([]G.Value, len(grads))
	for i, gr := range grads {
		G.Read(gr, &ref.grads[i])
	}
	ref.vm = G.NewTapeMachine(g)
	t.Cleanup(func() { ref.vm.Close() })
	if err := ref.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return ref
}
