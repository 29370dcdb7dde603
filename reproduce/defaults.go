package reproduce

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlvr-backtrack/backtrack/docs/sweeps"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/sweep"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// defaultsStudy names the sweeps behind the defaults, a study run by name.
const defaultsStudy = "defaults"

// defaultsSpecs are the study's checked-in sweeps: every trainer on both
// learners at W=K=5, L=3 over a grid of rates (and baselines, and the
// transformer's table rate for PPO), and, unless -quick, the bigram's
// sampled trainers and the transformer's PPO at the paper's size, each
// run with a budget of sampled tokens.
func defaultsSpecs(quick bool) []struct {
	name string
	data []byte
} {
	specs := []struct {
		name string
		data []byte
	}{{"defaults", sweeps.Defaults}}
	if !quick {
		specs = append(specs, struct {
			name string
			data []byte
		}{"defaults-paper", sweeps.DefaultsPaper})
	}
	return specs
}

// choice is the best setting of one family of a defaults sweep (a model
// and trainer on a graph), by choiceScore, and whether the code's default
// is that setting.
type choice struct {
	graph, model, trainer string
	best                  *sweep.Group
	setting               string // the best group's varying fields
	isDefault             bool
	defaultSetting        string // the code's default, as setting
}

// choiceScore orders the groups of a family, best first: more seeds that
// met the stop rule (until); among groups whose seeds all met it, fewer
// sampled tokens (steps for the trainers that sample nothing); otherwise a
// better final hitting time (lower for the RL trainers, closer to the
// limit for sft and distill).
func choiceScore(g *sweep.Group) (converged int, cost, final float64) {
	var tokens, steps, finals []float64
	for _, r := range g.Runs {
		if r.Problem != "" {
			continue
		}
		if r.Summary.StopReason == trainers.StopUntil {
			converged++
		}
		tokens = append(tokens, float64(r.Summary.SampledTokens))
		steps = append(steps, float64(r.Summary.Steps))
		f, limit := experiment.Value(r.Summary.FinalHittingTime), experiment.Value(r.Summary.LimitHittingTime)
		if !r.Config.Train.Trainer.RL() && limit > 0 {
			f = math.Abs(f-limit) / limit
		}
		finals = append(finals, f)
	}
	cost = sweep.Mean95(tokens).Mean
	if cost == 0 || math.IsNaN(cost) {
		cost = sweep.Mean95(steps).Mean
	}
	return converged, cost, sweep.Mean95(finals).Mean
}

// better reports whether group a ranks before group b (choiceScore).
func better(a, b *sweep.Group) bool {
	ca, costA, fa := choiceScore(a)
	cb, costB, fb := choiceScore(b)
	switch {
	case ca != cb:
		return ca > cb
	case ca == a.Counted && cb == b.Counted && costA != costB:
		return costA < costB
	}
	return fa < fb
}

// settingOf names what a defaults sweep varies within a family: the rate,
// the baseline of reinforce and ppo on the bigram, the transformer's table
// rate for its PPO.
func settingOf(c experiment.Config) string {
	s := fmt.Sprintf("%s lr %g", c.Train.Optim.Name, c.Train.Optim.LR)
	if c.Train.Trainer == trainers.PPO || c.Train.Trainer == trainers.Reinforce {
		s += ", baseline " + c.Train.Baseline
	}
	if c.Transformer != nil && c.Train.Trainer == trainers.PPO {
		s += fmt.Sprintf(", table lr %g", c.Transformer.TableLR)
	}
	return s
}

// choices picks each family's best group and compares it with the code's
// defaults (experiment.Defaults).
func choices(groups []*sweep.Group) []choice {
	var out []choice
	index := map[string]int{}
	for _, g := range groups {
		if g.Counted == 0 {
			continue
		}
		cfg := g.Runs[0].Config
		key := g.Fields["graph"] + "|" + g.Fields["model"] + "|" + g.Fields["trainer"]
		i, ok := index[key]
		if !ok {
			def := experiment.Defaults(cfg.Model, cfg.Train.Trainer)
			index[key] = len(out)
			out = append(out, choice{graph: g.Fields["graph"], model: g.Fields["model"], trainer: g.Fields["trainer"], best: g, defaultSetting: settingOf(def)})
			continue
		}
		if better(g, out[i].best) {
			out[i].best = g
		}
	}
	for i := range out {
		out[i].setting = settingOf(out[i].best.Runs[0].Config)
		out[i].isDefault = out[i].setting == out[i].defaultSetting
	}
	return out
}

// defaults runs the defaults sweeps, aggregates each into its folder
// under dir, and writes defaults.md: per model, trainer and graph, the
// grid's best setting and the code's default, then every group. The claim
// holds when every default is its grid's best at W=K=5, L=3, where the
// defaults are chosen; the paper-size grids are reported beside.
func (r *reproducer) defaults(dir string) (string, string, error) {
	start := time.Now()
	var page strings.Builder
	var all []choice
	var paper []string
	runs, seconds := 0, 0.0
	for _, s := range defaultsSpecs(r.quick) {
		spec, err := sweep.ParseSpec(s.data, s.name)
		if err != nil {
			return "", "", err
		}
		p, err := spec.Expand(filepath.Join(dir, s.name, "runs"))
		if err != nil {
			return "", "", err
		}
		if r.quick { // the exact trainers of the bigram: a smoke test
			p.Keep(func(run sweep.Run) bool {
				return run.Config.Model == trainers.BigramModel && !run.Config.Train.Trainer.Sampled()
			})
		}
		if err := r.execute(defaultsStudy, p); err != nil {
			return "", "", err
		}
		c, err := sweep.Collect([]string{p.Out})
		if err != nil {
			return "", "", err
		}
		if _, err := c.Write(filepath.Join(dir, s.name)); err != nil {
			return "", "", err
		}
		if problems := c.Problems(); len(problems) > 0 && !r.quick {
			return "", "", fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		runs, seconds = runs+len(p.Runs), seconds+c.RunSeconds()
		groups, _ := c.Groups()
		ch := choices(groups)
		if s.name == "defaults" { // the defaults are chosen at W=K=5, L=3
			all = append(all, ch...)
		} else {
			for _, x := range ch {
				paper = append(paper, fmt.Sprintf("%s %s: %s (%s, %s)", x.model, x.trainer, x.setting, estimate(x.best.Final), x.best.StopsString()))
			}
		}
		fmt.Fprintf(&page, "## %s (`docs/sweeps/%s.json`, %d runs)\n\n", s.name, s.name, len(p.Runs))
		page.WriteString("| graph | model | trainer | the grid's best | its final hitting time | stopped by | sampled tokens | the default | the default is the best |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, x := range ch {
			fmt.Fprintf(&page, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.graph, x.model, x.trainer, x.setting,
				estimate(x.best.Final), x.best.StopsString(), estimate(x.best.Tokens), x.defaultSetting, yes(x.isDefault))
		}
		summary, err := os.ReadFile(filepath.Join(dir, s.name, "summary.md"))
		if err != nil {
			return "", "", err
		}
		_, body, _ := strings.Cut(string(summary), "\n\n") // without its title
		fmt.Fprintf(&page, "\nEvery group of the sweep:\n\n%s\n", body)
	}
	if err := os.WriteFile(filepath.Join(dir, "defaults.md"), []byte(page.String()), 0o644); err != nil {
		return "", "", err
	}
	var off []string
	for _, x := range all {
		if !x.isDefault {
			off = append(off, fmt.Sprintf("%s %s on %s: best %s, default %s", x.model, x.trainer, x.graph, x.setting, x.defaultSetting))
		}
	}
	m := fmt.Sprintf("%d runs (%.0f s of runs, %.0f s this time); %d families, the default is the grid's best in %d",
		runs, seconds, time.Since(start).Seconds(), len(all), len(all)-len(off))
	if len(off) > 0 {
		m += "; not: " + strings.Join(off, "; ")
	}
	if len(paper) > 0 {
		m += "; at the paper's size the grids' best: " + strings.Join(paper, "; ")
	}
	return m, yes(len(off) == 0 && len(all) > 0), nil
}

// defaultsFamilies lists the families (model trainer) a defaults spec
// sweeps, for the tests.
func defaultsFamilies(p *sweep.Plan) []string {
	var out []string
	for _, r := range p.Runs {
		f := string(r.Config.Model) + " " + string(r.Config.Train.Trainer)
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
