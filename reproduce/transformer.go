package reproduce

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlvr-backtrack/backtrack/docs/sweeps"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/figures"
	"github.com/rlvr-backtrack/backtrack/sweep"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// fig7Seeds is the number of seeds fig7-transformer draws its bands over.
const fig7Seeds = 3

// fig7 is the transformer figure (Appendix F) at the paper's size, W=K=15,
// L=5 (-quick: W=K=3, L=2): the transformer with its defaults, and the
// bigram beside it, both from the same pretrained bigram and trained by
// the same PPO (the transformer's defaults: 128 rollouts a step drawn as
// walks with hindsight targets, fork baseline, horizon factor 20), each
// until within 5% of the limit (the transformer's default stop rule: a
// confirmation on 10,000 fresh rollouts; the bigram's exact hitting
// time), each ending with its final value measured afresh (the
// transformer's on 10,000 independent rollouts no decision saw); the
// bigram learns at the transformer's table rate (Adam 0.025), the
// transformer's attention and embeddings at its default rate (Adam 1e-3,
// docs/defaults.md). These are the runs of docs/sweeps/fig7-transformer.json,
// trained in dir/runs (-quick: the same configurations at W=K=3, L=2). The
// comparison on equal budgets of 2G sampled tokens is compare-learners'.
// It writes learners.csv (every seed's rows), learners.md (per learner,
// means with 95% intervals over seeds) and hitting_time.png (per learner
// the mean over seeds with its 95% band, and each seed).
func (r *reproducer) fig7(dir string) (string, string, error) {
	p, err := r.fig7Plan(dir)
	if err != nil {
		return "", "", err
	}
	if err := r.execute("fig7-transformer", p); err != nil {
		return "", "", err
	}
	// The runs by their folders, those of the plan.
	var dirs []string
	for _, run := range p.Runs {
		dirs = append(dirs, run.Dir)
	}
	c, err := r.collect(dirs)
	if err != nil {
		return "", "", err
	}
	if problems := c.Problems(); len(problems) > 0 {
		return "", "", fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	groups, _ := c.Groups()
	g0 := p.Runs[0].Config.Graph
	w, k, l, _ := g0.Homogeneous()
	var series []figures.Series
	var table, csv strings.Builder
	table.WriteString("| learner | seeds | final hitting time | within 5% of the limit | steps to within 5% | wall seconds to within 5% | attention leaving the current token |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	csv.WriteString("learner,seed,step,hitting_time,hitting_time_ci95,mc_success_rate,wall_seconds\n")
	limit := math.NaN()
	finals := map[string]sweep.Estimate{}
	for i, g := range groups {
		name := g.Fields["model"]
		colour := figures.Color(i)
		var xs, ys [][]float64
		var off []float64
		for _, run := range g.Runs {
			m := run.Metrics
			st, h, ci, rate, wall := m.Index("step"), m.Index("hitting_time"), m.Index("hitting_time_ci95"), m.Index("mc_success_rate"), m.Index("wall_seconds")
			for _, row := range m.Rows {
				fmt.Fprintf(&csv, "%s,%d,%g,%g,%s,%s,%g\n", name, run.Config.Train.Seed, row[st], row[h], experiment.FormatExact(row[ci]), experiment.FormatExact(row[rate]), row[wall])
			}
			xs, ys = append(xs, m.Column("step")), append(ys, m.Column("hitting_time"))
			sr := figures.Series{X: xs[len(xs)-1], Y: ys[len(ys)-1], Fit: true, Color: colour}
			if len(g.Runs) == 1 || run == g.Runs[0] {
				sr.Name = name + ", each seed"
			}
			series = append(series, sr)
			if a := run.Summary.Attention; a != nil {
				off = append(off, a.OffCurrent)
			}
		}
		b := sweep.Band(xs, ys, g0.ShortestPath()) // the band stays above the shortest path
		kind := "exact"
		if name == string(trainers.TransformerModel) {
			kind = "Monte Carlo"
		}
		series = append(series, figures.Series{Name: fmt.Sprintf("%s (%s), mean over %d seeds, 95%% band", name, kind, len(g.Runs)),
			X: b.X, Y: b.Mean, Lo: b.Lo, Hi: b.Hi, Band: true, Color: colour})
		limit = g.Limit
		finals[name] = g.Final
		attention := "-"
		if len(off) > 0 {
			attention = estimate(sweep.Mean95(off))
		}
		fmt.Fprintf(&table, "| %s | %d | %s | %d/%d | %s | %s | %s |\n", name, g.Counted, estimate(g.Final), g.Reached, g.Counted,
			reachEstimate(g.Steps, g.Reached), reachEstimate(g.Wall, g.Reached), attention)
	}
	refs := []figures.Theory{{Y: limit, Label: "limit " + experiment.FormatNumber(limit) + ": the bigram's exact RLVR optimum"},
		{Y: float64(4 * w * k), Label: fmt.Sprintf("4WK = %d (the paper)", 4*w*k)}}
	err = figures.Figure{Title: fmt.Sprintf("PPO from the same pretrained bigram, W=K=%d, L=%d, seeds 1-%d", k, l, fig7Seeds),
		Panels: []figures.Panel{{XLabel: "step", YLabel: "hitting time (transitions, log scale)", LogY: true, Series: series, Lines: refs}}}.Save(filepath.Join(dir, "hitting_time.png"))
	if err != nil {
		return "", "", err
	}
	for _, f := range []struct{ name, data string }{{"learners.csv", csv.String()}, {"learners.md", table.String()}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.data), 0o644); err != nil {
			return "", "", err
		}
	}
	bg, tf := finals[string(trainers.BigramModel)], finals[string(trainers.TransformerModel)]
	ci := tf.CI95
	if math.IsNaN(ci) {
		ci = 0
	}
	// The transformer reaches the backtracking policy: over seeds, its
	// final hitting time is no worse than the bigram's or within 5% of the
	// limit.
	ok := tf.N == fig7Seeds && bg.N == fig7Seeds && tf.Mean <= math.Max(bg.Mean, 1.05*limit)+ci
	ppo := p.Runs[len(p.Runs)-1].Config.Train
	batch := "independent rollouts"
	if ppo.Hindsight {
		batch = "as walks with hindsight targets"
	}
	m := fmt.Sprintf("W=K=%d, L=%d, PPO (fork baseline, %d rollouts per step %s, horizon %g hitting times), each until within %g%% of the limit, seeds 1-%d, final hitting time over seeds (mean ± 95%%): bigram %s (exact), transformer %s (Monte Carlo); limit %s; %d runs, %.0f s of runs (learners.md)",
		k, l, ppo.Rollouts, batch, ppo.HorizonFactor, 100*ppo.Until, fig7Seeds, estimate(bg), estimate(tf), experiment.FormatNumber(limit), len(c.Runs), c.RunSeconds())
	return m, yes(ok), nil
}

// fig7Plan is fig7's runs: docs/sweeps/fig7-transformer.json's, in
// dir/runs; -quick, the same at W=K=3, L=2.
func (r *reproducer) fig7Plan(dir string) (*sweep.Plan, error) {
	s, err := sweep.ParseSpec(sweeps.Fig7Transformer, "fig7-transformer")
	if err != nil {
		return nil, err
	}
	if r.quick {
		if err := s.Base.Set("graph", []byte(`{"W": 3, "K": 3, "L": 2}`)); err != nil {
			return nil, err
		}
	}
	return s.Expand(filepath.Join(dir, "runs"))
}

// reachEstimate prints steps or seconds to within 5% over the runs that got
// there ("-": none did).
func reachEstimate(e sweep.Estimate, reached int) string {
	if reached == 0 {
		return "-"
	}
	return estimate(e)
}
