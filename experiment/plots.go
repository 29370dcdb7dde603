package experiment

import (
	"fmt"
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
		return figures.InvalidMass(filepath.Join(dir, "invalid_mass.png"),
			"Pretraining from zero logits learns the world model's mask (Theorem 1), graph "+s.Graph,
			steps, m.Column("invalid_mass"), m.Column("bound_ratio"))
	}
	curve := "exact hitting time"
	if s.FinalSuccessRate != nil {
		curve = "Monte Carlo hitting time"
	}
	var h0, limit figures.Theory
	if s.Theory.H0 > 0 {
		h0 = figures.Theory{Y: s.Theory.H0, Label: "H_0 = " + num(s.Theory.H0) + " (pretrained, Appendix B)"}
	}
	if l := Value(s.LimitHittingTime); l > 0 {
		limit = figures.Theory{Y: l, Label: "limit " + num(l) + " (converged backtracking; 4 sum k = " + num(s.Theory.RLVRLeading) + ")"}
		if s.Trainer.Supervises() {
			limit.Label = "SFT limit " + num(l)
		}
	}
	if err := figures.Hitting(filepath.Join(dir, "hitting_time.png"), fmt.Sprintf("Hitting time under %s training, graph %s", s.Trainer, s.Graph),
		curve, steps, m.Column("hitting_time"), h0, limit); err != nil {
		return err
	}
	if s.Attention != nil {
		if err := WriteAttention(dir, s.Graph, s.Steps, *s.Attention); err != nil {
			return err
		}
	}
	a, err := ReadMetrics(filepath.Join(dir, "abcd.csv"))
	if os.IsNotExist(err) {
		return nil // no a/b/c/d: a Monte Carlo model
	}
	if err != nil {
		return err
	}
	return figures.ABCD(filepath.Join(dir, "abcd.png"),
		fmt.Sprintf("a, b, c, d per depth under %s training, graph %s (every depth overlaid)", s.Trainer, s.Graph), a.Rows)
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
