package sweep

import (
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// TestIdentityIsStable pins the identity hash, and so the folder name, of
// runs at their defaults: a field added to the configuration must leave
// it alone at the value that keeps the old behaviour (Identity's neutral
// list), or every finished run of every sweep gets a new folder and is
// trained again (-step-tokens did that to the defaults study at first).
// The hashes are those of commit 4367dcc, before that field. The
// transformer's PPO and REINFORCE now draw walks with hindsight targets
// by default: a run that turns them off is the run of that commit, and
// keeps its hash; the default is another run, with another.
func TestIdentityIsStable(t *testing.T) {
	for _, tc := range []struct {
		model trainers.Model
		kind  trainers.Kind
		want  string
	}{
		{trainers.BigramModel, trainers.PPO, "ea6fb0c5"},
		{trainers.TransformerModel, trainers.PPO, "59eedd4a"},
		{trainers.BigramModel, trainers.RLVRExact, "8bdfd2f3"},
	} {
		c := experiment.Defaults(tc.model, tc.kind)
		c.Graph = tasks.Config{W: 5, K: 5, L: 3}
		if c.Train.Hindsight {
			if _, got := Identity(c); got == tc.want {
				t.Errorf("%s on the %s: the default, hindsight true, has the identity of false", tc.kind, tc.model)
			}
			c.Train.Hindsight = false
		}
		if _, got := Identity(c); got != tc.want {
			t.Errorf("%s on the %s: identity %s, want %s", tc.kind, tc.model, got, tc.want)
		}
		if c.Train.StepTokens = 1000; tc.kind.Sampled() {
			if _, got := Identity(c); got == tc.want {
				t.Errorf("%s on the %s: step_tokens 1000 has the identity of 0", tc.kind, tc.model)
			}
		}
		c.Train.StepTokens = 0
		if c.Train.Hindsight = true; tc.kind.Sampled() {
			if _, got := Identity(c); got == tc.want {
				t.Errorf("%s on the %s: hindsight true has the identity of false", tc.kind, tc.model)
			}
		}
	}
}
