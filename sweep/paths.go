package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// A path addresses a field of experiment.Config by its JSON keys, joined by dots:
// "train.optimizer.lr". A path may stop at an object ("graph",
// "transformer"): its value then replaces the whole object.

// defaults fill an object that the base leaves out (nil pointer) when a path
// sets one of its fields: "transformer.prompt" over a base without
// transformer options starts from the default options.
var defaults = map[reflect.Type]func() any{
	reflect.TypeFor[trainers.TransformerOptions](): func() any { return trainers.DefaultTransformerOptions() },
}

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
		f, ok := jsonField(t, seg)
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

// jsonField finds the field of struct t whose JSON key is key.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	for _, f := range jsonFields(t) {
		if jsonName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// jsonFields are the fields of struct t that encoding/json encodes as keys:
// the fields of an untagged embedded struct (trainers.TransformerOptions
// embeds nn.TransformerArch) are promoted to t's level, as json does.
func jsonFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if jsonName(f) != "" {
			out = append(out, f)
		}
	}
	return out
}

// jsonName is a field's JSON key ("" when it has none).
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

// jsonKeys lists the JSON keys of struct t, sorted.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for _, f := range jsonFields(t) {
		keys = append(keys, jsonName(f))
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

// apply sets each path of a copy of the base tree to its value and decodes
// the result strictly into a configuration (unknown keys and type errors
// are refused).
func apply(base map[string]any, settings []Setting) (experiment.Config, error) {
	tree, err := decodeTree(mustMarshal(base))
	if err != nil {
		return experiment.Config{}, err
	}
	for _, s := range settings {
		if err := set(tree, reflect.TypeFor[experiment.Config](), strings.Split(s.Path, "."), s.Value); err != nil {
			return experiment.Config{}, err
		}
	}
	var c experiment.Config // every key is in the tree: decode over zero values
	if err := experiment.Decode(mustMarshal(tree), &c); err != nil {
		return experiment.Config{}, fmt.Errorf("%s", jsonMessage(err))
	}
	return c, nil
}

// set puts v at path segs of tree, whose type is t; an object the tree
// lacks is created from its defaults (or empty).
func set(tree map[string]any, t reflect.Type, segs []string, v json.RawMessage) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	f, ok := jsonField(t, segs[0])
	if !ok {
		return fmt.Errorf("unknown key %q", segs[0])
	}
	if len(segs) == 1 {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return fmt.Errorf("%s", jsonMessage(err))
		}
		tree[segs[0]] = x
		return nil
	}
	sub, ok := tree[segs[0]].(map[string]any)
	if !ok {
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		var init any = map[string]any{}
		if d, ok := defaults[ft]; ok {
			init = d()
		}
		m, err := decodeTree(mustMarshal(init))
		if err != nil {
			return err
		}
		sub = m
		tree[segs[0]] = sub
	}
	return set(sub, f.Type, segs[1:], v)
}

// mustMarshal marshals values this package built from JSON.
func mustMarshal(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sweep: marshal: %v", err))
	}
	return data
}
