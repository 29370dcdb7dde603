package reproduce

import (
	"testing"

	"github.com/rlvr-backtrack/backtrack/docs/sweeps"
	"github.com/rlvr-backtrack/backtrack/sweep"
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
