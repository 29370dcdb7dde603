package eval

import (
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestSFTReturnTimeFromEntry pins a slip of Appendix D (and Section 5.3):
// "the time needed from entry of a wrong branch to getting back to the
// fork state is g_{K+1}". But g_i is counted from the leaf-incoming state
// L_{K+1}^+ (g_1 = 1 is the bounce), and under the SFT limit (a_j = c_j = 1)
// the entry f -> u_{1,l} takes 2K transitions to reach it: from the entry
// the return time is 2K + g_{K+1}. (SFTLimit and SFTLimitHetero already
// charge a wrong branch 2k + 1 + g_{k+1} from a fork-head state, so the
// slip does not reach the closed forms.) The exact solver's ReturnTime,
// the expected excursion from the entry to the fork-incoming state, says so.
func TestSFTReturnTimeFromEntry(t *testing.T) {
	for _, c := range []tasks.Config{
		{W: 2, K: 1, L: 1}, {W: 2, K: 2, L: 3}, {W: 3, K: 3, L: 2}, {W: 2, K: 5, L: 5}, {W: 2, K: 15, L: 5},
		{Branches: [][]int{{2, 5, 1}, {3}, {1, 1, 4, 2}}},
	} {
		g := graph(t, c)
		r := analyze(t, g, PolicySFTLimit(g))
		for j, b := range g.Branches {
			_, gs := sftRecursion(b.Multi)
			exit, k := gs[b.Depth()], float64(b.Depth())
			if got := r.ReturnTime[j]; relErr(got, 2*k+exit) > 1e-9 {
				t.Errorf("%s branch %d: return time from the entry %.12g, want 2k + g_{k+1} = %.12g (the paper's g_{k+1} = %.12g)",
					c.Name(), j+1, got, 2*k+exit, exit)
			}
		}
	}
}
