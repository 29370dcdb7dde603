package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// keyAt finds the -key= that starts each part of a slug after the name
// (values may hold '-').
var keyAt = regexp.MustCompile(`-([a-z_]+)=`)

// TestSlugStatesTheResolvedConfig: every key=value a run folder's name
// shows after experiment.Config.Name is the value its config.json records
// (the resolved configuration, read here as JSON by the key's path), never
// a value cut short or spelled as the spec spelled it; values a folder
// name cannot show are left out; names stay within 100 characters before
// the hash. The learner comparison's spec had names cut to
// "...-eval_rollouts=5-<hash>" for eval_rollouts 500.
func TestSlugStatesTheResolvedConfig(t *testing.T) {
	spec, err := os.ReadFile("../docs/sweeps/compare-learners.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, spec string }{
		{"compare-learners", string(spec)},
		{"spelled otherwise", `{"base": {"train": {"trainer": "reinforce", "steps": 3}},
			"grid": {"train.optimizer.lr": [3e-4, 1E-2], "train.beta": [0.00030], "init": ["runs/a b"], "graph": [{"W": 2, "K": 2, "L": 2}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSpec([]byte(tc.spec), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Expand("")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Runs {
				slug := strings.TrimSuffix(r.Name, "-"+r.Hash)
				if len(slug) > 100 {
					t.Errorf("run %d: %q: %d characters before the hash, want at most 100", r.Index, slug, len(slug))
				}
				var cfg map[string]any
				data, _ := json.Marshal(r.Config)
				json.Unmarshal(data, &cfg)
				rest := strings.TrimPrefix(slug, r.Config.Name())
				at := keyAt.FindAllStringSubmatchIndex(rest, -1)
				if len(at) > 0 && at[0][0] != 0 || len(at) == 0 && rest != "" {
					t.Errorf("run %d: %q: %q after the name is not -key=value parts", r.Index, slug, rest)
				}
				for i, m := range at {
					end := len(rest)
					if i+1 < len(at) {
						end = at[i+1][0]
					}
					key, value := rest[m[2]:m[3]], rest[m[1]:end]
					found := false
					for _, set := range r.Settings {
						if set.Path != key && !strings.HasSuffix(set.Path, "."+key) {
							continue
						}
						found = true
						var v any = cfg
						for _, seg := range strings.Split(set.Path, ".") {
							v = v.(map[string]any)[seg]
						}
						if want := fmt.Sprint(v); value != want {
							t.Errorf("run %d: %q says %s=%s, config.json %s", r.Index, slug, key, value, want)
						}
					}
					if !found {
						t.Errorf("run %d: %q: %s is no path the spec sets", r.Index, slug, key)
					}
				}
				if strings.Contains(r.Name, "init=") {
					t.Errorf("run %d: %q shows init, whose value has a slash and a space", r.Index, r.Name)
				}
			}
		})
	}
}
