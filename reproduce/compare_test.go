package reproduce

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/docs/sweeps"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/sweep"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// TestCompareLearnersSpec: the checked-in spec expands to 2 learners x 4
// trainers x 3 graphs x 5 seeds from the same pretrained bigram, PPO and
// GRPO each with the same budget for both learners; -quick keeps the two
// small graphs.
func TestCompareLearnersSpec(t *testing.T) {
	s, err := sweep.ParseSpec(sweeps.CompareLearners, compareLearners)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Expand("")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 120 {
		t.Fatalf("%d runs, want 120", len(p.Runs))
	}
	count := map[string]int{}
	for _, r := range p.Runs {
		c := r.Config
		count[string(c.Model)+" "+string(c.Train.Trainer)+" "+c.Graph.Name()]++
		if c.Init != "" {
			t.Errorf("run %d starts from %s, want the pretrained bigram", r.Index, c.Init)
		}
		if c.Train.Trainer == "ppo" && (c.Train.Steps != 150 || c.Train.Rollouts != 64 || c.Train.Baseline != "fork") {
			t.Errorf("run %d: ppo budget %d steps of %d rollouts, baseline %s", r.Index, c.Train.Steps, c.Train.Rollouts, c.Train.Baseline)
		}
		if c.Train.Trainer == "grpo" && (c.Train.Steps != 150 || c.Train.Rollouts != 64) {
			t.Errorf("run %d: grpo budget %d steps of %d rollouts", r.Index, c.Train.Steps, c.Train.Rollouts)
		}
	}
	for k, n := range count {
		if n != 5 {
			t.Errorf("%s: %d seeds, want 5", k, n)
		}
	}
	if len(count) != 24 {
		t.Errorf("%d groups, want 24", len(count))
	}
	p.Keep(func(r sweep.Run) bool { st, _ := r.Config.Graph.Size(); return st <= smallStates })
	if len(p.Runs) != 80 {
		t.Errorf("-quick keeps %d runs, want 80 (W=K=3, L=2 and the heterogeneous graph)", len(p.Runs))
	}
}

// TestCompareLearnersPaperSpec: the paper-size spec expands to 2 learners x
// 4 trainers x 5 seeds at W=K=15, L=5. Its PPO runs are the same PPO for
// both learners (128 rollouts, fork baseline, horizon 20) with the same
// budget of 2G sampled tokens and no stop rule (until 0), the bigram
// learning at the transformer's table rate; GRPO, SFT and distillation
// keep the small graphs' budgets of steps.
func TestCompareLearnersPaperSpec(t *testing.T) {
	s, err := paperSpec()
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Expand("")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 40 {
		t.Fatalf("%d runs, want 40", len(p.Runs))
	}
	count := map[string]int{}
	for _, r := range p.Runs {
		c := r.Config
		count[string(c.Model)+" "+string(c.Train.Trainer)]++
		if w, k, l, ok := c.Graph.Homogeneous(); !ok || w != 15 || k != 15 || l != 5 {
			t.Errorf("run %d: graph %s, want W=K=15, L=5", r.Index, c.Graph.Name())
		}
		if c.Init != "" {
			t.Errorf("run %d starts from %s, want the pretrained bigram", r.Index, c.Init)
		}
		tr := c.Train
		switch tr.Trainer {
		case trainers.PPO:
			if tr.MaxTokens != 2_000_000_000 || tr.Until != 0 || tr.Rollouts != 128 || tr.Baseline != "fork" || tr.HorizonFactor != 20 || tr.Optim.Name != "adam" {
				t.Errorf("run %d (%s): ppo %d tokens until %g, %d rollouts, baseline %s, horizon %g, %s", r.Index, c.Model, tr.MaxTokens, tr.Until, tr.Rollouts, tr.Baseline, tr.HorizonFactor, tr.Optim.Name)
			}
			if c.Model == trainers.BigramModel {
				if want := trainers.DefaultTableLR(tr); tr.Optim.LR != want {
					t.Errorf("run %d: the bigram's lr %g, want the transformer's table rate %g", r.Index, tr.Optim.LR, want)
				}
			}
		case trainers.GRPO:
			if tr.Steps != 150 || tr.Rollouts != 64 {
				t.Errorf("run %d: grpo budget %d steps of %d rollouts", r.Index, tr.Steps, tr.Rollouts)
			}
		default:
			if tr.Steps != 100 {
				t.Errorf("run %d: %s for %d steps, want 100", r.Index, tr.Trainer, tr.Steps)
			}
		}
	}
	for k, n := range count {
		if n != 5 {
			t.Errorf("%s: %d seeds, want 5", k, n)
		}
	}
	if len(count) != 8 {
		t.Errorf("%d groups, want 8", len(count))
	}
}

// TestFig7Plan: fig7-transformer trains, per seed 1 to fig7Seeds, the
// transformer's PPO at its defaults (walks with hindsight targets, its stop
// rule within 5%) and the bigram under the same PPO and stop, in its own
// folder; -quick the same configurations at W=K=3, L=2.
func TestFig7Plan(t *testing.T) {
	out := t.TempDir()
	r := &reproducer{out: out}
	dir := filepath.Join(out, "fig7-transformer")
	p, err := r.fig7Plan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2*fig7Seeds {
		t.Fatalf("%d runs, want %d", len(p.Runs), 2*fig7Seeds)
	}
	def := experiment.Defaults(trainers.TransformerModel, trainers.PPO)
	seeds := map[string]bool{}
	for _, run := range p.Runs {
		c := run.Config
		seeds[fmt.Sprintf("%s seed %d", c.Model, c.Train.Seed)] = true
		// The runs' folder: where a finished entry's runs are found again.
		if w, k, l, _ := c.Graph.Homogeneous(); w != 15 || k != 15 || l != 5 || filepath.Dir(run.Dir) != filepath.Join(dir, "runs") {
			t.Errorf("run %s: graph %s, want W=K=15, L=5 in %s", run.Dir, c.Graph.Name(), filepath.Join(dir, "runs"))
		}
		tr := c.Train
		if tr.Trainer != trainers.PPO || !tr.Hindsight || tr.Until != 0.05 || tr.Rollouts != 128 || tr.Baseline != "fork" || tr.HorizonFactor != 20 || tr.MaxTokens != 0 {
			t.Errorf("run %s: %+v: want PPO with the transformer's batches, baseline, horizon and stop", run.Dir, tr)
		}
		if c.Model == trainers.TransformerModel {
			// The transformer's defaults, but for the seed.
			d := def
			d.Graph, d.Train.Seed = c.Graph, tr.Seed
			if a, b := identity(c), identity(d); a != b {
				t.Errorf("run %s: %s, want the transformer's defaults %s", run.Dir, a, b)
			}
		} else if tr.Optim.Name != "adam" || tr.Optim.LR != 0.025 {
			t.Errorf("bigram run %s: optimiser %+v, want adam at the transformer's table rate 0.025", run.Dir, tr.Optim)
		}
	}
	for _, m := range []trainers.Model{trainers.BigramModel, trainers.TransformerModel} {
		for seed := 1; seed <= fig7Seeds; seed++ { // the figure says "seeds 1-3"
			if !seeds[fmt.Sprintf("%s seed %d", m, seed)] {
				t.Errorf("no %s run of seed %d (runs: %v)", m, seed, seeds)
			}
		}
	}
	r.quick = true
	q, err := r.fig7Plan(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, run := range q.Runs {
		if w, k, l, _ := run.Config.Graph.Homogeneous(); w != 3 || k != 3 || l != 2 || !strings.HasPrefix(run.Dir, dir) {
			t.Errorf("-quick run %s: graph %s", run.Dir, run.Config.Graph.Name())
		}
		// The same configuration but for the graph.
		a, b := run.Config, p.Runs[i].Config
		a.Graph, a.Out, b.Out = b.Graph, "", ""
		ia, _ := sweep.Identity(a)
		ib, _ := sweep.Identity(b)
		if ia != ib {
			t.Errorf("-quick run %d differs from the paper's run beyond the graph", i)
		}
	}
}

// TestEstimateOfNothing: a column with nothing to average (the sampled
// tokens of a trainer that samples nothing) reads "-", not NaN.
func TestEstimateOfNothing(t *testing.T) {
	for _, c := range []struct {
		e    sweep.Estimate
		want string
	}{{sweep.Estimate{Mean: math.NaN(), CI95: math.NaN()}, "-"}, {sweep.Estimate{Mean: 2, CI95: math.NaN()}, "2"}, {sweep.Estimate{Mean: 2, CI95: 0.5}, "2 ± 0.5"}} {
		if got := estimate(c.e); got != c.want {
			t.Errorf("estimate(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
}

// identity is a configuration's sweep.Identity (without its folder).
func identity(c experiment.Config) string {
	id, _ := sweep.Identity(c)
	return id
}

// TestSpecsPinIndependentRollouts: the studies whose runs were made on the
// paper's independent rollouts (compare-learners at both sizes, the
// defaults study's W=K=5 grid and its paper-size transformer sweep) set
// train.hindsight false for the transformer's PPO and REINFORCE, so the
// transformer's hindsight default leaves their runs, identities and
// folders as they were. One folder of each, named as the code before that
// default named it, is pinned: a lost pin, or a folder name that shows the
// pinned value, would train those runs again in new folders.
func TestSpecsPinIndependentRollouts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   []byte
		folder string
	}{
		{"compare-learners", sweeps.CompareLearners, "transformer-ppo-W3K3L2-seed1-baseline=fork-rollouts=64-steps=150-eval_rollouts=500-64e69067"},
		{"compare-learners-paper", sweeps.CompareLearnersPaper, "transformer-ppo-W15K15L5-seed1-max_tokens=2000000000-60cd193c"},
		{"defaults", sweeps.Defaults, "transformer-ppo-W5K5L3-seed1-lr=0.0003-table_lr=0.025-9aa5b514"},
		{"defaults-paper-transformer", sweeps.DefaultsPaperTransformer, "transformer-ppo-W15K15L5-seed1-max_tokens=2000000000-lr=0.0001-61beca5f"},
	} {
		s, err := sweep.ParseSpec(tc.data, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Expand("")
		if err != nil {
			t.Fatal(err)
		}
		pinned, found := 0, false
		for _, run := range p.Runs {
			c := run.Config
			found = found || run.Name == tc.folder
			if c.Model != trainers.TransformerModel || (c.Train.Trainer != trainers.PPO && c.Train.Trainer != trainers.Reinforce) {
				continue
			}
			pinned++
			if c.Train.Hindsight || strings.Contains(run.Name, "hindsight") {
				t.Errorf("%s: run %s draws walks or names them: want the paper's independent rollouts, as its runs were made", tc.name, run.Name)
			}
		}
		if pinned == 0 || !found {
			t.Errorf("%s: %d transformer PPO or REINFORCE runs, folder %s found %v: want its runs' folders as made", tc.name, pinned, tc.folder, found)
		}
	}
}
