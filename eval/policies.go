package eval

import (
	"fmt"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Policies that can be built directly from probabilities, by name.
var PolicyNames = []string{"pretrained", "sft-limit", "rlvr-limit"}

// Named builds one of PolicyNames on graph g.
func Named(g *tasks.Graph, name string) ([]float64, error) {
	switch name {
	case "pretrained":
		return PolicyPretrained(g), nil
	case "sft-limit":
		return PolicySFTLimit(g), nil
	case "rlvr-limit":
		return PolicyRLVRLimit(g), nil
	}
	return nil, fmt.Errorf("eval: policy %q: want pretrained, sft-limit or rlvr-limit", name)
}

// PolicyPretrained is the uniform world model: every valid next state equally
// likely (Section 3.2, Assumption 'exact_pretrain').
func PolicyPretrained(g *tasks.Graph) []float64 {
	p := make([]float64, len(g.Next))
	for s := range g.States {
		lo, hi := g.Offsets[s], g.Offsets[s+1]
		for i := lo; i < hi; i++ {
			p[i] = 1 / float64(hi-lo)
		}
	}
	return p
}

// ABCDFunc gives the desired-transition probabilities of depth j on branch i.
type ABCDFunc func(branch, depth int) (a, b, c, d float64)

// PolicyFromABCD builds the policy with the given per-depth probabilities of the
// desired transitions (Section 4.1): the desired mass is split equally over
// the desired next states, the rest equally over the others. The source and
// fork-incoming rows are uniform; the leaf bounces.
func PolicyFromABCD(g *tasks.Graph, f ABCDFunc) []float64 {
	p := PolicyPretrained(g)
	for s, st := range g.States {
		var want float64
		switch st.Class {
		case tasks.RPlus:
			want, _, _, _ = f(st.Branch, st.Depth)
		case tasks.RMinus:
			_, want, _, _ = f(st.Branch, st.Depth)
		case tasks.LPlus:
			_, _, want, _ = f(st.Branch, st.Depth)
		case tasks.LMinus:
			_, _, _, want = f(st.Branch, st.Depth)
		default:
			continue
		}
		setDesired(g, p, s, want)
	}
	return p
}

// setDesired puts total mass want on the desired next states of s.
func setDesired(g *tasks.Graph, p []float64, s int, want float64) {
	lo, hi := g.DesiredRange(s)
	row := g.Row(s)
	nd, nu := float64(hi-lo), float64(len(row)-(hi-lo))
	for i, a := range row {
		if a >= lo && a < hi {
			p[g.Offsets[s]+i] = want / nd
		} else {
			p[g.Offsets[s]+i] = (1 - want) / nu
		}
	}
}

// PolicySFTLimit is the limit of SFT on golden paths (Theorem 2): forward states
// go forward surely (a_j = c_j = 1) while backward states keep their
// pretrained rows (b_j = L/(L+1), d_j = 1/(L+1) with L the diamond's
// multiedges).
func PolicySFTLimit(g *tasks.Graph) []float64 {
	p := PolicyPretrained(g)
	for s, st := range g.States {
		if st.Class == tasks.RPlus || st.Class == tasks.LPlus {
			setDesired(g, p, s, 1)
		}
	}
	return p
}

// PolicySFTLimitSupervised is the limit of SFT that also supervises the
// given backward states (Appendix F): those states backtrack surely, the
// other backward states keep their pretrained rows.
func PolicySFTLimitSupervised(g *tasks.Graph, supervised []int) []float64 {
	p := PolicySFTLimit(g)
	for _, s := range supervised {
		setDesired(g, p, s, 1)
	}
	return p
}

// PolicyRLVRLimit is the converged RLVR policy (Theorem 3): a_j = b_j = c_j = d_j = 1.
func PolicyRLVRLimit(g *tasks.Graph) []float64 {
	return PolicyFromABCD(g, func(int, int) (float64, float64, float64, float64) { return 1, 1, 1, 1 })
}

// ABCDRow holds the desired-transition probabilities of one depth of one
// branch. For multiedge states (R_j^+, L_j^-) it is the mean over the
// diamond's multiedges.
type ABCDRow struct {
	Branch int     `json:"branch"`
	Depth  int     `json:"depth"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	C      float64 `json:"c"`
	D      float64 `json:"d"`
}

// ABCDTable reads a_j, b_j, c_j, d_j per branch and depth from a policy:
// for multiedge states, the plain mean over the diamond's copies, visited
// or not (Analysis.VisitABCD weights them by visits instead).
func ABCDTable(g *tasks.Graph, probs []float64) []ABCDRow {
	var out []ABCDRow
	for i, b := range g.Branches {
		rows := make([]ABCDRow, b.Depth())
		counts := make([][4]int, b.Depth())
		for j := range rows {
			rows[j].Branch, rows[j].Depth = i+1, j+1
		}
		lo, hi := b.Start[0], b.LeafIn()+2
		for s := lo; s < hi; s++ {
			st := g.States[s]
			k, ok := abcdKind(st.Class)
			if !ok {
				continue
			}
			*rows[st.Depth-1].at(k) += desiredMass(g, probs, s)
			counts[st.Depth-1][k]++
		}
		for j := range rows {
			for k := range 4 {
				*rows[j].at(k) /= float64(counts[j][k])
			}
		}
		out = append(out, rows...)
	}
	return out
}

// at is the k-th of A, B, C, D (abcdKind's order).
func (r *ABCDRow) at(k int) *float64 { return [4]*float64{&r.A, &r.B, &r.C, &r.D}[k] }

// abcdKind is the index in (a, b, c, d) of the desired-transition
// probability of a state of class c: R^+ 0, R^- 1, L^+ 2, L^- 3; false for
// the source, fork-incoming and leaf-incoming states.
func abcdKind(c tasks.Class) (int, bool) {
	switch c {
	case tasks.RPlus:
		return 0, true
	case tasks.RMinus:
		return 1, true
	case tasks.LPlus:
		return 2, true
	case tasks.LMinus:
		return 3, true
	}
	return 0, false
}

// desiredMass is the probability that policy probs puts on the desired
// next states of s (tasks.Graph.DesiredRange).
func desiredMass(g *tasks.Graph, probs []float64, s int) float64 {
	mass := 0.0
	lo, hi := g.DesiredRange(s)
	for n, a := range g.Row(s) {
		if a >= lo && a < hi {
			mass += probs[g.Offsets[s]+n]
		}
	}
	return mass
}
