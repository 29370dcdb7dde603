// Package sweep runs many training runs from one spec: a base run
// configuration (experiment.Config, the JSON of a config file) and a grid and/or
// a list of values for any of its fields, addressed by JSON path
// ("train.seed", "graph", "model", "train.optimizer.lr",
// "transformer.prompt"). The spec expands in a fixed order, so index i
// always means the same run; each run gets a folder named by a readable
// slug and a hash of its resolved configuration, and a folder that is done
// is skipped, one with a checkpoint resumed. Runs are carried out by a
// local worker pool, or sliced into shards for a Slurm job array or a
// Kubernetes Indexed Job (Shard, SlurmScript, KubernetesJob); Aggregate
// reads the run folders back into one long CSV, a table of means with 95%
// intervals over seeds, and figures.
package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// Spec is a sweep: a base configuration and the values its runs take.
type Spec struct {
	// Name names the sweep (the spec file's name without .json): the
	// default output folder is runs/sweeps/<Name>.
	Name string
	// Out is the folder of the run folders ("" : runs/sweeps/<Name>).
	Out string
	// Base is the configuration every run starts from, as the spec gives
	// it: each run's settings are set on it and the result resolved as a
	// config file is (experiment.Given.Resolve), so each run gets its own
	// trainer's and model's defaults.
	Base *experiment.Given
	// Grid is the Cartesian product of values per path, sorted by path.
	Grid []Axis
	// Lists hold explicit variants, sorted by name ("list" for the spec's
	// list): each entry sets some paths. Every entry of every list is
	// combined with every entry of the others and every point of the grid.
	Lists []List
}

// List is a named list of entries.
type List struct {
	Name    string
	Entries []Entry
}

// Axis is one path of the grid and the values it takes, in the spec's
// order.
type Axis struct {
	Path   string
	Values []json.RawMessage
}

// Entry is one element of a list: values for some paths, sorted by path.
type Entry []Setting

// Setting is one value given to one path.
type Setting struct {
	Path  string
	Value json.RawMessage
}

func (s Setting) String() string { return s.Path + "=" + string(s.Value) }

// specFile is the spec's JSON.
type specFile struct {
	Out   *string                                 `json:"out"` // nil: not given
	Base  json.RawMessage                         `json:"base"`
	Grid  map[string][]json.RawMessage            `json:"grid"`
	List  []map[string]json.RawMessage            `json:"list"`
	Lists map[string][]map[string]json.RawMessage `json:"lists"`
}

// ParseSpec decodes a spec strictly: unknown keys (in the spec and in every
// configuration it holds), duplicate keys, null, trailing data, unknown
// paths, empty grids and values a field refuses are errors that name the
// key or path. name is the sweep's name.
func ParseSpec(data []byte, name string) (*Spec, error) {
	if err := checkTokens(data); err != nil {
		return nil, err
	}
	if err := experiment.CheckKeyCase(data, specFile{}); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f specFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%v: want an object with out, base, grid, list and lists", jsonMessage(err))
	}
	s := &Spec{Name: name, Base: experiment.NewGiven()}
	if f.Out != nil {
		if *f.Out == "" {
			return nil, fmt.Errorf(`out "": want the sweep's folder (leave it out for %s)`, DefaultOut(name))
		}
		s.Out = *f.Out
	}
	if f.Base != nil {
		var err error
		if s.Base, err = experiment.ParseGiven(f.Base); err == nil {
			err = s.Base.Check()
		}
		if err != nil {
			return nil, fmt.Errorf("base: %v", jsonMessage(err))
		}
	}
	if s.Base.Has("out") {
		return nil, errors.New("base.out: the sweep names each run's folder; set the spec's out (the sweep's folder) instead")
	}
	base := s.Base
	lists := f.Lists
	if f.List != nil {
		if _, ok := lists["list"]; ok {
			return nil, errors.New(`list and lists.list are both given: name the list once`)
		}
		if lists == nil {
			lists = map[string][]map[string]json.RawMessage{}
		}
		lists["list"] = f.List
	}
	if f.Grid == nil && lists == nil {
		return nil, errors.New("grid and list are both missing: a sweep needs at least one of them")
	}
	if f.Grid != nil && len(f.Grid) == 0 && len(lists) == 0 {
		return nil, errors.New("grid is empty: give at least one path and its values")
	}
	if lists != nil && len(lists) == 0 {
		return nil, errors.New("lists is empty: give at least one list, or leave it out")
	}
	owner := map[string]string{} // path -> the grid or the list that sets it
	for path := range f.Grid {
		owner[path] = "the grid"
	}
	for _, path := range sortedKeys(f.Grid) {
		where := fmt.Sprintf("grid %q", path)
		values := f.Grid[path]
		if len(values) == 0 {
			return nil, fmt.Errorf("%s: no values: give at least one", where)
		}
		if err := checkPath(path); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		seen := map[string]int{}
		for i, v := range values {
			if err := checkValue(base, path, v, fmt.Sprintf("%s value %d", where, i+1)); err != nil {
				return nil, err
			}
			c := compact(v)
			if j, ok := seen[c]; ok {
				return nil, fmt.Errorf("%s: values %d and %d are the same (%s)", where, j+1, i+1, c)
			}
			seen[c] = i
		}
		s.Grid = append(s.Grid, Axis{Path: path, Values: values})
	}
	for _, name := range sortedKeys(lists) {
		l, err := parseList(base, name, lists[name], owner)
		if err != nil {
			return nil, err
		}
		s.Lists = append(s.Lists, l)
	}
	if err := s.checkOverlaps(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkOverlaps refuses two paths one run would set where one holds the
// other (graph and graph.W): the one set last would silently win. Every
// run takes the whole grid and one entry of each list, so the paths of two
// entries of one list never meet.
func (s *Spec) checkOverlaps() error {
	type set struct {
		source      string // the grid or a list
		entry       int    // of the list (-1: the grid)
		where, path string
	}
	var sets []set
	for _, a := range s.Grid {
		sets = append(sets, set{"the grid", -1, fmt.Sprintf("grid %q", a.Path), a.Path})
	}
	for _, l := range s.Lists {
		label := "list"
		if l.Name != "list" {
			label = "lists." + l.Name
		}
		for i, e := range l.Entries {
			for _, st := range e {
				sets = append(sets, set{label, i, fmt.Sprintf("%s entry %d %q", label, i+1, st.Path), st.Path})
			}
		}
	}
	for _, a := range sets {
		for _, b := range sets {
			if strings.HasPrefix(b.path, a.path+".") && (a.source != b.source || a.entry == b.entry) {
				return fmt.Errorf("%s and %s overlap: %s is part of %s, and a run would set it twice; set it in one place", a.where, b.where, b.path, a.path)
			}
		}
	}
	return nil
}

// parseList checks one list's entries; owner records which list or the
// grid sets each path, so that no path is set in two places.
func parseList(base *experiment.Given, name string, entries []map[string]json.RawMessage, owner map[string]string) (List, error) {
	l := List{Name: name}
	label := "list"
	if name != "list" {
		label = "lists." + name
	}
	if len(entries) == 0 {
		return l, fmt.Errorf("%s is empty: give at least one entry, or leave it out", label)
	}
	for i, m := range entries {
		where := fmt.Sprintf("%s entry %d", label, i+1)
		if len(m) == 0 {
			return l, fmt.Errorf("%s: empty: set at least one path", where)
		}
		var e Entry
		for _, path := range sortedKeys(m) {
			if o, ok := owner[path]; ok && o != label {
				return l, fmt.Errorf("%s: path %q is also set in %s: give each path in one place", where, path, o)
			}
			owner[path] = label
			if err := checkPath(path); err != nil {
				return l, fmt.Errorf("%s: %v", where, err)
			}
			if err := checkValue(base, path, m[path], fmt.Sprintf("%s %q", where, path)); err != nil {
				return l, err
			}
			e = append(e, Setting{Path: path, Value: m[path]})
		}
		l.Entries = append(l.Entries, e)
	}
	return l, nil
}

// checkValue checks that v is a value the field at path takes (set alone
// on the base and decoded, not resolved: the other settings of a run may
// be what makes it valid).
func checkValue(base *experiment.Given, path string, v json.RawMessage, where string) error {
	g := base.Clone()
	err := g.Set(path, v)
	if err == nil {
		err = g.Check()
	}
	if err != nil {
		return fmt.Errorf("%s (%s): %v", where, compact(v), jsonMessage(err))
	}
	return nil
}

// checkTokens walks the whole document: duplicate keys, null and trailing
// data are refused, with the key's path.
func checkTokens(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walk(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value: want one object")
	}
	return nil
}

// walk reads one value from dec; path names it in messages.
func walk(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return errors.New("empty spec: want a JSON object with base, grid and list or lists")
		}
		return fmt.Errorf("%s: %v", orTop(path), jsonMessage(err))
	}
	switch tok {
	case nil:
		return fmt.Errorf("%s: null is not a value here: leave the key out or give a value", orTop(path))
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%s: %v", orTop(path), jsonMessage(err))
			}
			key := kt.(string)
			sub := key
			if path != "" {
				sub = path + "." + key
			}
			if seen[key] {
				return fmt.Errorf("%s: duplicate key", sub)
			}
			seen[key] = true
			if err := walk(dec, sub); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walk(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	if err != nil {
		return fmt.Errorf("%s: %v", orTop(path), jsonMessage(err))
	}
	return nil
}

func orTop(path string) string {
	if path == "" {
		return "spec"
	}
	return path
}

// jsonMessage makes encoding/json's errors read as this package's: one
// line, without the "json: " prefix.
func jsonMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		msg = "unexpected end of the JSON"
	}
	return strings.ReplaceAll(msg, "\n", " ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// plain prints a JSON value on one line, a string without its quotes.
func plain(v json.RawMessage) string {
	var str string
	if json.Unmarshal(v, &str) == nil {
		return str
	}
	return compact(v)
}

// compact prints a JSON value on one line.
func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}
