package trainers

// A transformer's loss is summed over the tokens of a batch of sequences,
// but its graph has a fixed shape (rows of T tokens). Attention sees only
// the last Context positions (and the prompt), so a token's next-token
// distribution depends on the Context tokens up to it, its absolute
// position and the prompt only. A long sequence is therefore cut into
// windows (nn.Window): window k trains the positions [k S, (k+1) S) (S,
// the stride) and holds the tokens from max(0, k S - Context) to (k+1) S,
// the Context tokens before its first trained position and the one after
// its last (the token taken there), at their absolute positions: the
// windows' log-probabilities are the whole sequence's.

// window is one row of a transformer batch: tokens seq[from:to+1] of
// sequence seq (from its absolute position from), training positions
// [train, to) of it.
type window struct {
	seq             int // index of the sequence in the batch
	from, train, to int // absolute positions in the sequence
}

// cutWindows cuts sequences of the given lengths (in tokens; a sequence of
// n tokens has n-1 taken transitions, at positions 0..n-2) into windows of
// stride s after ctx tokens of left context.
func cutWindows(lens []int, s, ctx int) []window {
	var out []window
	for i, n := range lens {
		for start := 0; start < n-1; start += s {
			out = append(out, window{seq: i, from: max(0, start-ctx), train: start, to: min(start+s, n-1)})
		}
	}
	return out
}

// rowLen is the longest window: ctx tokens of context, s trained positions
// and the token taken at the last.
func rowLen(s, ctx int) int { return ctx + s + 1 }
