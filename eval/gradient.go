package eval

// CostWeights returns, for every valid transition (s, a) in CSR order, the
// constant
//
//	C(s, a) = E_x[ d_x(s) h_x(a) ]   (x uniform over the W targets)
//
// so that the surrogate S(Theta) = sum_{s,a} C(s,a) pi_Theta(a|s), with C
// held constant, has the same gradient as the hitting time H_f:
//
//	dS/dTheta_{s,a} = E_x[ d_x(s) pi(a|s) (h_x(a) - hbar_x(s)) ] = -dJ/dTheta_{s,a},
//
// the policy-gradient form of Lemma 'policygrad' (Appendix B) with beta = 1,
// J = 1 - H_f. Rows that are never trained (fork-incoming, leaf-incoming)
// get zero weights. The cost is linear in the number of transitions: d_x and
// h_x on a branch differ between targets only through the branch's entry
// count and the fork-level hitting time, so the sum over targets collapses
// to two per-branch constants.
//
// The returned slice is owned by the Analyzer and valid until its next call.
func (r *Analysis) CostWeights() []float64 {
	r.solveVisits()
	an, g := r.a, r.a.g
	W := g.W()
	if cap(an.weights) < len(g.Next) {
		an.weights = make([]float64, len(g.Next))
	}
	c := an.weights[:len(g.Next)]
	for i := range c {
		c[i] = 0
	}
	inv := 1 / float64(W)
	ntTime, tTime, tReturn := an.nt[colTime], an.t[colTime], an.t[colReturn]
	// Source row: d_x(s0 -> f) = 1 for every target.
	for n, a := range g.Row(0) {
		sum := 0.0
		for m := 1; m <= W; m++ {
			sum += r.H(m, a)
		}
		c[g.Offsets[0]+n] = sum * inv
	}
	consts := an.branchConsts[:0]
	for j, b := range g.Branches {
		// Off-target contributions: sum over m != j of N_j(m) and N_j(m) H_F(m).
		var entries, entriesFork float64
		for m := range W {
			if m != j {
				entries += r.Entries[m][j]
				entriesFork += r.Entries[m][j] * r.ForkTime[m]
			}
		}
		k := [4]float64{entries, entriesFork, r.Entries[j][j], r.ForkTime[j]}
		consts = append(consts, k)
		// A branch whose solves were copied from an earlier one (the same
		// shape and rows: Analyzer.same) has that branch's weights when its
		// four constants are the same too (a uniform source row), bit for
		// bit: the headline's 15 identical branches cost one.
		an.weightsFrom[j] = -1
		if rb := an.same[j]; rb >= 0 && consts[rb] == k && copySameWeights {
			br := g.Branches[rb]
			copy(c[g.Offsets[b.Start[0]]:g.Offsets[b.LeafIn()+2]], c[g.Offsets[br.Start[0]]:g.Offsets[br.LeafIn()+2]])
			an.weightsFrom[j] = rb
			continue
		}
		onTarget, hf := k[2], k[3]
		for s := b.Start[0]; s < b.LeafIn()+2; s++ {
			if !g.Trained(s) {
				continue
			}
			vNT, vT := an.ntVisits[s]*inv, an.tVisits[s]*onTarget*inv
			for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
				a := g.Next[i]
				c[i] = vNT*(entries*ntTime[a]+entriesFork) +
					vT*(tTime[a]+tReturn[a]*hf)
			}
		}
	}
	an.branchConsts = consts
	return c
}

// WeightsCopiedFrom is, after CostWeights, the earlier branch whose
// probability rows (from the branch's entry state to its leaf) and cost
// weights branch j's equal bit for bit, or -1: a caller may copy what it
// computes from them.
func (r *Analysis) WeightsCopiedFrom(j int) int { return r.a.weightsFrom[j] }

// copySameWeights lets CostWeights copy the weights of a branch identical
// to an earlier one (tests turn it off to compare).
var copySameWeights = true
