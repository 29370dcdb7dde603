package nn

// windowLayout is the integer side of a TransformerBatch: which token and
// position each slot holds, the batch's distinct tokens and the logit
// slots grouped by next token, rebuilt by
// SetWindows and read by the batch's fused ops (attention, unembedding)
// at every run. Its slices are reused from fill to fill.
//
// Key slots are the N = B*T token positions, row after row (slot b*T+t is
// token t of row b), then, with Prompt, the B prompts (slot N+b). Logit
// slots are R per token position (slot n*R+j is entry j of the support
// row of token n).
type windowLayout struct {
	b, t, r, ctx int
	prompt       bool
	support      Support

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

func newWindowLayout(s Support, b, t, r, ctx int, prompt bool) *windowLayout {
	n := b * t
	sl := n
	if prompt {
		sl += b
	}
	v := s.Rows()
	return &windowLayout{b: b, t: t, r: r, ctx: ctx, prompt: prompt, support: s,
		tok: make([]int, sl), pos: make([]int, sl), uidx: make([]int, sl),
		entries: make([]int, n*r), aoff: make([]int, v+1), taken: make([]int, n), lens: make([]int, b),
		cnt: make([]int, v+1)}
}

// n returns the number of token positions B*T.
func (l *windowLayout) n() int { return l.b * l.t }

// slots returns the number of key slots S (B*T, plus B with Prompt).
func (l *windowLayout) slots() int { return len(l.tok) }

// fill lays out rows (already validated; missing rows are empty) and
// rebuilds the groupings.
func (l *windowLayout) fill(rows []Window) {
	s, n, r := l.support, l.n(), l.r
	for b := 0; b < l.b; b++ {
		w := Window{Prompt: 0} // a missing row: prompt 0, no tokens
		if b < len(rows) {
			w = rows[b]
		}
		seq := w.Tokens
		l.lens[b] = len(seq)
		if l.prompt {
			l.tok[n+b], l.pos[n+b] = w.Prompt, -1
		}
		for t := 0; t < l.t; t++ {
			p := b*l.t + t
			x := 0 // padding: token 0, never seen by real positions (causal mask)
			if t < len(seq) {
				x = seq[t]
			}
			l.tok[p], l.pos[p] = x, (w.Start+t)%l.ctx
			lo, hi := s.Offsets[x], s.Offsets[x+1]
			for j := 0; j < r; j++ {
				e := lo + j
				if e >= hi {
					e = -1
				}
				l.entries[p*r+j] = e
			}
			l.taken[p] = p * r
			if t+1 < len(seq) {
				l.taken[p] += s.Entry(x, seq[t+1]) - lo
			}
		}
	}
	l.groupTokens()
	l.groupNext()
}

// groupTokens lists the distinct tokens of the key slots and indexes
// each slot's token among them.
func (l *windowLayout) groupTokens() {
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
func (l *windowLayout) groupNext() {
	off, next := l.aoff, l.support.Next
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
	l.aslot = grow(l.aslot, valid)
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
