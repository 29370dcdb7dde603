package experiment

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

func resolveJSON(t *testing.T, data string) (Config, error) {
	t.Helper()
	g, err := ParseGiven([]byte(data))
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return g.Resolve()
}

// TestGivenDefaultsFirst: what is not given takes the defaults of the run's
// own trainer and model, what is given is used as it is, and the defaults
// that depend on a given value follow it.
func TestGivenDefaultsFirst(t *testing.T) {
	for _, tc := range []struct {
		given string
		check func(Config) bool
	}{
		{`{}`, func(c Config) bool {
			return c.Train.Trainer == trainers.RLVRExact && c.Train.Optim.Name == "sign" && c.Train.Optim.LR == 0.01
		}},
		{`{"train": {"trainer": "ppo"}}`, func(c Config) bool {
			return c.Train.Optim.Name == "adam" && c.Train.Optim.LR == 0.025 && c.Train.Rollouts == 256 && c.Train.Epochs == 2
		}},
		{`{"model": "transformer", "train": {"trainer": "ppo"}}`, func(c Config) bool {
			return c.Train.Optim.LR == 0.001 && c.Train.Rollouts == 128 && c.Train.Baseline == "fork" && c.Transformer.TableLR == 0.025
		}},
		// The defaults study's rates (docs/defaults.md): 1e-3 for PPO, 3e-3
		// for the transformer's other sampled trainers.
		{`{"model": "transformer", "train": {"trainer": "grpo"}}`, func(c Config) bool {
			return c.Train.Optim.Name == "adam" && c.Train.Optim.LR == 0.003 && c.Train.Baseline == "group" && c.Train.HorizonFactor == 2
		}},
		{`{"model": "transformer", "train": {"trainer": "reinforce"}}`, func(c Config) bool {
			return c.Train.Optim.LR == 0.003 && c.Train.Baseline == "fork" && c.Train.HorizonFactor == 20
		}},
		// Hindsight targets: the transformer's PPO and REINFORCE draw walks
		// unless a prompt shows it its target; given, the value is used
		// (and refused with a prompt, TestGivenRefused); the bigram and the
		// group-relative trainers draw independent rollouts.
		{`{"model": "transformer", "train": {"trainer": "ppo"}}`, func(c Config) bool { return c.Train.Hindsight }},
		{`{"model": "transformer", "train": {"trainer": "reinforce"}}`, func(c Config) bool { return c.Train.Hindsight }},
		{`{"model": "transformer", "train": {"trainer": "ppo"}, "transformer": {"prompt": true}}`, func(c Config) bool { return !c.Train.Hindsight }},
		{`{"model": "transformer", "train": {"trainer": "reinforce"}, "transformer": {"prompt": true}}`, func(c Config) bool { return !c.Train.Hindsight }},
		{`{"model": "transformer", "train": {"trainer": "ppo", "hindsight": false}}`, func(c Config) bool { return !c.Train.Hindsight }},
		{`{"model": "transformer", "train": {"trainer": "grpo"}}`, func(c Config) bool { return !c.Train.Hindsight }},
		{`{"train": {"trainer": "ppo"}}`, func(c Config) bool { return !c.Train.Hindsight }},
		{`{"train": {"trainer": "ppo", "hindsight": true}}`, func(c Config) bool { return c.Train.Hindsight }},
		// An optimiser named without a rate: the trainer's rate when it is
		// the trainer's optimiser, the paper's 0.01 otherwise.
		{`{"train": {"trainer": "ppo", "optimizer": {"name": "adam"}}}`, func(c Config) bool { return c.Train.Optim.LR == 0.025 }},
		{`{"train": {"trainer": "ppo", "optimizer": {"name": "sgd"}}}`, func(c Config) bool { return c.Train.Optim.LR == 0.01 }},
		{`{"train": {"optimizer": {"name": "adam"}}}`, func(c Config) bool { return c.Train.Optim.LR == 0.01 && c.Train.Optim.Beta2 == 0.999 }},
		// A rate without a name keeps the trainer's optimiser.
		{`{"train": {"trainer": "reinforce", "optimizer": {"lr": 0.2}}}`, func(c Config) bool { return c.Train.Optim.Name == "adam" && c.Train.Optim.LR == 0.2 }},
		// identity's width is the vocabulary: dim 0 unless given.
		{`{"model": "transformer", "train": {"trainer": "sft"}, "transformer": {"init": "identity"}}`, func(c Config) bool { return c.Transformer.Dim == 0 }},
		// The table's rate follows -lr where the rule says so (sft), not
		// where it has its own (ppo).
		{`{"model": "transformer", "train": {"trainer": "sft", "optimizer": {"lr": 0.05}}}`, func(c Config) bool { return c.Transformer.TableLR == 0.05 }},
		{`{"model": "transformer", "train": {"trainer": "ppo", "optimizer": {"lr": 0.05}}}`, func(c Config) bool { return c.Transformer.TableLR == 0.025 }},
		// Zero is a value where the field takes it.
		{`{"train": {"trainer": "ppo", "kl_coef": 0, "max_tokens": 0, "until": 0}}`, func(c Config) bool { return c.Train.Until == 0 && c.Train.MaxTokens == 0 }},
	} {
		c, err := resolveJSON(t, tc.given)
		if err != nil || !tc.check(c) {
			data, _ := json.Marshal(c)
			t.Errorf("%s: got %s (%v)", tc.given, data, err)
		}
	}
}

// TestGivenRefused: a given value is refused with one line naming the
// field, never replaced: zero where the field wants more, a field that
// does not apply to the run (even as zero), and a graph budget of 0.
func TestGivenRefused(t *testing.T) {
	for _, tc := range []struct{ given, want string }{
		{`{"train": {"optimizer": {"name": "adam", "lr": 0}}}`, "lr 0: want finite > 0"},
		{`{"train": {"trainer": "ppo", "rollouts": 0}}`, "rollouts 0: want >= 1"},
		{`{"train": {"trainer": "ppo", "horizon_factor": 0}}`, "horizon_factor 0"},
		{`{"model": "transformer", "train": {"trainer": "ppo"}, "transformer": {"table_lr": 0}}`, "table_lr 0"},
		{`{"train": {"trainer": "reinforce", "epochs": 0}}`, "train.epochs: applies to ppo, grpo, rloo, dr-grpo; this run is reinforce on the bigram"},
		{`{"train": {"trainer": "sft", "rollouts": 64}}`, "train.rollouts: applies to"},
		{`{"train": {"trainer": "sft", "train_source": false}}`, "train.train_source: applies to"},
		{`{"train": {"optimizer": {"beta1": 0.5}}}`, "train.optimizer.beta1: applies to optimizer adam"},
		{`{"train": {"trainer": "ppo", "lambda": 0.9}}`, "train.lambda: applies to baseline gae"},
		{`{"train": {"trainer": "grpo", "hindsight": true}}`, "train.hindsight: applies to reinforce, ppo"},
		{`{"model": "transformer", "train": {"trainer": "ppo", "hindsight": true}, "transformer": {"prompt": true}}`, "hindsight: with a prompt the transformer sees its target"},
		{`{"transformer": {}}`, "transformer: applies to the transformer; this run is rlvr-exact on the bigram"},
		{`{"model": "transformer", "train": {"trainer": "sft"}, "transformer": {"init": "identity", "table_lr": 0.1}}`, "transformer.table_lr: applies to the transformer with init table"},
		{`{"model": "transformer", "train": {"trainer": "sft"}, "transformer": {"init": "identity", "dim": 64}}`, "dim 64: init identity"},
		{`{"train": {"trainer": "pretrain"}, "init": "runs/x"}`, "init: applies to"},
		{`{"teacher": "rlvr-limit"}`, "teacher: applies to distill"},
		{`{"graph": {"W": 2, "K": 2, "L": 2, "max_bytes": 0}}`, "graph.max_bytes 0"},
		{`{"train": {"trainer": ""}}`, `trainer "": want one of`},
		{`{"model": "transformer"}`, "model transformer trains with"},
		{`{"train": {"seed": -1}}`, "train.seed: got a JSON number -1, want an integer >= 0"},
		{`{"graph": {"W": 3, "branches": [[1]]}}`, "W=3 and branches: give W, K, L or branches, not both"},
		// encoding/json matches keys without case; the config does not.
		{`{"Graph": {"W": 3, "K": 3, "L": 2}}`, "Graph: keys are case-sensitive: want graph"},
		{`{"train": {"trainer": "ppo", "Rollouts": 10}}`, "train.Rollouts: keys are case-sensitive: want train.rollouts"},
		{`{"train": {"seed": 1, "SEED": 5}}`, "train.SEED: keys are case-sensitive"},
		{`{"train": {"optimizer": {"Name": "adam"}}}`, "train.optimizer.Name: keys are case-sensitive"},
		{`{"graph": {"branches": [[1, 2]], "Max_Bytes": 100000}}`, "graph.Max_Bytes: keys are case-sensitive: want graph.max_bytes"},
	} {
		_, err := resolveJSON(t, tc.given)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !IsInput(err) {
			t.Errorf("%s: got %v, want one line with %q", tc.given, err, tc.want)
		}
	}
	_, err := resolveJSON(t, `{"train": {"trainer": "reinforce", "clip": 0.2}}`)
	var na *NotApplicable
	if !errors.As(err, &na) || na.Path != "train.clip" {
		t.Errorf("got %v, want a *NotApplicable naming train.clip", err)
	}
}

// TestGivenSetPaths: a path sets one field over the given object; a field
// of a graph not given sets it on the default graph, which a given graph
// replaces whole.
func TestGivenSetPaths(t *testing.T) {
	g := NewGiven()
	for _, s := range []struct{ path, value string }{{"graph.L", "2"}, {"train.optimizer.lr", "0.5"}, {"model", `"transformer"`}, {"train.trainer", `"sft"`}, {"transformer.prompt", "true"}} {
		if err := g.Set(s.path, json.RawMessage(s.value)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := g.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.Graph.Name() != (tasks.Config{W: 15, K: 15, L: 2}).Name() || c.Train.Optim.LR != 0.5 || !c.Transformer.Prompt || c.Transformer.Dim != 64 {
		t.Errorf("got graph %+v, lr %v, transformer %+v", c.Graph, c.Train.Optim.LR, *c.Transformer)
	}
	g, _ = ParseGiven([]byte(`{"graph": {"branches": [[1, 2], [3]]}}`))
	g.Set("graph.L", json.RawMessage("2"))
	if _, err := g.Resolve(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("L on a given heterogeneous graph: %v, want a refusal", err)
	}
	if err := g.Set("graph.branches.x", json.RawMessage("1")); err == nil {
		t.Error("a path through an array: no error")
	}
	if err := g.Set("train.seed", json.RawMessage("null")); err == nil {
		t.Error("null: no error")
	}
}

// TestConfigJSONResolvesToItself: config.json, read back as a config
// file, gives the same run, for every trainer on every model; it holds
// exactly the fields that apply.
func TestConfigJSONResolvesToItself(t *testing.T) {
	for _, m := range trainers.Models() {
		for _, k := range m.Kinds() {
			d := Defaults(m, k)
			d.Teacher = map[bool]string{true: "rlvr-limit"}[k.UsesTeacher()]
			c, err := d.Resolve()
			if err != nil {
				t.Fatalf("%s on %s: %v", k, m, err)
			}
			data, _ := json.MarshalIndent(c, "", "  ")
			back, err := resolveJSON(t, string(data))
			if err != nil {
				t.Errorf("%s on %s: config.json does not resolve: %v", k, m, err)
				continue
			}
			if again, _ := json.MarshalIndent(back, "", "  "); string(again) != string(data) {
				t.Errorf("%s on %s: config.json\n%s\nresolves to\n%s", k, m, data, again)
			}
			g, _ := ParseGiven(data)
			for _, p := range g.leaves() {
				if !trainers.Applies(p, c.Choice()) {
					t.Errorf("%s on %s: config.json records %s", k, m, p)
				}
			}
		}
	}
}

// TestSameRunAcrossVersions: a config.json written before config.json left
// out the fields that do not apply (here ppo's epochs and rollouts on an
// exact RLVR run) holds the same run as today's.
func TestSameRunAcrossVersions(t *testing.T) {
	c, err := DefaultConfig().Resolve()
	if err != nil {
		t.Fatal(err)
	}
	now, _ := json.MarshalIndent(c, "", "  ")
	var tree map[string]any
	json.Unmarshal(now, &tree)
	tree["train"].(map[string]any)["epochs"] = 2
	tree["train"].(map[string]any)["rollouts"] = 256
	old, _ := json.MarshalIndent(tree, "", "  ")
	if !sameRun(old, now) {
		t.Errorf("the older config.json\n%s\nis not this run's\n%s", old, now)
	}
	tree["train"].(map[string]any)["steps"] = 7
	other, _ := json.Marshal(tree)
	if sameRun(other, now) {
		t.Error("another step cap is the same run")
	}
}
