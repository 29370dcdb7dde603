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
// whole sequence): each Push costs O(D^2 + Context*D + R*D) (projections,
// attention, the R logits of the current row), independent of the sequence
// length, and builds no graph.
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
	keys    []float64 // (C, D) ring: the n-th token pushed in slot n mod C
	vals    []float64 // (C, D) ring
	pkey    []float64 // (D) key of the prompt
	pval    []float64 // (D) value of the prompt
	prompt  bool      // pkey and pval hold the current sequence's prompt
	start   int       // absolute position of the first token pushed
	n       int       // tokens pushed
	last    int       // last token pushed
	h0, q   []float64 // (D) scratch
	cat, h  []float64 // (D) scratch
	scores  []float64 // (C+1) scratch
	logp    []float64 // (R) log-probs over Row(last)
	lse     []float64 // (1) scratch for segmentLogSoftmaxForward
	offsets []int     // {0, len(row)}
}

// Sampler returns a sampler holding a copy of the current parameters. With
// Prompt, start each sequence with ResetPrompt or ResetAt.
func (tr *Transformer) Sampler() *TransformerSampler {
	cfg := tr.cfg
	v, d, c := cfg.Vocab, cfg.Dim, cfg.Context
	s := &TransformerSampler{cfg: cfg, v: v, d: d, heads: cfg.Heads,
		emb: cloneValue(tr.emb.Value().Data()), wq: cloneValue(tr.wq.Value().Data()),
		wk: cloneValue(tr.wk.Value().Data()), wv: cloneValue(tr.wv.Value().Data()),
		wo: cloneValue(tr.wo.Value().Data()), unemb: cloneValue(tr.unemb.Value().Data()),
		keys: make([]float64, c*d), vals: make([]float64, c*d), pkey: make([]float64, d), pval: make([]float64, d),
		h0: make([]float64, d), q: make([]float64, d), cat: make([]float64, d), h: make([]float64, d),
		scores: make([]float64, c+1), logp: make([]float64, 0, cfg.maxRow()), lse: make([]float64, 1),
		offsets: make([]int, 2)}
	if tr.pos != nil {
		s.pos = cloneValue(tr.pos.Value().Data())
	}
	return s
}

func cloneValue(data any) []float64 { return slices.Clone(data.([]float64)) }

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
	e := s.emb[prompt*s.d : (prompt+1)*s.d] // no positional embedding
	vecMat(s.pkey, e, s.wk)
	vecMat(s.pval, e, s.wv)
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
	d, c := s.d, s.cfg.Context
	slot := s.n % c
	copy(s.h0, s.emb[x*d:(x+1)*d])
	if s.pos != nil {
		ps := (s.start + s.n) % c
		for i, p := range s.pos[ps*d : (ps+1)*d] {
			s.h0[i] += p
		}
	}
	vecMat(s.q, s.h0, s.wq)
	vecMat(s.keys[slot*d:(slot+1)*d], s.h0, s.wk)
	vecMat(s.vals[slot*d:(slot+1)*d], s.h0, s.wv)

	// Attention over the prompt, when there is one, and positions first..n
	// (at most Context of them), head by head: score i < lead is the
	// prompt's.
	first := max(0, s.n-c+1)
	nk := s.n - first + 1
	lead := 0
	if s.prompt {
		lead = 1
	}
	key := func(i int) []float64 {
		if i < lead {
			return s.pkey
		}
		return s.keys[((first+i-lead)%c)*d:]
	}
	val := func(i int) []float64 {
		if i < lead {
			return s.pval
		}
		return s.vals[((first+i-lead)%c)*d:]
	}
	dh := d / s.heads
	scale := 1 / math.Sqrt(float64(dh))
	clear(s.cat)
	for hd := 0; hd < s.heads; hd++ {
		lo, hi := hd*dh, (hd+1)*dh
		sc := s.scores[:lead+nk]
		m := math.Inf(-1)
		for i := range sc {
			k := key(i)
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
		out := s.cat[lo:hi]
		for i, a := range sc {
			vv := val(i)
			a /= sum
			for j := range out {
				out[j] += a * vv[lo+j]
			}
		}
	}
	vecMat(s.h, s.cat, s.wo)
	for i, v := range s.h0 {
		s.h[i] += v
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
