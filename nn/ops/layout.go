package ops

import "github.com/rlvr-backtrack/backtrack/nn/kernels"

// MaskLogit is the large finite negative number a masked logit takes
// before the max-shifted log-softmax: exp(MaskLogit - max) underflows to
// exactly 0, so masked entries get probability exactly 0 while no -Inf
// enters arithmetic. Unmasked logits must stay far above it (|value| < 1e8
// keeps them exact).
const MaskLogit = -1e9

// Layout is the integer side of a transformer batch of B rows of T
// tokens: which token and position each slot holds, the batch's distinct
// tokens and the logit slots grouped by next token. The model fills it
// (Fill) before each run of its graph, and the Attention and Unembed ops
// read it at every run. Its slices are reused from fill to fill.
//
// Key slots are the N = B*T token positions, row after row (slot b*T+t is
// token t of row b), then, with a prompt, the B prompts (slot N+b). Logit
// slots are R per token position (slot n*R+j is entry j of the support
// row of token n, masked past the row's end).
type Layout struct {
	b, t, r, ctx  int
	prompt        bool
	offsets, next []int // the support: row x allows next[offsets[x]:offsets[x+1]]

	tok []int // (S) token of each key slot
	pos []int // (S) position residue (Start+t) mod Context of each key slot; -1 for prompts

	uniq []int // the distinct tokens of the key slots, ascending
	uidx []int // (S) the index in uniq of each key slot's token

	entries []int // (N*R) support entry of each logit slot, -1 when masked
	// The unmasked logit slots grouped by next token a:
	// aslot[aoff[a]:aoff[a+1]].
	aoff, aslot []int
	taken       []int // (N) logit slot of the token taken after each position
	lens        []int // (B) tokens in each row

	cnt []int // scratch of counting sorts
}

// NewLayout returns the layout of b rows of t tokens over the support
// (offsets, next) of rows offsets[x]..offsets[x+1] into next, with r logit
// slots per position (at least the longest row), a window of ctx
// positions and, with prompt, one prompt per row.
func NewLayout(offsets, next []int, b, t, r, ctx int, prompt bool) *Layout {
	n := b * t
	sl := n
	if prompt {
		sl += b
	}
	v := len(offsets) - 1
	return &Layout{b: b, t: t, r: r, ctx: ctx, prompt: prompt, offsets: offsets, next: next,
		tok: make([]int, sl), pos: make([]int, sl), uidx: make([]int, sl),
		entries: make([]int, n*r), aoff: make([]int, v+1), taken: make([]int, n), lens: make([]int, b),
		cnt: make([]int, v+1)}
}

// N returns the number of token positions B*T.
func (l *Layout) N() int { return l.b * l.t }

// Width returns R, the logit slots per position.
func (l *Layout) Width() int { return l.r }

// slots returns the number of key slots S (B*T, plus B with a prompt).
func (l *Layout) slots() int { return len(l.tok) }

// Entries returns the support entry of each logit slot, -1 for a masked
// one, as of the last Fill. Do not modify it.
func (l *Layout) Entries() []int { return l.entries }

// Taken returns the logit slot of the token taken after each position (the
// position's first slot where there is none), as of the last Fill. Do not
// modify it.
func (l *Layout) Taken() []int { return l.taken }

// Len returns the number of tokens in row b as of the last Fill.
func (l *Layout) Len(b int) int { return l.lens[b] }

// entry returns the entry index of the transition x -> a, or -1.
func (l *Layout) entry(x, a int) int {
	for e := l.offsets[x]; e < l.offsets[x+1]; e++ {
		if l.next[e] == a {
			return e
		}
	}
	return -1
}

// Fill lays out rows rows (already validated: tokens in the vocabulary,
// each transition in the support, at most T tokens), row b given by
// row(b) as its prompt, the absolute position of its first token and its
// tokens; rows from rows to B are empty. It rebuilds the groupings.
func (l *Layout) Fill(rows int, row func(b int) (prompt, start int, tokens []int)) {
	n, r := l.N(), l.r
	for b := 0; b < l.b; b++ {
		prompt, start, seq := 0, 0, []int(nil) // a missing row: prompt 0, no tokens
		if b < rows {
			prompt, start, seq = row(b)
		}
		l.lens[b] = len(seq)
		if l.prompt {
			l.tok[n+b], l.pos[n+b] = prompt, -1
		}
		for t := 0; t < l.t; t++ {
			p := b*l.t + t
			x := 0 // padding: token 0, never seen by real positions (causal mask)
			if t < len(seq) {
				x = seq[t]
			}
			l.tok[p], l.pos[p] = x, (start+t)%l.ctx
			lo, hi := l.offsets[x], l.offsets[x+1]
			for j := 0; j < r; j++ {
				e := lo + j
				if e >= hi {
					e = -1
				}
				l.entries[p*r+j] = e
			}
			l.taken[p] = p * r
			if t+1 < len(seq) {
				l.taken[p] += l.entry(x, seq[t+1]) - lo
			}
		}
	}
	l.groupTokens()
	l.groupNext()
}

// groupTokens lists the distinct tokens of the key slots and indexes
// each slot's token among them.
func (l *Layout) groupTokens() {
	idx := l.cnt[:len(l.cnt)-1] // (V): -1, or the index in uniq of a present token
	for i := range idx {
		idx[i] = -1
	}
	for _, x := range l.tok {
		idx[x] = 0
	}
	l.uniq = l.uniq[:0]
	for x, c := range idx {
		if c == 0 {
			idx[x] = len(l.uniq)
			l.uniq = append(l.uniq, x)
		}
	}
	for s, x := range l.tok {
		l.uidx[s] = idx[x]
	}
}

// groupNext sorts the unmasked logit slots by next token.
func (l *Layout) groupNext() {
	off, next := l.aoff, l.next
	clear(off)
	valid := 0
	for _, e := range l.entries {
		if e >= 0 {
			off[next[e]+1]++
			valid++
		}
	}
	for a := 0; a+1 < len(off); a++ {
		off[a+1] += off[a]
	}
	l.aslot = kernels.Grow(l.aslot, valid)
	for sl, e := range l.entries {
		if e >= 0 {
			a := next[e]
			l.aslot[off[a]] = sl
			off[a]++
		}
	}
	for a := len(off) - 1; a > 0; a-- {
		off[a] = off[a-1]
	}
	off[0] = 0
}

// Indices is a Layout as the index and mask vectors a graph of stock
// gorgonia ops gathers with (package stock): key slots row by row with
// each row's prompt first, L = T+1 slots a row with a prompt and T
// without.
type Indices struct {
	Tokens    []int     // (B*L) the token of each key slot
	Positions []int     // (B*L) the position residue of each key slot; Context (a zero row) for a prompt
	Keep      []int     // (N) the key slot of each token position
	SlotPos   []int     // (N*R) the token position of each logit slot
	SlotNext  []int     // (N*R) the next token of each logit slot, 0 when masked
	SlotEntry []int     // (N*R) the support entry of each logit slot, 0 when masked
	Valid     []float64 // (N*R) 1 on an unmasked slot, 0 on a masked one
	Mask      []float64 // (N*R) 0 on an unmasked slot, MaskLogit on a masked one
}

// Indices returns the layout of the last Fill as index and mask vectors,
// written into in's slices (reused when large enough).
func (l *Layout) Indices(in *Indices) {
	n, r, rowL, first := l.N(), l.r, l.t, 0
	if l.prompt {
		rowL, first = l.t+1, 1
	}
	in.Tokens, in.Positions, in.Keep = kernels.Grow(in.Tokens, l.b*rowL), kernels.Grow(in.Positions, l.b*rowL), kernels.Grow(in.Keep, n)
	for b := 0; b < l.b; b++ {
		if l.prompt {
			in.Tokens[b*rowL], in.Positions[b*rowL] = l.tok[n+b], l.ctx
		}
		for t := 0; t < l.t; t++ {
			k, p := b*rowL+first+t, b*l.t+t
			in.Tokens[k], in.Positions[k], in.Keep[p] = l.tok[p], l.pos[p], k
		}
	}
	in.SlotPos, in.SlotNext, in.SlotEntry = kernels.Grow(in.SlotPos, n*r), kernels.Grow(in.SlotNext, n*r), kernels.Grow(in.SlotEntry, n*r)
	in.Valid, in.Mask = kernels.Grow(in.Valid, n*r), kernels.Grow(in.Mask, n*r)
	for s, e := range l.entries {
		in.SlotPos[s] = s / r
		if e < 0 {
			in.SlotNext[s], in.SlotEntry[s], in.Valid[s], in.Mask[s] = 0, 0, 0, MaskLogit
			continue
		}
		in.SlotNext[s], in.SlotEntry[s], in.Valid[s], in.Mask[s] = l.next[e], e, 1, 0
	}
}
