package trainers

import (
	"math"
	"math/rand/v2"
	"slices"
)

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
// [train, to) of it, whose loss weights are multiplied by weight (1, or
// the inverse sampling rate of subsample).
type window struct {
	seq             int // index of the sequence in the batch
	from, train, to int // absolute positions in the sequence
	weight          float64
}

// cutWindows cuts sequences of the given lengths (in tokens; a sequence of
// n tokens has n-1 taken transitions, at positions 0..n-2) into windows of
// stride s after ctx tokens of left context.
func cutWindows(lens []int, s, ctx int) []window {
	var out []window
	for i, n := range lens {
		for start := 0; start < n-1; start += s {
			out = append(out, window{seq: i, from: max(0, start-ctx), train: start, to: min(start+s, n-1), weight: 1})
		}
	}
	return out
}

// subsample keeps n of the N windows, a uniform random subset drawn
// without replacement with rng, n chosen so that they hold about budget
// trained positions (budget over the mean window's), and weights each kept
// window by N/n. Every window is kept with probability n/N, so the
// weighted loss of the subset is an unbiased estimate of the full loss, and
// so is its gradient. With budget <= 0, or when the windows hold no more
// than budget positions, it returns them all, unweighted.
func subsample(wins []window, budget int, rng *rand.Rand) []window {
	total := 0
	for _, w := range wins {
		total += w.to - w.train
	}
	if budget <= 0 || total <= budget {
		return wins
	}
	mean := float64(total) / float64(len(wins))
	n := min(len(wins), int(math.Ceil(float64(budget)/mean)))
	perm := rng.Perm(len(wins))[:n]
	slices.Sort(perm) // keep the windows in order: the graph fills are deterministic
	out := make([]window, n)
	for k, i := range perm {
		out[k] = wins[i]
		out[k].weight = float64(len(wins)) / float64(n)
	}
	return out
}

// rowLen is the longest window: ctx tokens of context, s trained positions
// and the token taken at the last.
func rowLen(s, ctx int) int { return ctx + s + 1 }
