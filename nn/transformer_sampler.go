package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// TransformerSampler computes a Transformer's next-token log-probabilities
// in plain Go for one growing sequence, with a cache of the keys and values
// of the last Context tokens (and, with Prompt, of the prompt, kept for the
// whole sequence). It builds no graph.
//
// The first layer is linear in h0 = E[x] + P[p], so the sampler keeps,
// filled lazily, the products of each token's and each position's
// embedding with W_Q, W_K and, head by head, W_V W_O: a token's query, key
// and output value are then sums of two cached rows, and each Push costs
// O(Context*D + R*D) (attention over the window and the R logits of the
// current row) once the rows it needs are cached, instead of O(D^2).
// With LayerNorm, the residual stream goes through the same layer norm
// (O(D)) before the R logits.
//
// It holds a copy of the parameters taken by Transformer.Sampler, so it is
// unaffected by later updates (take a new one after a step) and safe to use
// on another goroutine than the training graph; one sampler per goroutine.
type TransformerSampler struct {
	cfg     TransformerConfig
	v, d    int
	heads   int
	emb     []float64 // (V, D)
	pos     []float64 // (C, D) or nil
	wq, wk  []float64 // (D, D)
	wv, wo  []float64 // (D, D)
	unemb   []float64 // (D, V)
	lnGain  []float64 // (D) or nil without LayerNorm
	lnBias  []float64 // (D) or nil without LayerNorm
	tok, at rows      // per token, per position: h0 part times W_Q, W_K, W_V W_O
	keys    []float64 // (C, D) ring: the n-th token pushed in slot n mod C
	vals    []float64 // (C, H*D) ring: per head, the value already through W_O
	pkey    []float64 // (D) key of the prompt
	pval    []float64 // (H*D) value of the prompt through W_O
	prompt  bool      // pkey and pval hold the current sequence's prompt
	start   int       // absolute position of the first token pushed
	n       int       // tokens pushed
	last    int       // last token pushed
	q, h    []float64 // (D) scratch
	tmp     []float64 // (D) scratch
	scores  []float64 // (C+1) scratch
	attn    []float64 // (C+1) the last Push's attention weights, averaged over heads
	logp    []float64 // (R) log-probs over Row(last)
	lse     []float64 // (1) scratch for segmentLogSoftmaxForward
	offsets []int     // {0, len(row)}
}

// rows caches, for each of n inputs (tokens or positions), the input's
// embedding row times W_Q (D), W_K (D) and, per head h, W_V[:, head h]
// W_O[head h, :] (H*D), computed on first use.
type rows struct {
	q, k, vo []float64
	done     []bool
}

func newRows(n, d, heads int) rows {
	return rows{q: make([]float64, n*d), k: make([]float64, n*d), vo: make([]float64, n*heads*d), done: make([]bool, n)}
}

// Sampler returns a sampler holding a copy of the current parameters. With
// Prompt, start each sequence with ResetPrompt or ResetAt.
func (tr *Transformer) Sampler() *TransformerSampler {
	cfg := tr.cfg
	v, d, c, hd := cfg.Vocab, cfg.Dim, cfg.Context, cfg.Heads
	s := &TransformerSampler{cfg: cfg, v: v, d: d, heads: hd,
		emb: cloneValue(tr.emb.Value().Data()), wq: cloneValue(tr.wq.Value().Data()),
		wk: cloneValue(tr.wk.Value().Data()), wv: cloneValue(tr.wv.Value().Data()),
		wo: cloneValue(tr.wo.Value().Data()), unemb: cloneValue(tr.unemb.Value().Data()),
		tok: newRows(v, d, hd), keys: make([]float64, c*d), vals: make([]float64, c*hd*d),
		pkey: make([]float64, d), pval: make([]float64, hd*d),
		q: make([]float64, d), h: make([]float64, d), tmp: make([]float64, d),
		scores: make([]float64, c+1), attn: make([]float64, c+1), logp: make([]float64, 0, cfg.maxRow()), lse: make([]float64, 1),
		offsets: make([]int, 2)}
	if tr.pos != nil {
		s.pos = cloneValue(tr.pos.Value().Data())
		s.at = newRows(c, d, hd)
	}
	if tr.lnGain != nil {
		s.lnGain, s.lnBias = cloneValue(tr.lnGain.Value().Data()), cloneValue(tr.lnBias.Value().Data())
	}
	return s
}

func cloneValue(data any) []float64 { return slices.Clone(data.([]float64)) }

// fill computes row i of r from the embedding row e.
func (s *TransformerSampler) fill(r rows, i int, e []float64) {
	if r.done[i] {
		return
	}
	d := s.d
	vecMat(r.q[i*d:(i+1)*d], e, s.wq)
	vecMat(r.k[i*d:(i+1)*d], e, s.wk)
	vecMat(s.tmp, e, s.wv)
	dh := d / s.heads
	for hd := 0; hd < s.heads; hd++ {
		lo, hi := hd*dh, (hd+1)*dh
		vecMat(r.vo[(i*s.heads+hd)*d:(i*s.heads+hd+1)*d], s.tmp[lo:hi], s.wo[lo*d:hi*d])
	}
	r.done[i] = true
}

// Reset empties the sequence: the next Push is at position 0, without a
// prompt (with Prompt, Push then fails until ResetPrompt or ResetAt).
func (s *TransformerSampler) Reset() { s.n, s.start, s.prompt = 0, 0, false }

// ResetPrompt empties the sequence and starts a new one at position 0 with
// prompt token x (the config must have Prompt).
func (s *TransformerSampler) ResetPrompt(x int) error { return s.ResetAt(0, x) }

// ResetAt empties the sequence and starts a new one whose next Push is at
// absolute position start >= 0 (as Window.Start), with prompt token prompt
// in [0, Vocab) when the config has Prompt (ignored otherwise: pass -1).
// The prompt's key and value are cached for the whole sequence.
func (s *TransformerSampler) ResetAt(start, prompt int) error {
	if start < 0 {
		return fmt.Errorf("nn: transformer sampler: start %d: want >= 0", start)
	}
	s.n, s.start, s.prompt = 0, start, false
	if !s.cfg.Prompt {
		return nil
	}
	if prompt < 0 || prompt >= s.v {
		return fmt.Errorf("nn: transformer sampler: prompt %d: want in [0, %d)", prompt, s.v)
	}
	d, hd := s.d, s.heads
	s.fill(s.tok, prompt, s.emb[prompt*d:(prompt+1)*d]) // no positional embedding
	copy(s.pkey, s.tok.k[prompt*d:(prompt+1)*d])
	copy(s.pval, s.tok.vo[prompt*hd*d:(prompt+1)*hd*d])
	s.prompt = true
	return nil
}

// Len returns the number of tokens pushed since the last reset.
func (s *TransformerSampler) Len() int { return s.n }

// Push appends token x (after the first token, x must be in the support row
// of the previous one; the prompt is not a transition) and returns log pi(a
// | sequence) for the next token a, one value per entry of
// Support.Row(x), in row order. The returned slice is reused by the next
// Push.
func (s *TransformerSampler) Push(x int) ([]float64, error) {
	if x < 0 || x >= s.v {
		return nil, fmt.Errorf("nn: transformer sampler: token %d: want in [0, %d)", x, s.v)
	}
	if s.cfg.Prompt && !s.prompt {
		return nil, fmt.Errorf("nn: transformer sampler: no prompt: want ResetPrompt or ResetAt before Push")
	}
	if s.n > 0 && s.cfg.Support.Entry(s.last, x) < 0 {
		return nil, fmt.Errorf("nn: transformer sampler: transition %d -> %d: not in the support", s.last, x)
	}
	d, c, hd := s.d, s.cfg.Context, s.heads
	slot := s.n % c
	s.fill(s.tok, x, s.emb[x*d:(x+1)*d])
	copy(s.h, s.emb[x*d:(x+1)*d]) // the residual stream starts at h0
	copy(s.q, s.tok.q[x*d:(x+1)*d])
	key := s.keys[slot*d : (slot+1)*d]
	copy(key, s.tok.k[x*d:(x+1)*d])
	val := s.vals[slot*hd*d : (slot+1)*hd*d]
	copy(val, s.tok.vo[x*hd*d:(x+1)*hd*d])
	if s.pos != nil {
		ps := (s.start + s.n) % c
		s.fill(s.at, ps, s.pos[ps*d:(ps+1)*d])
		addTo(s.h, s.pos[ps*d:(ps+1)*d])
		addTo(s.q, s.at.q[ps*d:(ps+1)*d])
		addTo(key, s.at.k[ps*d:(ps+1)*d])
		addTo(val, s.at.vo[ps*hd*d:(ps+1)*hd*d])
	}

	// Attention over the prompt, when there is one, and positions first..n
	// (at most Context of them), head by head: score i < lead is the
	// prompt's. Values are already through W_O, so each head adds its
	// weighted values to the residual stream directly.
	first := max(0, s.n-c+1)
	nk := s.n - first + 1
	lead := 0
	if s.prompt {
		lead = 1
	}
	keyOf := func(i int) []float64 {
		if i < lead {
			return s.pkey
		}
		return s.keys[((first+i-lead)%c)*d:]
	}
	valOf := func(i, h int) []float64 {
		if i < lead {
			return s.pval[h*d : (h+1)*d]
		}
		sl := (first + i - lead) % c
		return s.vals[(sl*hd+h)*d : (sl*hd+h+1)*d]
	}
	dh := d / hd
	scale := 1 / math.Sqrt(float64(dh))
	s.attn = s.attn[:lead+nk]
	clear(s.attn)
	for h := 0; h < hd; h++ {
		lo, hi := h*dh, (h+1)*dh
		sc := s.scores[:lead+nk]
		m := math.Inf(-1)
		for i := range sc {
			k := keyOf(i)
			dot := 0.0
			for j := lo; j < hi; j++ {
				dot += s.q[j] * k[j]
			}
			sc[i] = dot * scale
			m = max(m, sc[i])
		}
		sum := 0.0
		for i, v := range sc {
			sc[i] = math.Exp(v - m)
			sum += sc[i]
		}
		for i, a := range sc {
			a /= sum
			s.attn[i] += a / float64(hd)
			for j, v := range valOf(i, h) {
				s.h[j] += a * v
			}
		}
	}

	if s.lnGain != nil {
		layerNormVec(s.h, s.lnGain, s.lnBias)
	}
	row := s.cfg.Support.Row(x)
	s.logp = s.logp[:len(row)]
	for j, a := range row {
		l := 0.0
		for i, hv := range s.h {
			l += hv * s.unemb[i*s.v+a]
		}
		s.logp[j] = l
	}
	s.offsets[1] = len(row)
	segmentLogSoftmaxForward(s.logp, s.logp, s.offsets, s.lse)
	s.n++
	s.last = x
	return s.logp, nil
}

// Attention returns the attention weights of the last Push, averaged over
// the heads: the prompt's first when there is one, then the window's
// positions from the oldest to the current token (last). The slice is
// reused by the next Push.
func (s *TransformerSampler) Attention() []float64 { return s.attn }

// addTo adds x to dst element by element.
func addTo(dst, x []float64) {
	for i, v := range x {
		dst[i] += v
	}
}

// Sample draws the next token from the distribution the last Push
// returned; it needs at least one Push.
func (s *TransformerSampler) Sample(rng *rand.Rand) (int, error) {
	if s.n == 0 {
		return 0, fmt.Errorf("nn: transformer sampler: sample before any token")
	}
	row := s.cfg.Support.Row(s.last)
	u := rng.Float64()
	for j, lp := range s.logp {
		u -= math.Exp(lp)
		if u < 0 {
			return row[j], nil
		}
	}
	return row[len(row)-1], nil // rounding: the last entry takes the remainder
}

// vecMat writes out = x W for a row vector x (n) and a row-major W (n, m),
// len(out) = m.
func vecMat(out, x, w []float64) {
	m := len(out)
	clear(out)
	for i, xv := range x {
		if xv == 0 {
			continue
		}
		for j, wv := range w[i*m : (i+1)*m] {
			out[j] += xv * wv
		}
	}
}
