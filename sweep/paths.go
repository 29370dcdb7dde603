package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// A path addresses a field of experiment.Config by its JSON keys, joined by dots:
// "train.optimizer.lr". A path may stop at an object ("graph",
// "transformer"): its value then replaces the whole object.

// checkPath reports whether path names a field of experiment.Config, and which
// keys are allowed where it does not.
func checkPath(path string) error {
	if path == "out" {
		return fmt.Errorf("path out: the sweep names each run's folder; set the spec's out instead")
	}
	t := reflect.TypeFor[experiment.Config]()
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return fmt.Errorf("unknown path %q: %s is not an object", path, strings.Join(segs[:i], "."))
		}
		f, ok := experiment.JSONField(t, seg)
		if !ok {
			at := "of the configuration"
			if i > 0 {
				at = "of " + strings.Join(segs[:i], ".")
			}
			return fmt.Errorf("unknown path %q: %q is not a key %s (want one of %s)", path, seg, at, strings.Join(jsonKeys(t), ", "))
		}
		t = f.Type
	}
	return nil
}

// jsonKeys lists the JSON keys of struct t, sorted.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for _, f := range experiment.JSONFields(t) {
		keys = append(keys, experiment.JSONName(f))
	}
	sort.Strings(keys)
	return keys
}

// toTree turns a configuration into its JSON tree (objects as maps, numbers
// kept exact).
func toTree(c experiment.Config) (map[string]any, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return decodeTree(data)
}

func decodeTree(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// resolve sets each path of a copy of the base to its value and resolves
// the result as a config file is (experiment.Given.Resolve).
func resolve(base *experiment.Given, settings []Setting) (experiment.Config, error) {
	g := base.Clone()
	for _, s := range settings {
		if err := g.Set(s.Path, s.Value); err != nil {
			return experiment.Config{}, err
		}
	}
	return g.Resolve()
}

// mustMarshal marshals values this package built from JSON.
func mustMarshal(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sweep: marshal: %v", err))
	}
	return data
}
