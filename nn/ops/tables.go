package ops

import (
	"slices"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
)

// tokenTables keeps the attention's token records T_E[x] = E[x] W_all
// (V, W) from one run of the graph to the next while the parameters do not
// change, as when the gradient of a batch too large for one graph is
// accumulated over several fills (Step.Accumulate): a run computes only
// the records of the tokens no earlier run has computed since the last
// change. A change is found by comparing the parameters with copies of
// their values (O(V D + D^2) per run, against O(U D W) for the records of
// U tokens), so updates by a solver, SetParamValues or a test's finite
// differences are always seen.
type tokenTables struct {
	full  []float64   // (V, W) records, row x current when stamp[x] == gen
	stamp []uint64    // (V) the generation each row was computed in
	gen   uint64      // generation of the parameter values in saved (0: none yet)
	saved [][]float64 // copies of the parameters the current generation was computed from

	miss       []int     // tokens to compute in this run
	eMiss, out []float64 // (M, D) their embedding rows, (M, W) their records
}

// refresh compares params (E first) with the saved copies and starts a
// new generation when they differ (or on first use); it reports whether
// it did, in which case every derived table must be recomputed.
func (c *tokenTables) refresh(params [][]float64, v, w int) bool {
	same := c.gen > 0 && len(c.saved) == len(params)
	for i := 0; same && i < len(params); i++ {
		same = slices.Equal(c.saved[i], params[i])
	}
	if same {
		return false
	}
	c.saved = kernels.Grow(c.saved, len(params))
	for i, p := range params {
		c.saved[i] = append(c.saved[i][:0], p...)
	}
	c.full, c.stamp = kernels.Grow(c.full, v*w), kernels.Grow(c.stamp, v)
	c.gen++
	return true
}

// fill computes the records of the tokens of toks (distinct) that are not
// current, from the embeddings e (V, D) and wAll (D, W).
func (c *tokenTables) fill(toks []int, e, wAll []float64, d, w int) {
	c.miss = c.miss[:0]
	for _, x := range toks {
		if c.stamp[x] != c.gen {
			c.miss = append(c.miss, x)
		}
	}
	m := len(c.miss)
	if m == 0 {
		return
	}
	c.eMiss, c.out = kernels.Grow(c.eMiss, m*d), kernels.Grow(c.out, m*w)
	for i, x := range c.miss {
		copy(c.eMiss[i*d:(i+1)*d], e[x*d:(x+1)*d])
	}
	kernels.Gemm(false, false, 1, kernels.Dense(c.eMiss, m, d), kernels.Dense(wAll, d, w), 0, kernels.Dense(c.out, m, w)) // (M, D) x (D, W) -> (M, W)
	for i, x := range c.miss {
		copy(c.full[x*w:(x+1)*w], c.out[i*w:(i+1)*w])
		c.stamp[x] = c.gen
	}
}

// row returns the record of token x (current after fill).
func (c *tokenTables) row(x, w int) []float64 { return c.full[x*w : (x+1)*w] }
