package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/figures"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// num prints a hitting time: exact integers as such, others to 10 digits.
func num(x float64) string {
	if x == float64(int64(x)) && x < 1e15 {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'g', 10, 64)
}

// writePlots draws hitting_time.png (Figure 3) and abcd.png (Figure 4), or
// invalid_mass.png for pretraining, from the run folder's CSV files.
func writePlots(dir string, s Summary) error {
	m, err := ReadMetrics(dir)
	if err != nil {
		return err
	}
	steps := m.Column("step")
	if s.Trainer.Dense() {
		return figures.Figure{Title: "Pretraining from zero logits learns the world model's mask (Theorem 1), graph " + s.Graph,
			Panels: []figures.Panel{{XLabel: "training step", YLabel: "max over states (log scale)", LogY: true,
				Series: []figures.Series{{Name: "mass on invalid transitions 1 - p_s(t)", X: steps, Y: m.Column("invalid_mass")},
					{Name: "its ratio to Theorem 1's bound n_s/(m_s + t)", X: steps, Y: m.Column("bound_ratio"), Dashed: true}},
				Lines: []figures.Theory{{Y: 1, Label: "Theorem 1: the ratio stays at or below 1"}}}}}.Save(filepath.Join(dir, "invalid_mass.png"))
	}
	var lines []figures.Theory
	if s.Theory.H0 > 0 {
		lines = append(lines, figures.Theory{Y: s.Theory.H0, Label: fmt.Sprintf("H_0 = %.6g (pretrained, Appendix B)", s.Theory.H0)})
	}
	if l := Value(s.LimitHittingTime); l > 0 {
		label := fmt.Sprintf("limit %.6g (converged backtracking; 4 sum k = %.6g)", l, s.Theory.RLVRLeading)
		switch {
		case s.Trainer.Supervises():
			label = fmt.Sprintf("SFT limit %.6g", l)
		case s.Trainer == trainers.Distill:
			label = fmt.Sprintf("the teacher's hitting time %.6g (RLVR limit %.6g)", l, s.Theory.RLVRLimit)
		}
		lines = append(lines, figures.Theory{Y: l, Label: label})
	}
	err = figures.Figure{Title: fmt.Sprintf("Hitting time under %s training, %s, graph %s", s.Trainer, s.Model, s.Graph),
		Panels: []figures.Panel{{XLabel: "training step", YLabel: "hitting time H_f (transitions, log scale)", LogY: true,
			Series: []figures.Series{HittingSeries(m)}, Lines: lines}}}.Save(filepath.Join(dir, "hitting_time.png"))
	if err != nil {
		return err
	}
	if s.Attention != nil {
		if err := WriteAttention(dir, s.Graph, s.Steps, *s.Attention); err != nil {
			return err
		}
	}
	a, err := ReadMetrics(filepath.Join(dir, abcdFile))
	if os.IsNotExist(err) {
		return nil // no a/b/c/d: a Monte Carlo model
	}
	if err != nil {
		return err
	}
	return figures.ABCD(filepath.Join(dir, "abcd.png"),
		fmt.Sprintf("a, b, c, d per depth under %s training, graph %s", s.Trainer, s.Graph), a.Rows)
}

// HittingSeries is metrics.csv's hitting time against the step, named
// for what it is: exact, or Monte Carlo with its 95% interval where every
// evaluation rollout hit and a lower bound where some missed.
func HittingSeries(m *Metrics) figures.Series {
	s := figures.Series{Name: "exact hitting time", X: m.Column("step"), Y: m.Column("hitting_time")}
	ci, rate := m.Column("hitting_time_ci95"), m.Column("mc_success_rate")
	for i := range rate {
		if math.IsNaN(rate[i]) {
			continue // an exact row
		}
		if s.Lo == nil {
			s.Name = "Monte Carlo hitting time, 95% interval"
			s.Lo, s.Hi, s.Lower = make([]float64, len(s.Y)), make([]float64, len(s.Y)), make([]bool, len(s.Y))
			for j := range s.Lo {
				s.Lo[j], s.Hi[j] = math.NaN(), math.NaN()
			}
		}
		s.Lower[i] = rate[i] < 1
		if !s.Lower[i] && i < len(ci) && !math.IsNaN(ci[i]) {
			s.Lo[i], s.Hi[i] = s.Y[i]-ci[i], s.Y[i]+ci[i]
		}
	}
	return s
}

// AttentionFile is a transformer run folder's attention heat map.
const AttentionFile = "attention.png"

// WriteAttention draws a transformer's attention along its rollouts
// (trainers.AttentionStats) as the heat map dir/attention.png.
func WriteAttention(dir, graph string, step int, a trainers.AttentionStats) error {
	return figures.Attention(filepath.Join(dir, AttentionFile),
		fmt.Sprintf("Mean attention at step %d, graph %s (%d positions)", step, graph, a.Positions),
		a.ByDistance, a.PromptByPosition, a.Counts)
}

// RedrawAttention draws a run folder's heat map from outside its run (train
// eval -checkpoint), under the folder's lock: when a run holds it (training
// there now, and drawing its own at its end) nothing is written and the
// error names the holder.
func RedrawAttention(dir, graph string, step int, a trainers.AttentionStats) error {
	unlock, err := lockFolder(dir)
	if err != nil {
		return err
	}
	defer unlock()
	return WriteAttention(dir, graph, step, a)
}

// FormatNumber prints a hitting time: exact integers as such, others to 10
// significant digits.
func FormatNumber(x float64) string { return num(x) }

// FormatExact prints a float exactly (shortest round-trip form); NaN, a
// value that does not apply, is empty.
func FormatExact(x float64) string { return f64(x) }

// FormatProbs prints probabilities to 4 significant digits, space-separated.
func FormatProbs(p []float64) string {
	parts := make([]string, len(p))
	for i, x := range p {
		parts[i] = strconv.FormatFloat(x, 'g', 4, 64)
	}
	return strings.Join(parts, " ")
}
