package eval

import (
	"encoding/json"
	"math"
)

// MarshalJSON writes a row with null for a quantity that is NaN (a group
// without visits), which encoding/json would otherwise refuse.
func (r ABCDRow) MarshalJSON() ([]byte, error) {
	num := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		Branch int      `json:"branch"`
		Depth  int      `json:"depth"`
		A      *float64 `json:"a"`
		B      *float64 `json:"b"`
		C      *float64 `json:"c"`
		D      *float64 `json:"d"`
	}{r.Branch, r.Depth, num(r.A), num(r.B), num(r.C), num(r.D)})
}

// VisitABCD reads a_j, b_j, c_j, d_j along the policy's own paths, as the
// paper means them (the probability of the desired move at the states the
// walk is in): per branch and depth, each state's desired mass weighted by
// its expected visits E_x[d_x(s)] (x uniform over the targets; D). A copy
// of a multiedge state the policy never enters weighs nothing, where
// ABCDTable's plain mean over copies counts it like any other. mean pools
// every branch and depth the same way (its Branch and Depth are 0), and
// depths pools the branches depth by depth (Branch 0). A group without
// visits reads NaN; encoding/json refuses NaN, so callers that write JSON
// must map it.
func (r *Analysis) VisitABCD() (rows, depths []ABCDRow, mean ABCDRow) {
	r.solveVisits()
	g := r.a.g
	W := g.W()
	var total, totalMass [4]float64
	var depthWeight [][4]float64
	for i, b := range g.Branches {
		weight := make([][4]float64, b.Depth())
		part := make([]ABCDRow, b.Depth())
		// sum_m d_m(s) = (sum_{m != j} N_m(j)) nt(s) + N_j(j) t(s) on branch j
		// (D), unless s hits j.
		off, on := 0.0, r.Entries[i][i]
		for m := range W {
			if m != i {
				off += r.Entries[m][i]
			}
		}
		for s := b.Start[0]; s < b.LeafIn()+2; s++ {
			st := g.States[s]
			k, ok := abcdKind(st.Class)
			if !ok {
				continue
			}
			v := off * r.a.ntVisits[s]
			if !g.Hits(s, i+1) {
				v += on * r.a.tVisits[s]
			}
			v /= float64(W)
			wm := v * desiredMass(g, r.probs, s)
			weight[st.Depth-1][k] += v
			*part[st.Depth-1].at(k) += wm
			total[k] += v
			totalMass[k] += wm
			for len(depths) < st.Depth {
				depths = append(depths, ABCDRow{Depth: len(depths) + 1})
				depthWeight = append(depthWeight, [4]float64{})
			}
			depthWeight[st.Depth-1][k] += v
			*depths[st.Depth-1].at(k) += wm
		}
		for j := range part {
			part[j].Branch, part[j].Depth = i+1, j+1
			for k := range 4 {
				*part[j].at(k) = ratio(*part[j].at(k), weight[j][k])
			}
		}
		rows = append(rows, part...)
	}
	for j := range depths {
		for k := range 4 {
			*depths[j].at(k) = ratio(*depths[j].at(k), depthWeight[j][k])
		}
	}
	for k := range 4 {
		*mean.at(k) = ratio(totalMass[k], total[k])
	}
	return rows, depths, mean
}

// ratio is num/den, NaN when den is 0.
func ratio(num, den float64) float64 {
	if den == 0 {
		return math.NaN()
	}
	return num / den
}

// PerCopyMeans pools an ABCDTable (plain means over every multiedge copy,
// visited or not) over branches, depth by depth (Branch 0), and then over
// depths, each depth counting once (mean: Branch and Depth 0).
func PerCopyMeans(rows []ABCDRow) (depths []ABCDRow, mean ABCDRow) {
	var count []float64
	for _, r := range rows {
		for len(depths) < r.Depth {
			depths = append(depths, ABCDRow{Depth: len(depths) + 1})
			count = append(count, 0)
		}
		o := &depths[r.Depth-1]
		o.A, o.B, o.C, o.D = o.A+r.A, o.B+r.B, o.C+r.C, o.D+r.D
		count[r.Depth-1]++
	}
	for i := range depths {
		o := &depths[i]
		o.A, o.B, o.C, o.D = o.A/count[i], o.B/count[i], o.C/count[i], o.D/count[i]
		mean.A, mean.B, mean.C, mean.D = mean.A+o.A, mean.B+o.B, mean.C+o.C, mean.D+o.D
	}
	n := float64(len(depths))
	mean.A, mean.B, mean.C, mean.D = mean.A/n, mean.B/n, mean.C/n, mean.D/n
	return depths, mean
}
