package reproduce

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/figures"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// fig7 is the transformer comparison (Appendix F, the transformer figure):
// the bigram, the transformer and the transformer with a target prompt,
// all from the same pretrained bigram, trained by the same PPO (fork
// baseline) with the same budget (steps, rollouts per step) and seed; each
// learner keeps its
// tuned learning rate (Adam 0.05 for the bigram, 0.003 for the
// transformer, which diverges at 0.01). It writes learners.csv,
// hitting_time.png and learners.md.
func (r *reproducer) fig7(dir string) (string, string, error) {
	k, l := r.sized(3, 2), r.sized(2, 1)
	steps := r.sized(300, 100)
	learners := []struct {
		name, model string
		prompt      bool
	}{{"bigram", "bigram", false}, {"transformer", "transformer", false}, {"transformer + target prompt", "transformer", true}}
	var lines []figures.Series
	var table, csv strings.Builder
	table.WriteString("| learner | final hitting time | steps to within 5% of the limit | wall seconds to within 5% | attention leaving the current token | attention on the prompt |\n| --- | --- | --- | --- | --- | --- |\n")
	csv.WriteString("learner,step,hitting_time,hitting_time_ci95,wall_seconds\n")
	var sums []experiment.Summary
	limit := 0.0
	for _, ln := range learners {
		rc := experiment.DefaultConfig()
		rc.Graph = graphConfig(k, k, l)
		rc.Model = trainers.Model(ln.model)
		rc.Train.Trainer, rc.Train.Rollouts = trainers.PPO, 64
		if ln.model != "bigram" {
			o := trainers.DefaultTransformerOptions()
			o.Prompt = ln.prompt
			rc.Transformer = &o
		}
		rc.Train.Steps, rc.Train.Until, rc.Train.LogEvery = steps, 0, 10
		// Both learners with the fork baseline: with the state baseline the
		// bigram ends at 40.9 (64 rollouts, 300 steps).
		rc.Train.Baseline = "fork"
		sub := filepath.Join(dir, strings.NewReplacer(" + ", "-", " ", "-").Replace(ln.name))
		s, err := r.trainEntry(sub, rc)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", ln.name, err)
		}
		sums = append(sums, s)
		limit = experiment.Value(s.LimitHittingTime)
		m, err := experiment.ReadMetrics(sub)
		if err != nil {
			return "", "", err
		}
		rows := m.Rows
		st, h, ci, wall := m.Index("step"), m.Index("hitting_time"), m.Index("hitting_time_ci95"), m.Index("wall_seconds")
		sr := figures.Series{Name: ln.name}
		reachStep, reachWall := math.NaN(), math.NaN()
		for _, row := range rows {
			sr.X, sr.Y = append(sr.X, row[st]), append(sr.Y, row[h])
			fmt.Fprintf(&csv, "%s,%g,%g,%s,%g\n", ln.name, row[st], row[h], experiment.FormatExact(row[ci]), row[wall])
			if math.IsNaN(reachStep) && row[h] <= 1.05*limit {
				reachStep, reachWall = row[st], row[wall]
			}
		}
		lines = append(lines, sr)
		final := fmt.Sprintf("%.4g (exact)", experiment.Value(s.FinalHittingTime))
		off, prompt := "-", "-"
		if s.FinalCI95 != nil {
			final = fmt.Sprintf("%.4g ± %.2g (Monte Carlo, %d rollouts)", experiment.Value(s.FinalHittingTime), *s.FinalCI95, rc.Transformer.EvalRollouts)
		}
		if a := s.Attention; a != nil {
			off = fmt.Sprintf("%.3f", a.OffCurrent)
			if ln.prompt {
				prompt = fmt.Sprintf("%.3f", a.OnPrompt)
			}
		}
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %s |\n", ln.name, final, experiment.FormatNumber(reachStep), experiment.FormatNumber(reachWall), off, prompt)
	}
	lines = append(lines, figures.Series{Name: "bigram's converged value (exact optimum)", X: []float64{0, float64(steps)}, Y: []float64{limit, limit}})
	if err := figures.Lines(filepath.Join(dir, "hitting_time.png"), fmt.Sprintf("PPO from the same pretrained bigram, W=K=%d, L=%d (transformer: Monte Carlo)", k, l),
		"step", "hitting time (transitions, log scale)", true, false, lines); err != nil {
		return "", "", err
	}
	for _, f := range []struct{ name, data string }{{"learners.csv", csv.String()}, {"learners.md", table.String()}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.data), 0o644); err != nil {
			return "", "", err
		}
	}
	bg, tf, tp := sums[0], sums[1], sums[2]
	ci := func(s experiment.Summary) float64 {
		if s.FinalCI95 == nil {
			return math.Inf(1) // some rollouts missed: no interval
		}
		return *s.FinalCI95
	}
	ok := experiment.Value(tf.FinalHittingTime) <= experiment.Value(bg.FinalHittingTime)+ci(tf) && experiment.Value(tp.FinalHittingTime) <= experiment.Value(bg.FinalHittingTime)+ci(tp) && !math.IsInf(ci(tf)+ci(tp), 1)
	m := fmt.Sprintf("W=K=%d, L=%d, PPO (fork baseline), %d steps of 64 rollouts, seed 1: bigram %.4g (exact; limit %s); transformer %.4g ± %.2g; with the target prompt %.4g ± %.2g (learners.md)",
		k, l, steps, experiment.Value(bg.FinalHittingTime), experiment.FormatNumber(limit), experiment.Value(tf.FinalHittingTime), ci(tf), experiment.Value(tp.FinalHittingTime), ci(tp))
	return m, yes(ok), nil
}
