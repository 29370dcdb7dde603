package nn

import (
	"fmt"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// TransformerSnapshot holds what samplers need of one set of a
// Transformer's parameter values, precomputed once: per token x the record
// [E[x] | E[x] W_Q | E[x] W_K | E[x] W_V[:, head h] W_O[head h, :] for each
// head h] (V, (3+H) D), the same per position residue for P, the output
// embeddings (V, D), token a's in row a, the per-entry logits B (NNZ)
// and the layer norm's gain and bias. Where a support row's next tokens
// are consecutive (all but a few rows of the task's graphs) their output
// embeddings are one block, and the row's logits one Dots. The first
// layer is linear in h0 = E[x] + P[c], so a token's record at a position
// is the sum of two rows, and a sampler's Push costs O(Context*D + R*D).
//
// The records are those of the training graph's attention op
// (kernels.WeightsAll), prefixed by h0.
//
// A snapshot is read-only once built: the samplers of any number of
// goroutines share it (Sampler, one per goroutine). It does not follow
// later updates of the parameters: take a new one after a step.
type TransformerSnapshot struct {
	cfg            TransformerConfig
	d, heads, w    int // width, heads, record width (3+H) D
	hs             kernels.Heads
	tok            []float64 // (V, W) token records
	pos            []float64 // (C, W) position records, nil without positions
	unemb          []float64 // (V, D) output embeddings, row a token a's (an eighth of one per support entry at the paper's size: it stays nearer the core)
	runs           []bool    // (V) whether row x's next tokens are consecutive
	bias           []float64 // (NNZ) per-entry logit B (zeros with Init "identity")
	lnGain, lnBias []float64 // (D) each, nil without LayerNorm
}

// Snapshot computes the sampling tables of the current parameter values.
func (tr *Transformer) Snapshot() *TransformerSnapshot {
	cfg := tr.cfg
	v, d, hd, c := cfg.Vocab, cfg.Dim, cfg.Heads, cfg.Context
	w := (3 + hd) * d
	sn := &TransformerSnapshot{cfg: cfg, d: d, heads: hd, w: w, hs: kernels.NewHeads(d, hd)}
	pw := w - d // (D, W-D): [W_Q | W_K | W_V W_O per head]
	proj := kernels.WeightsAll(make([]float64, d*pw), floatsOf(tr.wq), floatsOf(tr.wk), floatsOf(tr.wv), floatsOf(tr.wo), d, hd)
	records := func(emb []float64, rows int) []float64 {
		rec := make([]float64, rows*w)
		for x := 0; x < rows; x++ {
			copy(rec[x*w:x*w+d], emb[x*d:(x+1)*d])
		}
		kernels.Gemm(false, false, 1, kernels.Dense(emb, rows, d), kernels.Dense(proj, d, pw), 0, kernels.View(rec, d, rows, pw, w)) // (rows, D) x (D, W-D) -> (rows, W-D)
		return rec
	}
	sn.tok = records(floatsOf(tr.emb), v)
	if tr.pos != nil {
		sn.pos = records(floatsOf(tr.pos), c)
	}
	u, nnz := floatsOf(tr.unemb), cfg.Support.NNZ()
	sn.unemb, sn.bias = make([]float64, v*d), make([]float64, nnz)
	if tr.bias != nil { // U is (V, D), row a is token a's
		copy(sn.unemb, u)
	} else { // identity: U is (D, V), column a is token a's
		for a := range v {
			for i := range d {
				sn.unemb[a*d+i] = u[i*v+a]
			}
		}
	}
	sn.runs = make([]bool, v)
	for x := range v {
		row := cfg.Support.Row(x)
		sn.runs[x] = true
		for j := 1; j < len(row); j++ {
			if row[j] != row[0]+j {
				sn.runs[x] = false
			}
		}
	}
	if tr.bias != nil {
		copy(sn.bias, floatsOf(tr.bias))
	}
	if tr.lnGain != nil {
		sn.lnGain, sn.lnBias = slices.Clone(floatsOf(tr.lnGain)), slices.Clone(floatsOf(tr.lnBias))
	}
	return sn
}

// floatsOf returns the float64 values of a parameter node.
func floatsOf(n *G.Node) []float64 { return n.Value().Data().([]float64) }

// TransformerSampler computes a Transformer's next-token log-probabilities
// in plain Go for one growing sequence, from a TransformerSnapshot's
// tables and a ring cache of the keys and values (through W_O) of the
// last Context tokens (and, with Prompt, of the prompt, kept for the whole
// sequence). It builds no graph and allocates nothing per token: a Push
// is a few row additions, per head one matrix-vector product over the
// ring for the scores and one for the values, and one dot product per
// valid next token. Its log-probabilities equal the training graph's (to
// rounding).
//
// A sampler is for one goroutine; samplers of one snapshot share its
// tables.
type TransformerSampler struct {
	sn      *TransformerSnapshot
	ring    []float64 // (C, W) the records h | q | k | vo of the last Context tokens, the n-th pushed in row n mod C
	pkey    []float64 // (D) the prompt's key
	pval    []float64 // (H D) the prompt's values
	prompt  bool      // pkey and pval hold the current sequence's prompt
	start   int       // absolute position of the first token pushed
	n       int       // tokens pushed
	slot    int       // n mod Context: the ring row of the next push
	ps      int       // (start + n) mod Context: the next push's position residue
	last    int       // last token pushed
	weights []float64 // (H, C+1) the last Push's attention weights per head: the prompt's (when there is one), then ring rows 0..
	attn    []float64 // (C+1) Attention's average over heads, in key order
	logp    []float64 // (R) log-probs over Row(last)
	prob    []float64 // (R) probabilities over Row(last)
}

// Sampler returns a sampler reading the snapshot's tables. With Prompt,
// start each sequence with ResetPrompt or ResetAt.
func (sn *TransformerSnapshot) Sampler() *TransformerSampler {
	c, d, hd, r := sn.cfg.Context, sn.d, sn.heads, sn.cfg.maxRow()
	return &TransformerSampler{sn: sn, ring: make([]float64, c*sn.w), pkey: make([]float64, d), pval: make([]float64, hd*d),
		weights: make([]float64, hd*(c+1)), attn: make([]float64, c+1),
		logp: make([]float64, 0, r), prob: make([]float64, 0, r)}
}

// Sampler returns a sampler of the current parameters, on a snapshot of
// its own. Samplers on several goroutines should share one Snapshot.
func (tr *Transformer) Sampler() *TransformerSampler { return tr.Snapshot().Sampler() }

// Reset empties the sequence: the next Push is at position 0, without a
// prompt (with Prompt, Push then fails until ResetPrompt or ResetAt).
func (s *TransformerSampler) Reset() { s.n, s.start, s.prompt, s.slot, s.ps = 0, 0, false, 0, 0 }

// ResetPrompt empties the sequence and starts a new one at position 0 with
// prompt token x (the config must have Prompt).
func (s *TransformerSampler) ResetPrompt(x int) error { return s.ResetAt(0, x) }

// ResetAt empties the sequence and starts a new one whose next Push is at
// absolute position start >= 0 (as Window.Start), with prompt token prompt
// in [0, Vocab) when the config has Prompt (ignored otherwise: pass -1).
// The prompt's key and values are cached for the whole sequence.
func (s *TransformerSampler) ResetAt(start, prompt int) error {
	if start < 0 {
		return fmt.Errorf("nn: transformer sampler: start %d: want >= 0", start)
	}
	s.n, s.start, s.prompt, s.slot, s.ps = 0, start, false, 0, start%s.sn.cfg.Context
	sn := s.sn
	if !sn.cfg.Prompt {
		return nil
	}
	if prompt < 0 || prompt >= sn.cfg.Vocab {
		return fmt.Errorf("nn: transformer sampler: prompt %d: want in [0, %d)", prompt, sn.cfg.Vocab)
	}
	rec := sn.tok[prompt*sn.w : (prompt+1)*sn.w] // no positional embedding
	copy(s.pkey, rec[2*sn.d:3*sn.d])
	copy(s.pval, rec[3*sn.d:])
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
	sn := s.sn
	cfg := &sn.cfg
	if x < 0 || x >= cfg.Vocab {
		return nil, fmt.Errorf("nn: transformer sampler: token %d: want in [0, %d)", x, cfg.Vocab)
	}
	if cfg.Prompt && !s.prompt {
		return nil, fmt.Errorf("nn: transformer sampler: no prompt: want ResetPrompt or ResetAt before Push")
	}
	if s.n > 0 && cfg.Support.Entry(s.last, x) < 0 {
		return nil, fmt.Errorf("nn: transformer sampler: transition %d -> %d: not in the support", s.last, x)
	}
	d, c, w := sn.d, cfg.Context, sn.w
	slot := s.slot // n mod C and (start + n) mod C are counted, not divided: two divisions were 3% of a push
	rec, tok := s.ring[slot*w:(slot+1)*w], sn.tok[x*w:(x+1)*w]
	if sn.pos != nil { // the record of x at its position: token's + position's
		ps := s.ps
		kernels.AddTwo(rec, tok, sn.pos[ps*w:(ps+1)*w])
	} else {
		copy(rec, tok)
	}
	h, q := rec[:d], rec[d:2*d] // the residual stream starts at h0; later pushes read only k and vo

	// Attention over the prompt, when there is one, and the ring's rows
	// (the last min(n+1, Context) tokens), as the training graph's.
	var pk, pv []float64
	if s.prompt {
		pk, pv = s.pkey, s.pval
	}
	kernels.Attend(h, s.weights, c+1, q, s.ring[2*d:], s.ring[3*d:], w, min(s.n+1, c), sn.hs, pk, pv)

	if sn.lnGain != nil {
		kernels.LayerNorm(h, sn.lnGain, sn.lnBias)
	}
	lo, hi := cfg.Support.Offsets[x], cfg.Support.Offsets[x+1]
	s.logp, s.prob = s.logp[:hi-lo], s.prob[:hi-lo]
	switch next := cfg.Support.Next[lo:hi]; {
	case len(next) == 0:
	case sn.runs[x]:
		kernels.Dots(s.logp, h, sn.unemb[next[0]*d:], d)
	default: // one row at a time, the same sums
		for j, a := range next {
			kernels.Dots(s.logp[j:j+1], h, sn.unemb[a*d:], d)
		}
	}
	for e := lo; e < hi; e++ {
		s.logp[e-lo] += sn.bias[e]
	}
	kernels.LogSoftmax(s.logp, s.prob, s.logp)
	s.n++
	s.last = x
	if s.slot++; s.slot == c {
		s.slot = 0
	}
	if s.ps++; s.ps == c {
		s.ps = 0
	}
	return s.logp, nil
}

// Probs returns the probabilities of the last Push's row (the exponentials
// of the log-probabilities it returned, computed with them): drawing from
// them needs no exponential per token. The slice is reused by the next
// Push.
func (s *TransformerSampler) Probs() []float64 { return s.prob }

// Attention returns the attention weights of the last Push, averaged over
// the heads: the prompt's first when there is one, then the window's
// positions from the oldest to the current token (last). The slice is
// reused by the next call.
func (s *TransformerSampler) Attention() []float64 {
	if s.n == 0 {
		return s.attn[:0]
	}
	hd, c := s.sn.heads, s.sn.cfg.Context
	lead, rows := 0, min(s.n, c)
	if s.prompt {
		lead = 1
	}
	first := s.n - rows // the oldest token in the window, in ring row first mod C
	s.attn = s.attn[:lead+rows]
	clear(s.attn)
	for hh := 0; hh < hd; hh++ {
		wt, f := s.weights[hh*(c+1):], 1/float64(hd)
		if s.prompt {
			s.attn[0] += wt[0] * f
		}
		for i := 0; i < rows; i++ {
			s.attn[lead+i] += wt[lead+(first+i)%c] * f
		}
	}
	return s.attn
}

// Sample draws the next token from the distribution the last Push
// returned; it needs at least one Push. A draw past the last entry (the
// probabilities summing to slightly less than 1) takes the last entry of
// positive probability.
func (s *TransformerSampler) Sample(rng *rand.Rand) (int, error) {
	if s.n == 0 {
		return 0, fmt.Errorf("nn: transformer sampler: sample before any token")
	}
	row := s.sn.cfg.Support.Row(s.last)
	u := rng.Float64()
	for j, p := range s.prob {
		if u -= p; u < 0 {
			return row[j], nil
		}
	}
	j := len(s.prob) - 1
	for j > 0 && s.prob[j] == 0 {
		j--
	}
	return row[j], nil
}
