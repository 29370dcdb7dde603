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
// sampled trainers (3 seeds), the transformer's PPO (the default rate and
// its neighbours: 3 seeds at 3e-4 and 1e-3, one at 1e-4 and 3e-3) at the
// paper's size, each run with a budget of sampled tokens, and the stopping
// sweep.
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
		}{"defaults-paper", sweeps.DefaultsPaper}, struct {
			name string
			data []byte
		}{"defaults-paper-transformer", sweeps.DefaultsPaperTransformer}, struct {
			name string
			data []byte
		}{"stopping", sweeps.Stopping})
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
	// paper is set for the bigram's exact trainers, whose default is the
	// paper's sign descent at lr 0.01: the study shows their grid, and
	// does not hold them to it.
	paper bool
	// failsPaper is set when the best did not get every seed within 5% at
	// the paper's size (endedWithin), and neither did any other setting of
	// the family.
	failsPaper bool
}

// papers is whether a family keeps the paper's setting (choice.paper):
// the bigram's trainers that sample nothing.
func papers(c experiment.Config) bool {
	return c.Model == trainers.BigramModel && !c.Train.Trainer.Sampled()
}

// choiceScore is what orders the groups of a family (better): whether
// every seed met the stop rule (until), the sampled tokens it took (steps
// for the trainers that sample nothing), and the mean final hitting time
// (for sft and distill its distance to the limit).
func choiceScore(g *sweep.Group) (all bool, cost, final float64) {
	var tokens, steps, finals []float64
	converged := 0
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
	return converged > 0 && converged == g.Counted, cost, sweep.Mean95(finals).Mean
}

// better reports whether group a ranks before group b: a group whose
// seeds all met the stop rule before one where some did not; between two
// such groups, the one that took fewer sampled tokens (steps); otherwise
// the better mean final hitting time.
func better(a, b *sweep.Group) bool {
	allA, costA, fa := choiceScore(a)
	allB, costB, fb := choiceScore(b)
	switch {
	case allA != allB:
		return allA
	case allA && costA != costB:
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

// stoppingNote introduces the stopping sweep on the defaults' page.
const stoppingNote = `The sampled trainers that do not reach 1% of the optimum on every seed at W=K=5, L=3 (REINFORCE and
PPO with the state baseline, GRPO, RLOO, Dr. GRPO), each at its default rate, with the default stop rules (lr_decay
plateau: the rate halved after -patience steps without a new best, three times, then the run stops with its
best parameters) and with a constant rate for 3000 steps. "final above best (max)" is how far the run ended
above the best hitting time it reached, on the worst of its seeds.`

// feasible reports, for a family and setting, whether the paper's size
// says anything of it (known) and whether it holds there (ok).
type feasible func(model, trainer, setting string) (known, ok bool)

// paperFeasible reads the paper-size groups into a feasible: a setting
// holds when it was swept at the paper's size and no seed ended there
// shown to be further than Within from the limit (endedWithin). Where a
// family was swept at the paper's size, a setting it did not sweep is
// known and does not hold: a default must have been seen to work at the
// paper's size (the transformer's PPO at W=K=5, L=3 prefers rates that
// diverge there, and its grid at the paper's size is the default and its
// neighbours). A family never swept there is not known.
func paperFeasible(groups []*sweep.Group) feasible {
	ok, swept := map[string]bool{}, map[string]bool{}
	for _, g := range groups {
		if g.Counted == 0 {
			continue
		}
		all := true
		for _, r := range g.Runs {
			if r.Problem == "" && !endedWithin(r.Summary) {
				all = false
			}
		}
		ok[g.Fields["model"]+"|"+g.Fields["trainer"]+"|"+settingOf(g.Runs[0].Config)] = all
		swept[g.Fields["model"]+"|"+g.Fields["trainer"]] = true
	}
	return func(model, trainer, setting string) (bool, bool) {
		return swept[model+"|"+trainer], ok[model+"|"+trainer+"|"+setting]
	}
}

// endedWithin reports whether a run's final value is not shown to be
// further than Within above its limit: an exact final at most Within above
// it, a Monte Carlo final whose 95% interval reaches within Within (a seed
// at 945.1 ± 18.4 against the band's 943.95 is not shown outside it; a
// final with no interval, a lower bound, must itself be within).
func endedWithin(s *experiment.Summary) bool {
	band := (1 + sweep.Within) * experiment.Value(s.LimitHittingTime)
	final := experiment.Value(s.FinalHittingTime)
	if ci := experiment.Value(s.FinalCI95); !math.IsNaN(ci) {
		final -= ci
	}
	return final <= band
}

// choices picks each family's best group and compares it with the code's
// defaults (experiment.Defaults). A setting the paper's size knows not to
// hold (paperFeasible) is passed over (paper nil: no filter), unless
// every setting of its family is.
func choices(groups []*sweep.Group, paper feasible) []choice {
	var out []choice
	index := map[string]int{}
	fails := func(g *sweep.Group) bool {
		if paper == nil {
			return false
		}
		known, ok := paper(g.Fields["model"], g.Fields["trainer"], settingOf(g.Runs[0].Config))
		return known && !ok
	}
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
			out = append(out, choice{graph: g.Fields["graph"], model: g.Fields["model"], trainer: g.Fields["trainer"], best: g, defaultSetting: settingOf(def), paper: papers(cfg)})
			continue
		}
		b := out[i].best
		if fails(b) && !fails(g) || fails(b) == fails(g) && better(g, b) {
			out[i].best = g
		}
	}
	for i := range out {
		out[i].setting = settingOf(out[i].best.Runs[0].Config)
		out[i].isDefault = out[i].setting == out[i].defaultSetting
		out[i].failsPaper = fails(out[i].best)
	}
	return out
}

// defaults runs the defaults sweeps, aggregates each into its folder
// under dir, and writes defaults.md: per model, trainer and graph, the
// grid's best setting and the code's default, then every group. A default
// is the best of its W=K=5, L=3 grid among the settings seen to get every
// seed within 5% of the limit at the paper's size (a Monte Carlo final by
// its interval: endedWithin), for the families swept there
// (paperFeasible). The claim holds when every default is that
// setting, but for the bigram's exact trainers, which keep the paper's sign
// descent at lr 0.01 (DESIGN.md: the headline is the paper's experiment)
// and whose grids are shown.
func (r *reproducer) defaults(dir string) (string, string, error) {
	start := time.Now()
	type swept struct {
		name   string
		runs   int
		groups []*sweep.Group
	}
	var done []swept
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
		c, err := r.collect([]string{p.Out})
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
		done = append(done, swept{s.name, len(p.Runs), groups})
	}
	var paper feasible
	var paperGroups []*sweep.Group
	for _, d := range done {
		if strings.HasPrefix(d.name, "defaults-paper") {
			paperGroups = append(paperGroups, d.groups...)
		}
	}
	if len(paperGroups) > 0 {
		paper = paperFeasible(paperGroups)
	}
	var page strings.Builder
	page.WriteString("What these tables show, family by family, and why a default is not its grid's best where it is not: " +
		"[defaults-notes.md](defaults-notes.md).\n\n")
	var all []choice
	var atPaper []string
	for _, d := range done {
		fmt.Fprintf(&page, "## %s (`docs/sweeps/%s.json`, %d runs)\n\n", d.name, d.name, d.runs)
		if d.name == "stopping" {
			fmt.Fprintf(&page, "%s\n\n", stoppingNote)
		} else {
			ch := choices(d.groups, paper)
			if d.name == "defaults" { // the defaults are chosen at W=K=5, L=3
				all = ch
			} else {
				for _, x := range ch {
					atPaper = append(atPaper, fmt.Sprintf("%s %s: %s (%s, %s)", x.model, x.trainer, x.setting, estimate(x.best.Final), x.best.StopsString()))
				}
			}
			page.WriteString("| graph | model | trainer | the grid's best | its final hitting time | stopped by | sampled tokens | the default | the default is the best |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
			for _, x := range ch {
				best := x.setting
				if x.failsPaper {
					best += " (no setting of the paper-size grid got every seed within 5%)"
				}
				fmt.Fprintf(&page, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.graph, x.model, x.trainer, best,
					estimate(x.best.Final), x.best.StopsString(), estimate(x.best.Tokens), x.defaultSetting, agreement(x))
			}
		}
		summary, err := os.ReadFile(filepath.Join(dir, d.name, "summary.md"))
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
		if !x.isDefault && !x.paper {
			off = append(off, fmt.Sprintf("%s %s on %s: best %s, default %s", x.model, x.trainer, x.graph, x.setting, x.defaultSetting))
		}
	}
	m := fmt.Sprintf("%d runs (%.0f s of runs, %.0f s this time); %d families at W=K=5, L=3, the default is the best in %d",
		runs, seconds, time.Since(start).Seconds(), len(all), len(all)-len(off))
	if len(off) > 0 {
		m += "; not: " + strings.Join(off, "; ")
	}
	if len(atPaper) > 0 {
		m += "; at the paper's size the grids' best: " + strings.Join(atPaper, "; ")
	}
	return m, yes(len(off) == 0 && len(all) > 0), nil
}

// agreement says whether a family's default is its grid's best, or that
// it keeps the paper's setting.
func agreement(x choice) string {
	if x.paper && !x.isDefault {
		return "no: the paper's setting, kept"
	}
	return yes(x.isDefault)
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
