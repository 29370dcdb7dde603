package sweep

import (
	"fmt"
	"strings"
	"testing"
)

// small is a sweep of 2 seeds x 2 sizes of exact RLVR, a fraction of a
// second each.
const small = `{
  "base": {"train": {"trainer": "rlvr-exact", "steps": 400, "until": 0.001, "log_every": 5}, "checkpoint_every": 20},
  "grid": {
    "train.seed": [1, 2],
    "graph": [{"W": 2, "K": 2, "L": 2}, {"W": 3, "K": 2, "L": 2}]
  }
}`

func TestExpandOrder(t *testing.T) {
	s, err := ParseSpec([]byte(small), "small")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Expand("")
	if err != nil {
		t.Fatal(err)
	}
	if p.Out != "runs/sweeps/small" {
		t.Errorf("out %q, want runs/sweeps/small", p.Out)
	}
	want := []string{
		`graph={"W":2,"K":2,"L":2} train.seed=1`,
		`graph={"W":2,"K":2,"L":2} train.seed=2`,
		`graph={"W":3,"K":2,"L":2} train.seed=1`,
		`graph={"W":3,"K":2,"L":2} train.seed=2`,
	}
	if len(p.Runs) != len(want) {
		t.Fatalf("got %d runs, want %d", len(p.Runs), len(want))
	}
	for i, r := range p.Runs {
		if got := describe(r.Settings); got != want[i] || r.Index != i {
			t.Errorf("run %d: got %d %s, want %s", i, r.Index, got, want[i])
		}
		if !strings.HasPrefix(r.Name, "rlvr-exact-W") || !strings.HasSuffix(r.Name, "-"+r.Hash) || len(r.Hash) != 8 {
			t.Errorf("run %d: name %q, hash %q", i, r.Name, r.Hash)
		}
		if r.Config.Out != r.Dir || r.Config.Train.Steps != 400 || r.Config.Train.Optim.Name != "sign" {
			t.Errorf("run %d: config %+v", i, r.Config)
		}
	}
	if g := p.Runs[2].Config.Graph; g.W != 3 || g.K != 2 || g.L != 2 {
		t.Errorf("run 2: graph %+v", g)
	}
}

// TestBadSpecs: every bad spec is refused in one line naming the key, the
// path or the run.
func TestBadSpecs(t *testing.T) {
	for _, c := range []struct{ name, spec, want string }{
		{"unknown path", `{"grid": {"train.sed": [1]}}`, `grid "train.sed": unknown path "train.sed": "sed" is not a key of train (want one of`},
		{"unknown top path", `{"grid": {"modle": ["bigram"]}}`, `"modle" is not a key of the configuration`},
		{"path through a value", `{"grid": {"train.seed.x": [1]}}`, `unknown path "train.seed.x": train.seed is not an object`},
		{"empty grid", `{"grid": {}}`, "grid is empty"},
		{"no grid or list", `{"base": {}}`, "grid and list are both missing"},
		{"empty values", `{"grid": {"train.seed": []}}`, `grid "train.seed": no values`},
		{"empty list", `{"list": []}`, "list is empty"},
		{"empty entry", `{"list": [{}]}`, "list entry 1: empty"},
		{"duplicate key", `{"grid": {"train.seed": [1], "train.seed": [2]}}`, "grid.train.seed: duplicate key"},
		{"duplicate key in base", `{"base": {"model": "bigram", "model": "transformer"}, "grid": {"train.seed": [1]}}`, "base.model: duplicate key"},
		{"null value", `{"grid": {"train.seed": [1, null]}}`, "grid.train.seed[1]: null is not a value here"},
		{"null base", `{"base": null, "grid": {"train.seed": [1]}}`, "base: null"},
		{"unknown spec key", `{"gird": {"train.seed": [1]}}`, `unknown field "gird"`},
		{"unknown base key", `{"base": {"trian": {}}, "grid": {"train.seed": [1]}}`, `base: unknown field "trian"`},
		{"type error", `{"grid": {"train.seed": [1, "x"]}}`, `grid "train.seed" value 2 ("x"): `},
		{"refused name", `{"grid": {"train.trainer": ["ppo", "nope"]}}`, `grid "train.trainer" value 2 ("nope"): trainer "nope": want one of`},
		{"unknown key in a value", `{"grid": {"graph": [{"W": 3, "X": 1}]}}`, `grid "graph" value 1 ({"W":3,"X":1}): unknown field "X"`},
		{"same value twice", `{"grid": {"train.seed": [1, 1]}}`, `grid "train.seed": values 1 and 2 are the same (1)`},
		{"out path", `{"grid": {"out": ["a"]}}`, "path out: the sweep names each run's folder"},
		{"base out", `{"base": {"out": "x"}, "grid": {"train.seed": [1]}}`, "base.out"},
		{"path in list and grid", `{"grid": {"train.seed": [1]}, "list": [{"train.seed": 2}]}`, `list entry 1: path "train.seed" is also set in the grid`},
		{"path in two lists", `{"lists": {"a": [{"train.seed": 1}], "b": [{"train.seed": 2}]}}`, `lists.b entry 1: path "train.seed" is also set in lists.a`},
		{"object path and its field in the grid", `{"grid": {"graph": [{"W": 3, "K": 3, "L": 2}], "graph.W": [4]}}`, `grid "graph" and grid "graph.W" overlap: graph.W is part of graph`},
		{"object path in the grid, its field in a list", `{"grid": {"train.optimizer.lr": [0.1]}, "list": [{"train.optimizer": {"name": "adam"}}]}`, `list entry 1 "train.optimizer" and grid "train.optimizer.lr" overlap`},
		{"object path and its field in one entry", `{"list": [{"graph": {"W": 3, "K": 3, "L": 2}, "graph.L": 1}]}`, `list entry 1 "graph" and list entry 1 "graph.L" overlap`},
		{"object path and its field in two lists", `{"lists": {"a": [{"train.seed": 1}, {"graph.W": 2}], "b": [{"graph": {"W": 3, "K": 3, "L": 2}}]}}`, `lists.b entry 1 "graph" and lists.a entry 2 "graph.W" overlap`},
		{"list and lists.list", `{"list": [{"train.seed": 1}], "lists": {"list": [{"model": "bigram"}]}}`, "list and lists.list are both given"},
		{"empty named list", `{"lists": {"a": []}}`, "lists.a is empty"},
		{"trailing data", `{"grid": {"train.seed": [1]}} {}`, "more than one JSON value"},
		{"not an object", `[1]`, "cannot unmarshal array"},
		{"empty", ``, "empty spec"},
		{"truncated", `{"grid": {"train.seed": [1`, "unexpected"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSpec([]byte(c.spec), "x")
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line with %q", err, c.want)
			}
		})
	}
}

// TestBadCombination: a combination that resolves to an invalid run is
// refused at expansion, naming the run's index and settings.
func TestBadCombination(t *testing.T) {
	for _, c := range []struct{ name, spec, want string }{
		{"bigram with transformer options", `{"base": {"train": {"trainer": "ppo"}}, "grid": {"model": ["transformer", "bigram"], "transformer.prompt": [true]}}`,
			`run 1 (model=bigram transformer.prompt=true): transformer.prompt: applies to the transformer; this run is ppo on the bigram`},
		{"W=0", `{"grid": {"graph": [{"W": 2, "K": 2, "L": 2}, {"W": 0, "K": 2, "L": 2}]}}`, `run 1 (graph={"W":0,"K":2,"L":2}): W=0: must be an integer in`},
		{"rlvr-exact on a transformer", `{"list": [{"model": "transformer", "train.trainer": "rlvr-exact"}]}`, "run 0 (model=transformer train.trainer=rlvr-exact): trainers: model transformer trains with"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSpec([]byte(c.spec), "x")
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Expand("")
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line with %q", err, c.want)
			}
		})
	}
}

// TestEachRunItsOwnDefaults: a sweep over trainers resolves each run as a
// config file is, from the spec's base as given: each trainer gets its own
// defaults (ppo Adam at 0.025, sft sign descent at 0.01), a base field runs
// it does not apply to are refused for, and the run's hash is of its
// config.json (the fields that apply to it).
func TestEachRunItsOwnDefaults(t *testing.T) {
	s, err := ParseSpec([]byte(`{"base": {"graph": {"W": 2, "K": 2, "L": 2}, "train": {"steps": 5}},
		"list": [{"train.trainer": "ppo"}, {"train.trainer": "sft"}, {"train.trainer": "ppo", "train.optimizer.name": "sgd"}]}`), "x")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Expand("")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"adam 0.025 256", "sign 0.01 0", "sgd 0.01 256"} {
		tr := p.Runs[i].Config.Train
		if got := fmt.Sprintf("%s %g %d", tr.Optim.Name, tr.Optim.LR, tr.Rollouts); got != want || tr.Steps != 5 {
			t.Errorf("run %d: %s, %d steps; want %s, 5 steps", i, got, tr.Steps, want)
		}
		id, _ := Identity(p.Runs[i].Config)
		if strings.Contains(id, "epochs") != (tr.Trainer == "ppo") {
			t.Errorf("run %d: identity %s", i, id)
		}
	}
	s, _ = ParseSpec([]byte(`{"base": {"train": {"epochs": 3}}, "list": [{"train.trainer": "ppo"}, {"train.trainer": "sft"}]}`), "x")
	if _, err := s.Expand(""); err == nil || !strings.Contains(err.Error(), "run 1 (train.trainer=sft): train.epochs: applies to ppo") {
		t.Errorf("got %v, want run 1 refused for train.epochs", err)
	}
}

// TestEntriesOfOneListMayOverlap: two entries of one list never meet in a
// run, so one may set graph and the other graph.W.
func TestEntriesOfOneListMayOverlap(t *testing.T) {
	s, err := ParseSpec([]byte(`{"list": [{"graph": {"W": 3, "K": 3, "L": 2}}, {"graph.W": 2}]}`), "x")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Expand("")
	if err != nil || len(p.Runs) != 2 {
		t.Fatalf("got %v, want 2 runs", err)
	}
}
