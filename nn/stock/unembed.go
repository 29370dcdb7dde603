package stock

import (
	G "gorgonia.org/gorgonia"
)

// Unembed returns ops.Unembed's log-probabilities (N*R) of the rows of h
// (N, D): the logit of slot s, of position slotPos[s] and next token
// slotNext[s], is h[slotPos[s]] . u[slotNext[s]] (u (V, D), row a token
// a's output embedding), plus bias[slotEntry[s]] when bias (a table of
// per-entry logits) is not nil; the masked slots are replaced as
// MaskedLogSoftmax says and the log-softmax taken over each position's r
// slots. Only the slots' logits are computed: nothing (N, V).
func Unembed(h, u, bias, slotPos, slotNext, slotEntry, valid, mask *G.Node, n, r int) (out *G.Node, err error) {
	defer recoverGraph("unembedding", &err)
	hs := G.Must(Gather(h, slotPos))                      // (N, D) -> (N*R, D)
	us := G.Must(Gather(u, slotNext))                     // (V, D) -> (N*R, D)
	z := G.Must(G.Sum(G.Must(G.HadamardProd(hs, us)), 1)) // (N*R, D) -> (N*R)
	if bias != nil {
		z = G.Must(G.Add(z, G.Must(Gather(bias, slotEntry)))) // (N*R) + (N*R) -> (N*R)
	}
	return MaskedLogSoftmax(z, valid, mask, n, r)
}

// TableLogSoftmax returns ops.TableLogSoftmax's log-probabilities (N*R):
// slot s's logit is table[slotEntry[s]] + offsets[s] (offsets a constant
// input), the masked slots replaced as MaskedLogSoftmax says, the
// log-softmax taken over each token's r slots.
func TableLogSoftmax(table, slotEntry, offsets, valid, mask *G.Node, n, r int) (out *G.Node, err error) {
	defer recoverGraph("table log-softmax", &err)
	z := G.Must(G.Add(G.Must(Gather(table, slotEntry)), offsets)) // (P) -> (N*R)
	return MaskedLogSoftmax(z, valid, mask, n, r)
}
