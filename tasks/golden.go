package tasks

import (
	"fmt"
	"math/rand/v2"
)

// GoldenPath is the shortest path (as states) from s0 -> f to the leaf of
// target branch t (1-based), crossing diamond j by multiedge multi[j]
// (1-based). It has 2k+2 states, ending at the leaf-incoming state.
func (g *Graph) GoldenPath(t int, multi []int) ([]int, error) {
	if t < 1 || t > g.W() {
		return nil, fmt.Errorf("tasks: target %d: want a branch in [1, %d]", t, g.W())
	}
	b := g.Branches[t-1]
	if len(multi) != b.Depth() {
		return nil, fmt.Errorf("tasks: golden path to t%d: %d multiedge choices for %d diamonds", t, len(multi), b.Depth())
	}
	path := make([]int, 0, b.Groups()+1)
	path = append(path, 0)
	for grp := 0; grp < b.Groups(); grp++ {
		e := 0
		if grp%2 == 1 {
			m := multi[(grp-1)/2]
			if m < 1 || m > b.M(grp) {
				return nil, fmt.Errorf("tasks: golden path to t%d: multiedge %d of diamond %d: want 1 to %d", t, m, (grp+1)/2, b.M(grp))
			}
			e = m - 1
		}
		path = append(path, b.Fwd(grp, e))
	}
	return path, nil
}

// RandomGoldenPath draws a golden path to target t with every diamond's
// multiedge uniform (the paper's fully supported D_x).
func (g *Graph) RandomGoldenPath(t int, rng *rand.Rand) ([]int, error) {
	if t < 1 || t > g.W() {
		return nil, fmt.Errorf("tasks: target %d: want a branch in [1, %d]", t, g.W())
	}
	b := g.Branches[t-1]
	multi := make([]int, b.Depth())
	for j, m := range b.Multi {
		multi[j] = 1 + rng.IntN(m)
	}
	return g.GoldenPath(t, multi)
}

// Transition is a weighted (state, next state) pair.
type Transition struct {
	From, To int
	Weight   float64
}

// GoldenTransitions is the expected number of times each transition occurs
// in one golden path to target t drawn with uniform multiedges: the
// population SFT data of Theorem 2 for that target.
func (g *Graph) GoldenTransitions(t int) ([]Transition, error) {
	if t < 1 || t > g.W() {
		return nil, fmt.Errorf("tasks: target %d: want a branch in [1, %d]", t, g.W())
	}
	b := g.Branches[t-1]
	// Layer by layer: every state of the previous group (with its
	// probability) moves to every state of the next (uniform over its m).
	prev := []int{0}
	prevP := []float64{1}
	var out []Transition
	for grp := 0; grp < b.Groups(); grp++ {
		m := b.M(grp)
		cur := make([]int, m)
		curP := make([]float64, m)
		for e := 0; e < m; e++ {
			cur[e], curP[e] = b.Fwd(grp, e), 1/float64(m)
		}
		for i, s := range prev {
			for e, a := range cur {
				out = append(out, Transition{From: s, To: a, Weight: prevP[i] * curP[e]})
			}
		}
		prev, prevP = cur, curP
	}
	return out, nil
}

// Desired lists the paper's desired next states of s (Section 4.1): the
// forward connector at R_j^+ (a_j), the backward multiedges at R_j^- (b_j),
// the forward multiedges at L_j^+ (c_j), the backward connector at L_j^-
// (d_j), the bounce at the leaf. The source and fork-incoming states have
// none.
func (g *Graph) Desired(s int) []int {
	lo, hi := g.DesiredRange(s)
	out := make([]int, 0, hi-lo)
	for a := lo; a < hi; a++ {
		out = append(out, a)
	}
	return out
}

// DesiredRange is Desired as the id range [lo, hi): the desired next
// states of a state are one edge group's forward or backward states, which
// are numbered contiguously. It is empty for the source and fork-incoming
// states.
func (g *Graph) DesiredRange(s int) (lo, hi int) {
	st := g.States[s]
	if st.Class == Source || st.Class == ForkIn {
		return 0, 0
	}
	b := g.Branches[st.Branch-1]
	var grp int
	var fwd bool
	switch st.Class {
	case RPlus, LPlus: // keep going forward: the next group's forward states
		grp, fwd = st.Group+1, true
	case RMinus, LMinus: // keep going backward: the previous group's backward states
		grp, fwd = st.Group-1, false
	case LeafIn:
		grp, fwd = st.Group, false
	}
	if fwd {
		return b.Fwd(grp, 0), b.Fwd(grp, 0) + b.M(grp)
	}
	return b.Bwd(grp, 0), b.Bwd(grp, 0) + b.M(grp)
}
