package trainers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// jsonLeaves lists the JSON keys of struct type t as paths under prefix,
// descending into nested and embedded structs, with a reflect index path
// to each field.
func jsonLeaves(t reflect.Type, prefix string, index []int) map[string][]int {
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(slices.Clone(index), i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			for k, v := range jsonLeaves(f.Type, prefix, idx) {
				out[k] = v
			}
			continue
		}
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			for k, v := range jsonLeaves(f.Type, prefix+name+".", idx) {
				out[k] = v
			}
			continue
		}
		out[prefix+name] = idx
	}
	return out
}

// TestFieldsCoverTheConfig: the applicability table names every key of
// Config (under train.) and TransformerOptions (under transformer.), once,
// and no key they lack but the run-level ones.
func TestFieldsCoverTheConfig(t *testing.T) {
	keys := jsonLeaves(reflect.TypeFor[Config](), "train.", nil)
	for k := range jsonLeaves(reflect.TypeFor[TransformerOptions](), "transformer.", nil) {
		keys[k] = nil
	}
	seen := map[string]bool{}
	for _, f := range Fields {
		if seen[f.Key] {
			t.Errorf("%s: twice in Fields", f.Key)
		}
		seen[f.Key] = true
		if _, ok := keys[f.Key]; !ok && !slices.Contains([]string{"transformer", "init", "teacher"}, f.Key) {
			t.Errorf("%s: in Fields, not a key of the configuration", f.Key)
		}
	}
	for k := range keys {
		if !seen[k] {
			t.Errorf("%s: a key of the configuration missing from Fields", k)
		}
	}
}

// choices lists every run: each model with each trainer it supports,
// under every optimiser, baseline and transformer initialisation.
func choices() []Choice {
	var out []Choice
	for _, m := range Models() {
		inits := []string{""}
		if m == TransformerModel {
			inits = []string{"table", "identity"}
		}
		for _, k := range m.Kinds() {
			for _, opt := range []string{"sign", "sgd", "adam"} {
				for _, b := range Baselines {
					for _, init := range inits {
						out = append(out, Choice{Model: m, Trainer: k, Optimizer: opt, Baseline: b, Init: init})
					}
				}
			}
		}
	}
	return out
}

// TestDefaultsFollowTheTable: Defaults(k, m) is valid on m, and every
// field it sets (non-zero) applies to k on m under some choice of the
// options; DefaultTransformerOptions(k) is valid.
func TestDefaultsFollowTheTable(t *testing.T) {
	leaves := jsonLeaves(reflect.TypeFor[Config](), "train.", nil)
	all := choices()
	for _, m := range Models() {
		for _, k := range m.Kinds() {
			c := Defaults(k, m)
			s := Setup{Model: m, Transformer: DefaultTransformerOptions(k)}
			if err := c.Validate(m); err != nil {
				t.Errorf("%s on %s: %v", k, m, err)
			}
			if err := m.Check(c, s); err != nil {
				t.Errorf("%s on %s: %v", k, m, err)
			}
			v := reflect.ValueOf(c)
			for key, idx := range leaves {
				if v.FieldByIndex(idx).IsZero() {
					continue
				}
				if !slices.ContainsFunc(all, func(ch Choice) bool { return ch.Model == m && ch.Trainer == k && Applies(key, ch) }) {
					t.Errorf("Defaults(%s, %s) sets %s, which applies to no %s run on the %s", k, m, key, k, m)
				}
			}
		}
	}
}

// perturb sets each field of c whose key keep accepts to a value unlike
// its default (a number 3 or 0.3 more, the other truth value, another
// name).
func perturb(c *Config, keep func(key string) bool) {
	v := reflect.ValueOf(c).Elem()
	for key, idx := range jsonLeaves(reflect.TypeFor[Config](), "train.", nil) {
		if !keep(key) {
			continue
		}
		f := v.FieldByIndex(idx)
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(f.Int() + 3)
		case reflect.Uint64:
			f.SetUint(f.Uint() + 3)
		case reflect.Float64:
			f.SetFloat(f.Float() + 0.3)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.String:
			f.SetString(map[string]string{"train.lr_decay": "linear", "train.loss_agg": "sequence", "train.baseline": "batch"}[key])
		}
	}
}

// TestFieldsThatDoNotApplyAreNotRead is the table's truth: a few steps of
// every trainer on the bigram, and of sft and ppo on a small transformer,
// from a random starting policy, give the same metrics bit for bit when
// the fields that do not apply to the run are set to other values (all at
// once; on a difference, each alone, to name it).
func TestFieldsThatDoNotApplyAreNotRead(t *testing.T) {
	g := graph(t, tasks.Config{W: 2, K: 2, L: 2})
	teacher := eval.PolicyRLVRLimit(g)
	small := DefaultTransformerOptions(PPO)
	small.Dim, small.Context, small.Stride, small.Windows, small.EvalRollouts = 4, 2, 4, 4, 20
	for _, tc := range []struct {
		m Model
		k Kind
	}{{BigramModel, Pretrain}, {BigramModel, SFT}, {BigramModel, RLVRExact}, {BigramModel, Distill}, {BigramModel, Reinforce},
		{BigramModel, PPO}, {BigramModel, GRPO}, {BigramModel, RLOO}, {BigramModel, DrGRPO}, {TransformerModel, SFT}, {TransformerModel, PPO}} {
		c := Defaults(tc.k, tc.m)
		ch := Choice{Model: tc.m, Trainer: tc.k, Optimizer: c.Optim.Name, Baseline: c.Baseline}
		metrics := func(keep func(string) bool) string {
			c := Defaults(tc.k, tc.m)
			c.Steps, c.Until, c.LogEvery, c.Rollouts = 3, 0, 1, min(c.Rollouts, 16)
			s := Setup{Model: tc.m, Teacher: teacher, Init: randomLogits(g, 2), Transformer: small}
			if tc.m == TransformerModel {
				s.Transformer.TableLR = DefaultTableLR(c)
			}
			perturb(&c, keep)
			tr, err := New(c, g, s)
			if err != nil {
				t.Fatalf("%s on %s: %v", tc.k, tc.m, err)
			}
			defer tr.Close()
			var rows strings.Builder
			if _, err := tr.Run(context.Background(), Hooks{Row: func(r Row) error {
				r.StepSeconds = 0 // timed
				fmt.Fprintf(&rows, "%+v\n", r)
				return nil
			}}); err != nil {
				t.Fatalf("%s on %s: %v", tc.k, tc.m, err)
			}
			return rows.String()
		}
		notApplying := func(key string) bool { return !Applies(key, ch) }
		want := metrics(func(string) bool { return false })
		if metrics(notApplying) == want {
			continue
		}
		for key := range jsonLeaves(reflect.TypeFor[Config](), "train.", nil) {
			if notApplying(key) && metrics(func(k string) bool { return k == key }) != want {
				t.Errorf("%s: does not apply to %s, yet changes its metrics", key, ch)
			}
		}
	}
}
