package reproduce

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/rlvr-backtrack/backtrack/docs/sweeps"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/sweep"
)

// compareLearners names the learner comparison, a study run by name only.
const compareLearners = "compare-learners"

// smallStates bounds the graphs of compare-learners -quick: W=K=3, L=2 (61
// states) and the heterogeneous 2,2,3;5,1;4,4,4,4, not W=K=5, L=3.
const smallStates = 100

// paperRuns is the folder, under compare-learners' own, of the runs at the
// paper's size (docs/sweeps/compare-learners-paper.json).
const paperRuns = "runs-paper"

// paperSpec is the paper-size comparison's spec.
func paperSpec() (*sweep.Spec, error) {
	return sweep.ParseSpec(sweeps.CompareLearnersPaper, compareLearners+"-paper")
}

// paperPlan expands the paper-size comparison into its folder.
func (r *reproducer) paperPlan() (*sweep.Plan, error) {
	s, err := paperSpec()
	if err != nil {
		return nil, err
	}
	return s.Expand(filepath.Join(r.out, compareLearners, paperRuns))
}

// execute trains a plan's runs through package sweep, two at a time on two
// cores (runs already done are skipped, runs with a checkpoint resumed),
// logging each as it ends.
func (r *reproducer) execute(name string, p *sweep.Plan) error {
	_, err := sweep.Execute(r.ctx, p, sweep.Options{Jobs: runtime.NumCPU(), Finished: func(done, total int, res sweep.Result) {
		state := "done"
		if res.Err != nil {
			state = "failed: " + res.Err.Error()
		} else if res.Skipped() {
			state = "done before"
		}
		fmt.Fprintf(r.log, "  %s [%d/%d] run %d %s: %s (%.1fs)\n", name, done, total, res.Run.Index, res.Run.Name, state, res.Seconds)
	}})
	return err
}

// compareLearners runs the checked-in sweeps docs/sweeps/compare-learners.json
// (into dir/runs) and, unless -quick, compare-learners-paper.json (into
// dir/runs-paper) through package sweep, and aggregates both into dir:
// summary.md, summary.csv, runs.csv and a figure per graph with a band over
// seeds. With -quick it keeps the small graphs only. The claim holds when,
// on every graph, the transformer under PPO ends no worse than the bigram
// (within its 95% interval).
func (r *reproducer) compareLearners(dir string) (string, string, error) {
	s, err := sweep.ParseSpec(sweeps.CompareLearners, compareLearners)
	if err != nil {
		return "", "", err
	}
	p, err := s.Expand(filepath.Join(dir, "runs"))
	if err != nil {
		return "", "", err
	}
	plans := []*sweep.Plan{p}
	if r.quick {
		p.Keep(func(run sweep.Run) bool {
			states, _ := run.Config.Graph.Size()
			return states <= smallStates
		})
	} else {
		paper, err := r.paperPlan()
		if err != nil {
			return "", "", err
		}
		plans = append(plans, paper)
	}
	start := time.Now()
	var dirs []string
	runs := 0
	for _, p := range plans {
		if err := r.execute(compareLearners, p); err != nil {
			return "", "", err
		}
		dirs, runs = append(dirs, p.Out), runs+len(p.Runs)
	}
	c, err := r.collect(dirs)
	if err != nil {
		return "", "", err
	}
	if _, err := c.Write(dir); err != nil {
		return "", "", err
	}
	if problems := c.Problems(); len(problems) > 0 {
		return "", "", fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	groups, _ := c.Groups()
	// PPO's final hitting time per graph and learner.
	type key struct{ graph, model string }
	ppo := map[key]*sweep.Group{}
	var graphs []string
	for _, g := range groups {
		if g.Fields["trainer"] != "ppo" {
			continue
		}
		k := key{g.Fields["graph"], g.Fields["model"]}
		if _, ok := ppo[key{k.graph, "bigram"}]; !ok && k.model == "bigram" {
			graphs = append(graphs, k.graph)
		}
		ppo[k] = g
	}
	ok := len(graphs) > 0
	var parts []string
	for _, gr := range graphs {
		b, t := ppo[key{gr, "bigram"}], ppo[key{gr, "transformer"}]
		if b == nil || t == nil {
			ok = false
			continue
		}
		ci := t.Final.CI95
		if math.IsNaN(ci) {
			ci = 0
		}
		ok = ok && t.Final.Mean <= b.Final.Mean+ci
		parts = append(parts, fmt.Sprintf("%s: bigram %s, transformer %s (limit %s)", gr, estimate(b.Final), estimate(t.Final), formatLimit(b.Limit)))
	}
	size := "up to the paper's W=K=15, L=5"
	if r.quick {
		size = fmt.Sprintf("graphs of at most %d states", smallStates)
	}
	m := fmt.Sprintf("%d runs (%s, 5 seeds; %.0f s of runs, %.0f s this time); PPO's final hitting time over seeds (mean ± 95%%): %s; GRPO, SFT and distillation in summary.md",
		runs, size, c.RunSeconds(), time.Since(start).Seconds(), strings.Join(parts, "; "))
	return m, yes(ok), nil
}

func estimate(e sweep.Estimate) string {
	if math.IsNaN(e.Mean) { // nothing to average: a trainer that samples nothing has no sampled tokens
		return "-"
	}
	if math.IsNaN(e.CI95) {
		return fmt.Sprintf("%.4g", e.Mean)
	}
	return fmt.Sprintf("%.4g ± %.2g", e.Mean, e.CI95)
}

func formatLimit(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return experiment.FormatNumber(x)
}
