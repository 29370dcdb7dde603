package reproduce

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/figures"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"gonum.org/v1/plot/vg"
)

// fig8 is the heterogeneous figure with both settings of the source row
// side by side: frozen (the default), exact RLVR reaches the optimum with
// the deep branch's entry turning back sometimes; trained, it enters the
// shallowest branch first and ends at that setting's optimum. Both lie
// below the uniform-entry limit and the paper's 4 sum_i k_i.
func (r *reproducer) fig8(dir string) (string, string, error) {
	var lines []figures.Series
	var parts []string
	ok := true
	var th eval.Predictions
	for _, source := range []bool{false, true} {
		rc := experiment.DefaultConfig()
		rc.Graph = tasks.Config{Branches: [][]int{{2, 2, 3}, {5, 1}, {4, 4, 4, 4}}}
		rc.Train.TrainSource = source
		name := map[bool]string{false: "source-frozen", true: "source-trained"}[source]
		sub := filepath.Join(dir, name)
		s, err := r.trainEntry(sub, rc)
		if err != nil {
			return "", "", err
		}
		b, err := experiment.LoadBigram(sub, nil)
		if err != nil {
			return "", "", err
		}
		m, err := experiment.ReadMetrics(sub)
		if err != nil {
			return "", "", err
		}
		lines = append(lines, figures.Series{Name: "exact RLVR, " + strings.ReplaceAll(name, "-", " "), X: m.Column("step"), Y: m.Column("hitting_time")})
		th = s.Theory
		g := b.Graph
		entry := make([]float64, g.W())
		for i, br := range g.Branches {
			lo, hi := g.DesiredRange(br.Entry())
			for n, a := range g.Row(br.Entry()) {
				if a >= lo && a < hi {
					entry[i] += b.Probs[g.Offsets[br.Entry()]+n]
				}
			}
		}
		parts = append(parts, fmt.Sprintf("source %s: -> %.6g (exact optimum %.6g: source %s, entries %s; trained: source %s, entries %s)",
			map[bool]string{false: "frozen", true: "trained"}[source], experiment.Value(s.FinalHittingTime), th.RLVROptimum,
			experiment.FormatProbs(th.RLVROptimumSource), experiment.FormatProbs(th.RLVROptimumEntry), experiment.FormatProbs(b.Probs[:g.W()]), experiment.FormatProbs(entry)))
		ok = ok && s.Converged && th.Certified
	}
	var refs []figures.Theory
	for _, h := range []struct {
		name string
		y    float64
	}{{"the paper's 4 sum k", th.RLVRLeading}, {"uniform-entry limit (a=b=c=d=1)", th.RLVRLimit},
		{"exact optimum, source frozen", th.RLVROptimumSourceFrozen}, {"exact optimum, source trained", th.RLVROptimumSourceTrained}} {
		refs = append(refs, figures.Theory{Y: h.y, Label: fmt.Sprintf("%s = %.6g", h.name, h.y)})
	}
	// The right panel zooms on the end, where the four lines lie within 15%.
	lo, hi := math.Floor(th.RLVROptimumSourceTrained)-1, math.Ceil(th.RLVRLeading)+3
	end := 0.0
	for _, sr := range lines {
		end = math.Max(end, sr.X[len(sr.X)-1])
	}
	start := end
	for _, sr := range lines {
		for i := len(sr.Y) - 1; i >= 0 && sr.Y[i] <= hi; i-- {
			start = math.Min(start, sr.X[i])
		}
	}
	err := figures.Figure{Title: "Exact RLVR on branches 2,2,3;5,1;4,4,4,4, source row frozen and trained", PanelW: 5.5 * vg.Inch, PanelH: 4.5 * vg.Inch,
		Panels: []figures.Panel{{Title: "whole run", XLabel: "step", YLabel: "exact hitting time (log scale)", LogY: true, Series: lines, Lines: refs},
			{Title: "zoom on the end", XLabel: "step", YLabel: "exact hitting time", Series: lines, Lines: refs, YMin: lo, YMax: hi, XMin: start, XMax: end}}}.Save(filepath.Join(dir, "hitting_time.png"))
	if err != nil {
		return "", "", err
	}
	m := fmt.Sprintf("2,2,3;5,1;4,4,4,4: %s; uniform-entry limit %s; 4 sum k %s", strings.Join(parts, "; "),
		experiment.FormatNumber(th.RLVRLimit), experiment.FormatNumber(th.RLVRLeading))
	return m, map[bool]string{true: "imprecise", false: "no"}[ok], nil
}
