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

// fig7 is the transformer comparison (Appendix F, the transformer figure)
// at the paper's size, W=K=15, L=5 (-quick: W=K=3, L=2): the bigram and
// the transformer, both from the same pretrained bigram, trained by the
// same PPO (the transformer's defaults: 128 rollouts, fork baseline,
// horizon factor 20, seed 1) until their hitting time is within 5% of the
// limit (the transformer's with its whole 95% interval) or the step cap;
// the bigram learns at the transformer's table rate (Adam 0.025), the
// transformer's attention and embeddings at Adam 3e-4. -quick adds the
// transformer with a target prompt and runs a fixed 100 steps. It writes
// learners.csv, hitting_time.png and learners.md.
func (r *reproducer) fig7(dir string) (string, string, error) {
	k, l := r.sized(15, 3), r.sized(5, 2)
	steps, until := r.sized(3000, 100), 0.05
	if r.quick {
		until = 0
	}
	learners := []struct {
		name, model string
		prompt      bool
	}{{"bigram", "bigram", false}, {"transformer", "transformer", false}}
	if r.quick {
		learners = append(learners, struct {
			name, model string
			prompt      bool
		}{"transformer + target prompt", "transformer", true})
	}
	ppo := experiment.DefaultConfig().Train
	ppo.Trainer = trainers.PPO
	ppo = ppo.Resolve(trainers.TransformerModel)
	tableLR := trainers.DefaultTransformerOptions().Resolve(ppo).TableLR
	var lines []figures.Series
	var table, csv strings.Builder
	table.WriteString("| learner | final hitting time | steps to within 5% of the limit | wall seconds to within 5% | attention leaving the current token | attention on the prompt |\n| --- | --- | --- | --- | --- | --- |\n")
	csv.WriteString("learner,step,hitting_time,hitting_time_ci95,mc_success_rate,wall_seconds\n")
	var sums []experiment.Summary
	limit := 0.0
	for _, ln := range learners {
		rc := experiment.DefaultConfig()
		rc.Graph = graphConfig(k, k, l)
		rc.Model = trainers.Model(ln.model)
		rc.Train = ppo
		if ln.model == "bigram" {
			rc.Train.Optim.LR = tableLR
		} else {
			o := trainers.DefaultTransformerOptions()
			o.Prompt = ln.prompt
			rc.Transformer = &o
		}
		rc.Train.Steps, rc.Train.Until, rc.Train.LogEvery = steps, until, 10
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
		st, h, ci, rate, wall := m.Index("step"), m.Index("hitting_time"), m.Index("hitting_time_ci95"), m.Index("mc_success_rate"), m.Index("wall_seconds")
		sr := experiment.HittingSeries(m)
		sr.Name = ln.name + " (exact)"
		if sr.Lo != nil {
			sr.Name = ln.name + " (Monte Carlo, 95% interval)"
		}
		reachStep, reachWall := math.NaN(), math.NaN()
		for _, row := range rows {
			fmt.Fprintf(&csv, "%s,%g,%g,%s,%s,%g\n", ln.name, row[st], row[h], experiment.FormatExact(row[ci]), experiment.FormatExact(row[rate]), row[wall])
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
	refs := []figures.Theory{{Y: limit, Label: "limit " + experiment.FormatNumber(limit) + ": the bigram's exact RLVR optimum"},
		{Y: float64(4 * k * k), Label: fmt.Sprintf("4WK = %d (the paper)", 4*k*k)}}
	err := figures.Figure{Title: fmt.Sprintf("PPO from the same pretrained bigram, W=K=%d, L=%d", k, l),
		Panels: []figures.Panel{{XLabel: "step", YLabel: "hitting time (transitions, log scale)", LogY: true, Series: lines, Lines: refs}}}.Save(filepath.Join(dir, "hitting_time.png"))
	if err != nil {
		return "", "", err
	}
	for _, f := range []struct{ name, data string }{{"learners.csv", csv.String()}, {"learners.md", table.String()}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.data), 0o644); err != nil {
			return "", "", err
		}
	}
	ci := func(s experiment.Summary) float64 {
		if s.FinalCI95 == nil {
			return math.Inf(1) // some rollouts missed: no interval
		}
		return *s.FinalCI95
	}
	bg := sums[0]
	ok := true
	parts := []string{fmt.Sprintf("bigram %.4g (exact; limit %s)", experiment.Value(bg.FinalHittingTime), experiment.FormatNumber(limit))}
	for i, s := range sums[1:] {
		ok = ok && !math.IsInf(ci(s), 1) && experiment.Value(s.FinalHittingTime) <= math.Max(experiment.Value(bg.FinalHittingTime), 1.05*limit)+ci(s)
		parts = append(parts, fmt.Sprintf("%s %.4g ± %.2g", learners[i+1].name, experiment.Value(s.FinalHittingTime), ci(s)))
	}
	m := fmt.Sprintf("W=K=%d, L=%d, PPO (fork baseline, %d rollouts per step, horizon %g hitting times), seed 1: %s (learners.md)",
		k, l, ppo.Rollouts, ppo.HorizonFactor, strings.Join(parts, "; "))
	return m, yes(ok), nil
}
