package figures

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot/vg"
)

// maxDepthPanels is the most depths ABCD draws, evenly spread from 1 to K.
const maxDepthPanels = 15

// ABCD draws Figure 4: a_j, b_j, c_j and d_j against training steps, one
// panel per depth j (at most maxDepthPanels of them, evenly spread), so
// that depths can be told apart; the title adds the largest difference
// between depths at any step. rows are abcd.csv's: step, depth, a, b, c,
// d (NaN: a depth never visited). lines are drawn in every panel.
// Nothing is written when there is no row.
func ABCD(path, title string, rows [][]float64, lines ...Theory) error {
	k := 0
	for _, r := range rows {
		k = max(k, int(r[1]))
	}
	if k == 0 {
		return nil
	}
	names := []string{"a_j: forward at R_j^+", "b_j: backtrack at R_j^-", "c_j: forward at L_j^+", "d_j: backtrack at L_j^-"}
	depths := spread(k, maxDepthPanels)
	var panels []Panel
	for _, j := range depths {
		pn := Panel{Title: fmt.Sprintf("depth j = %d", j), YMin: 0, YMax: 1.02, XTicks: 4, Lines: lines}
		for q := range 4 {
			s := Series{Name: names[q], Color: Color(q), Dashed: q == 1 || q == 3}
			for _, r := range rows {
				if int(r[1]) == j && finite(r[2+q]) {
					s.X, s.Y = append(s.X, r[0]), append(s.Y, r[2+q])
				}
			}
			pn.Series = append(pn.Series, s)
		}
		panels = append(panels, pn)
	}
	cols := min(len(panels), int(math.Ceil(math.Sqrt(1.5*float64(len(panels))))))
	for i := range panels {
		if i%cols == 0 {
			panels[i].YLabel = "probability"
		}
		if i >= len(panels)-cols {
			panels[i].XLabel = "training step"
		}
	}
	spreads := depthSpread(rows)
	var parts []string
	for q, s := range spreads {
		parts = append(parts, fmt.Sprintf("%c %.2g", 'a'+q, s))
	}
	shown := ""
	if len(depths) < k {
		shown = fmt.Sprintf(", %d of %d depths shown", len(depths), k)
	}
	return Figure{Title: fmt.Sprintf("%s\nlargest difference between depths at any step: %s%s", title, strings.Join(parts, ", "), shown),
		Cols: cols, PanelW: 3 * vg.Inch, PanelH: 2.4 * vg.Inch, Panels: panels}.Save(path)
}

// spread picks at most n of 1..k, evenly spread, with 1 and k.
func spread(k, n int) []int {
	if k <= n {
		out := make([]int, k)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1 + int(math.Round(float64(i*(k-1))/float64(n-1)))
	}
	return out
}

// depthSpread is, for a, b, c and d, the largest difference between two
// depths at the same step.
func depthSpread(rows [][]float64) [4]float64 {
	type span struct{ lo, hi float64 }
	at := map[[2]float64]span{}
	var out [4]float64
	for _, r := range rows {
		for q := range 4 {
			v := r[2+q]
			if !finite(v) {
				continue
			}
			key := [2]float64{r[0], float64(q)}
			s, ok := at[key]
			if !ok {
				s = span{v, v}
			}
			s.lo, s.hi = math.Min(s.lo, v), math.Max(s.hi, v)
			at[key] = s
			out[q] = math.Max(out[q], s.hi-s.lo)
		}
	}
	return out
}
