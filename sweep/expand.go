package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// Run is one run of a sweep.
type Run struct {
	// Index is the run's place in the expansion: the lists outermost
	// (sorted by name, each in the spec's order), then the grid's paths in
	// sorted order, the last path fastest, each path's values in the
	// spec's order.
	Index int
	// Name is the run's folder name: a readable slug and Hash.
	Name string
	// Dir is the run folder, under the sweep's folder.
	Dir string
	// Settings are the values the spec gives this run, sorted by path.
	Settings []Setting
	// Config is the resolved configuration, Out = Dir.
	Config experiment.Config
	// Hash is a short hash of the resolved configuration without its
	// folder (Identity).
	Hash string
}

// Plan is an expanded spec: every run, in index order.
type Plan struct {
	Spec *Spec
	Out  string // the sweep's folder
	Runs []Run
}

// DefaultOut is the sweep's folder when neither the spec nor the command
// names one.
func DefaultOut(name string) string { return filepath.Join("runs", "sweeps", name) }

// MaxRuns bounds a sweep's size: a spec of more runs is refused before
// they are listed.
const MaxRuns = 100000

// Size is the number of runs the spec expands to (MaxRuns+1 when more).
func (s *Spec) Size() int {
	n := 1
	for _, l := range s.Lists {
		n = min(n*len(l.Entries), MaxRuns+1)
	}
	for _, a := range s.Grid {
		n = min(n*len(a.Values), MaxRuns+1)
	}
	return n
}

// Expand lists the runs of the spec into the folder out ("": the spec's
// out, else DefaultOut). Every run is resolved (experiment.Given.Resolve); a
// combination the configuration refuses, or two runs with the same
// resolved configuration, are errors that name the run's index.
func (s *Spec) Expand(out string) (*Plan, error) {
	if out == "" {
		out = s.Out
	}
	if out == "" {
		out = DefaultOut(s.Name)
	}
	if n := s.Size(); n > MaxRuns {
		return nil, fmt.Errorf("more than %d runs: split the sweep into several specs", MaxRuns)
	}
	// Every list and every grid path is one digit of a mixed-radix number:
	// the lists first (sorted by name), then the grid's paths, the last
	// fastest.
	var digits [][][]Setting // each digit's options
	for _, l := range s.Lists {
		var d [][]Setting
		for _, e := range l.Entries {
			d = append(d, e)
		}
		digits = append(digits, d)
	}
	for _, a := range s.Grid {
		var d [][]Setting
		for _, v := range a.Values {
			d = append(d, []Setting{{a.Path, v}})
		}
		digits = append(digits, d)
	}
	total := 1
	for _, d := range digits {
		total *= len(d)
	}
	p := &Plan{Spec: s, Out: out}
	seen := map[string]int{}
	for k := range total {
		var settings []Setting
		rest := k
		for i := len(digits) - 1; i >= 0; i-- {
			d := digits[i]
			settings = append(settings, d[rest%len(d)]...)
			rest /= len(d)
		}
		// Sorted by path, an object comes before its fields: "graph"
		// then "graph.L".
		sort.SliceStable(settings, func(i, j int) bool { return settings[i].Path < settings[j].Path })
		index := len(p.Runs)
		where := fmt.Sprintf("run %d (%s)", index, describe(settings))
		cfg, err := resolve(s.Base, settings)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, jsonMessage(err))
		}
		id, hash := Identity(cfg)
		if j, ok := seen[id]; ok {
			return nil, fmt.Errorf("%s: the same resolved configuration as run %d: every run of a sweep must differ", where, j)
		}
		seen[id] = index
		name := slug(cfg, settings) + "-" + hash
		cfg.Out = filepath.Join(out, name)
		p.Runs = append(p.Runs, Run{Index: index, Name: name, Dir: cfg.Out, Settings: settings, Config: cfg, Hash: hash})
	}
	return p, nil
}

// Identity is a resolved configuration without its folder, as canonical
// JSON, and its short hash (8 hex digits of SHA-256): what makes two runs
// the same run wherever their folders are.
//
// A field added to the configuration after runs were made is left out at
// the value that keeps the old behaviour (neutral), so those runs keep
// their identity and folder, and a sweep run again finds them done
// (TestIdentityIsStable); config.json still records it.
func Identity(c experiment.Config) (id, hash string) {
	c.Out = ""
	data := mustMarshal(c)
	for _, n := range neutral {
		data = bytes.Replace(data, []byte(n), []byte(","), 1)
	}
	sum := sha256.Sum256(data)
	return string(data), hex.EncodeToString(sum[:4])
}

// neutral are the added fields at their neutral values, as json.Marshal
// writes them between two others.
var neutral = []string{`,"step_tokens":0,`, `,"hindsight":false,`}

// describe prints settings as path=value, space-separated.
func describe(settings []Setting) string {
	parts := make([]string, len(settings))
	for i, s := range settings {
		parts[i] = s.Path + "=" + plain(s.Value)
	}
	return strings.Join(parts, " ")
}

// named are the paths experiment.Config.Name already shows.
var named = map[string]bool{"model": true, "train.trainer": true, "graph": true, "graph.W": true, "graph.K": true,
	"graph.L": true, "graph.branches": true, "train.seed": true, "transformer.prompt": true,
	"train.supervised_backward": true, "train.distill_traces": true, "train.train_source": true, "train.hindsight": true}

// slugValue is a value a folder name can show as it is.
var slugValue = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)

// maxSlug bounds a slug's length; the hash that follows it keeps names
// unique.
const maxSlug = 100

// slug is a readable folder name that states only what is true of the
// resolved configuration c: experiment.Config.Name, then every other path
// the spec sets for this run as key=value (its last key), the value read
// from c, not from the spec (a value the configuration resolves otherwise
// is shown as it resolved). A value a folder name cannot show as it is (an
// object, a string with a slash or a space) is left out, and so are the
// parts past maxSlug characters: whole parts, never a cut value.
func slug(c experiment.Config, settings []Setting) string {
	name := c.Name()
	tree, err := toTree(c)
	if err != nil {
		return name
	}
	for _, s := range settings {
		if named[s.Path] {
			continue
		}
		v, ok := lookup(tree, s.Path)
		if !ok || !slugValue.MatchString(v) {
			continue
		}
		part := "-" + s.Path[strings.LastIndex(s.Path, ".")+1:] + "=" + v
		if len(name)+len(part) > maxSlug {
			break
		}
		name += part
	}
	return name
}

// lookup is the value at path of a configuration's JSON tree, printed as
// plain does (a string without its quotes).
func lookup(tree map[string]any, path string) (string, bool) {
	var v any = tree
	for _, seg := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[seg]; !ok {
			return "", false
		}
	}
	return plain(mustMarshal(v)), true
}

// Keep narrows the plan to the runs keep accepts; they keep their indices,
// so a narrowed plan's runs and folders are the full plan's.
func (p *Plan) Keep(keep func(Run) bool) {
	var kept []Run
	for _, r := range p.Runs {
		if keep(r) {
			kept = append(kept, r)
		}
	}
	p.Runs = kept
}

// Describe prints the run's settings as path=value, space-separated.
func (r Run) Describe() string { return describe(r.Settings) }
