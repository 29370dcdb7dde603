package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// Given is a run's configuration as the user gave it: a JSON object that
// holds the keys the user set and no others (a config file with the
// command line's flags set on top, or a sweep's base with a run's
// settings). Resolve turns it into the Config the run trains, in the one
// place where a value given is used exactly or refused: the model's and
// trainer's defaults first, the given values on top, every given field
// that does not apply to the run refused.
type Given struct{ tree map[string]any }

// NewGiven is a configuration where nothing is given: Resolve gives
// DefaultConfig's run.
func NewGiven() *Given { return &Given{tree: map[string]any{}} }

// ParseGiven reads a configuration file's JSON object, strictly: an empty
// file, null, a non-object, duplicate keys and trailing data are refused
// with a message naming the key. Unknown keys and type errors are found
// by Check and Resolve.
func ParseGiven(data []byte) (*Given, error) {
	if err := checkObject(data); err != nil {
		return nil, &InputError{err}
	}
	v, err := decodeValue(data)
	if err != nil {
		return nil, err
	}
	return &Given{tree: v.(map[string]any)}, nil
}

// decodeValue decodes one checked JSON value, numbers kept as written.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, inputf("not JSON: %v", err)
	}
	if dec.More() {
		return nil, inputf("more than one JSON value")
	}
	return v, nil
}

// Clone is a copy of g that Set does not share.
func (g *Given) Clone() *Given {
	var tree map[string]any
	dec := json.NewDecoder(bytes.NewReader(g.JSON()))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		panic(fmt.Sprintf("experiment: clone: %v", err)) // g holds decoded JSON
	}
	return &Given{tree: tree}
}

// JSON is the given object.
func (g *Given) JSON() []byte {
	data, err := json.Marshal(g.tree)
	if err != nil {
		panic(fmt.Sprintf("experiment: given: %v", err)) // g holds decoded JSON
	}
	return data
}

// Set gives value (JSON) to the field at path, a dotted path of
// config.json's keys ("train.optimizer.lr", "graph.W", "transformer"). A
// value for an object path replaces the object given there. A field of an
// object not given yet starts that object: empty, so that the defaults
// fill the rest, except the graph, which a given object replaces whole:
// "graph.W" alone sets W of the default graph.
func (g *Given) Set(path string, value json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := walkValue(dec, path); err != nil {
		return &InputError{err}
	}
	v, err := decodeValue(value)
	if err != nil {
		return inputf("%s: %v", path, err)
	}
	segs := strings.Split(path, ".")
	m := g.tree
	for i, seg := range segs[:len(segs)-1] {
		at := strings.Join(segs[:i+1], ".")
		switch sub := m[seg].(type) {
		case map[string]any:
			m = sub
		case nil:
			next := map[string]any{}
			if at == "graph" {
				d := tasks.DefaultConfig()
				next = map[string]any{"W": json.Number(fmt.Sprint(d.W)), "K": json.Number(fmt.Sprint(d.K)), "L": json.Number(fmt.Sprint(d.L))}
			}
			m[seg], m = next, next
		default:
			return inputf("%s: %s is given a value that is not an object", path, at)
		}
	}
	m[segs[len(segs)-1]] = v
	return nil
}

// Has reports whether the field at path (or an object holding it) is
// given.
func (g *Given) Has(path string) bool {
	var v any = g.tree
	for _, seg := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[seg]; !ok {
			return false
		}
	}
	return true
}

// leaves lists the paths of the given values, sorted: every value that is
// not an object, and every empty object.
func (g *Given) leaves() []string {
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		m, ok := v.(map[string]any)
		if !ok || len(m) == 0 && prefix != "" {
			out = append(out, prefix)
			return
		}
		for k, x := range m {
			walk(join(prefix, k), x)
		}
	}
	walk("", g.tree)
	sort.Strings(out)
	return out
}

// Check decodes the given object strictly, without resolving it: unknown
// keys and type errors are refused, naming the field.
func (g *Given) Check() error {
	var c Config
	return decodeOver(g.JSON(), &c)
}

// NotApplicable refuses a given field that does not apply to the run.
type NotApplicable struct {
	Path string          // the field's path
	To   string          // the runs it applies to (trainers.Field.To)
	Run  trainers.Choice // this run
}

func (e *NotApplicable) Error() string {
	return fmt.Sprintf("%s: applies to %s; this run is %s: leave it out", e.Path, e.To, e.Run)
}

// Empty refuses a given field that is empty where empty means the
// default (out, init): the value given would be replaced by it.
type Empty struct {
	Path string // the field's path
	Want string // what it takes, and what leaving it out gives
}

func (e *Empty) Error() string { return fmt.Sprintf("%s \"\": want %s", e.Path, e.Want) }

// Resolve is the configuration the user gave: the defaults of its model
// and trainer (Defaults), the given values decoded on top, then checked.
// A value given is used exactly: a given field that does not apply to the
// run (trainers.Fields) is refused even as zero (a *NotApplicable in the
// InputError), as is a given empty out or init (an *Empty), every other is
// validated as it is (Config.Resolve).
// Defaults that depend on a given value follow it: an optimizer named
// without a lr takes its default rate for the trainer
// (trainers.DefaultOptim), init identity without a dim its width 0 (the
// vocabulary), the transformer's table_lr the optimiser's rate when
// the trainer's rule says so (trainers.DefaultTableLR), and its default
// hindsight targets off when a prompt shows it its target.
func (g *Given) Resolve() (Config, error) {
	data := g.JSON()
	var probe Config
	if err := decodeOver(data, &probe); err != nil {
		return Config{}, err
	}
	m, k := trainers.BigramModel, trainers.RLVRExact
	if g.Has("model") {
		m = probe.Model
	}
	if g.Has("train.trainer") {
		k = probe.Train.Trainer
	}
	if !k.Valid() {
		return Config{}, inputf("trainer %q: want one of %s", k, trainers.KindNames(trainers.Kinds))
	}
	if err := m.Check(trainers.Defaults(k, m), trainers.Setup{Model: m, Transformer: trainers.DefaultTransformerOptions(k)}); err != nil {
		return Config{}, &InputError{err}
	}
	c := Defaults(m, k)
	if g.Has("train.optimizer.name") {
		c.Train.Optim = trainers.DefaultOptim(k, m, probe.Train.Optim.Name)
	}
	if c.Transformer != nil && g.Has("transformer.init") && probe.Transformer.Init == "identity" {
		c.Transformer.Dim = 0 // the width of identity is the vocabulary
	}
	if err := decodeOver(data, &c); err != nil {
		return c, err
	}
	for _, f := range []struct{ path, value, want string }{
		{"out", c.Out, "a run folder (leave it out for runs/<trainer>-<graph>-seed<seed>)"},
		{"init", c.Init, "a run folder holding a bigram checkpoint (leave it out for the pretrained world model)"},
	} {
		if g.Has(f.path) && f.value == "" {
			return c, &InputError{&Empty{Path: f.path, Want: f.want}}
		}
	}
	ch := c.Choice()
	for _, p := range g.leaves() {
		if f, ok := trainers.LookupField(p); ok && !f.Applies(ch) {
			return c, &InputError{&NotApplicable{Path: p, To: f.To, Run: ch}}
		}
	}
	if g.Has("graph.max_bytes") && c.Graph.MaxBytes == 0 {
		return c, inputf("graph.max_bytes 0: want a budget in bytes >= 1 (leave it out for the default)")
	}
	if c.Transformer != nil && c.Transformer.Prompt && !g.Has("train.hindsight") {
		c.Train.Hindsight = false // the default's walks need a policy that does not see its target
	}
	if c.Transformer != nil && !g.Has("transformer.table_lr") {
		c.Transformer.TableLR = trainers.DefaultTableLR(c.Train)
	}
	return c.Resolve()
}

// dropKeys rewrites the JSON object data (at path) without the keys drop
// names (by path), keeping the order of the rest.
func dropKeys(data []byte, path string, drop func(path string) bool) ([]byte, error) {
	if len(data) == 0 || data[0] != '{' {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		p := join(path, key)
		if drop(p) {
			continue
		}
		sub, err := dropKeys(raw, p, drop)
		if err != nil {
			return nil, err
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(sub)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
