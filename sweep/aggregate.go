package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// Within is the relative distance to the limit hitting time that counts as
// reached in the aggregate's steps and wall time "to within 5%".
const Within = 0.05

// RunData is one run as the aggregate reads it back.
type RunData struct {
	Name   string            // folder name
	Dir    string            // "" when no folder was found
	Index  int               // in the sweep's index (-1: not indexed)
	Sweep  string            // the label of the sweep whose index lists it ("": none; SweepFolder.Label)
	sweep  int               // which of Collect's dirs listed or held it first
	Config experiment.Config // resolved, without its folder
	Fields map[string]string
	// Summary and Metrics of a completed run; Problem says why a run does
	// not count: missing, incomplete, damaged or stalled ("": it counts).
	Summary *experiment.Summary
	Metrics *experiment.Metrics
	Problem string
}

// Reach returns the first logged step at which the hitting time is within
// Within of the limit, and the wall seconds then (NaN, NaN: never). A run
// that starts above its limit (RLVR, distillation) gets there when it falls
// to (1+Within) limit, and one that starts below (SFT, whose limit is the
// exponential SFT hitting time) when it rises to (1-Within) limit.
func (r *RunData) Reach() (step, wall float64) {
	if r.Summary == nil || r.Metrics == nil {
		return math.NaN(), math.NaN()
	}
	limit, start := experiment.Value(r.Summary.LimitHittingTime), experiment.Value(r.Summary.InitialHittingTime)
	steps, h, w := r.Metrics.Column("step"), r.Metrics.Column("hitting_time"), r.Metrics.Column("wall_seconds")
	for i := range steps {
		if h == nil {
			break
		}
		if start > limit && h[i] <= (1+Within)*limit || start <= limit && h[i] >= (1-Within)*limit {
			return steps[i], w[i]
		}
	}
	return math.NaN(), math.NaN()
}

// SuccessRate is the last metrics row's success rate: the sampled batch's
// share of rollouts that hit their target (success_rate), else the Monte
// Carlo evaluation's (mc_success_rate); NaN for exact trainers, whose
// policies hit with probability 1.
func (r *RunData) SuccessRate() float64 {
	if r.Metrics == nil || len(r.Metrics.Rows) == 0 {
		return math.NaN()
	}
	for _, name := range []string{"success_rate", "mc_success_rate"} {
		if c := r.Metrics.Column(name); c != nil && !math.IsNaN(c[len(c)-1]) {
			return c[len(c)-1]
		}
	}
	return math.NaN()
}

// Collection is every run of one or more sweep folders.
type Collection struct {
	Runs    []*RunData // sorted by index, then name
	Ignored []string   // run folders found but not in the sweeps' indexes
	// Sweeps are the sweeps whose indexes were read, each once (copies of
	// a sweep's folder hold the same index), in the order of the dirs.
	Sweeps []SweepFolder
}

// SweepFolder is a sweep Collect read: its index's name, the first folder
// that holds it, and its label in runs.csv: the name, or the name and the
// folder when another sweep has the same name (an index of other runs).
type SweepFolder struct {
	Name, Dir, Label string
	runs             string // the index's runs, which tell two sweeps of one name apart
}

// indexRuns is an index's runs as one string: equal for copies of a
// sweep's folder.
func indexRuns(ix *Index) string {
	var b strings.Builder
	for _, e := range ix.Runs {
		fmt.Fprintf(&b, "%d %s\n", e.Index, e.Name)
	}
	return b.String()
}

// RunSeconds is the completed runs' own wall time, summed: what they cost
// whenever they ran, however many ran at once.
func (c *Collection) RunSeconds() float64 {
	s := 0.0
	for _, r := range c.Runs {
		if r.Summary != nil {
			s += r.Summary.WallSeconds
		}
	}
	return s
}

// Problems lists the runs that do not count, one line each.
func (c *Collection) Problems() []string {
	var out []string
	for _, r := range c.Runs {
		if r.Problem != "" {
			out = append(out, fmt.Sprintf("run %s: %s", runLabel(r), r.Problem))
		}
	}
	return out
}

func runLabel(r *RunData) string {
	if r.Index >= 0 {
		return fmt.Sprintf("%d (%s)", r.Index, r.Name)
	}
	return r.Name
}

// Collect reads the run folders under dirs: a folder holding config.json is
// a run folder, found at any depth (shards and machines may each bring
// their own copy of the sweep's folder). When a dir holds the sweep's index
// (IndexFile), its runs are the ones expected: a run of the index without a
// folder is missing, and run folders outside every index are left out
// (Ignored). Without any index, every run folder found counts. Runs come in
// the order of dirs (the first that lists or holds each), then of their
// index.
func Collect(dirs []string) (*Collection, error) {
	found := map[string]string{} // folder name -> its path (a completed copy first)
	expected := map[string]IndexEntry{}
	sweepOf := map[string]int{} // folder name -> the first dir that lists or holds it
	indexed := false
	var sweeps []SweepFolder
	for i, dir := range dirs {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("%s: %v", dir, err)
		}
		if ix, err := ReadIndex(dir); err == nil {
			indexed = true
			runs := indexRuns(ix)
			k := slices.IndexFunc(sweeps, func(s SweepFolder) bool { return s.Name == ix.Name && s.runs == runs })
			if k < 0 {
				k = len(sweeps)
				sweeps = append(sweeps, SweepFolder{Name: ix.Name, Dir: dir, runs: runs})
			}
			for _, e := range ix.Runs {
				if _, ok := expected[e.Name]; !ok { // the first sweep that lists it
					e.sweep = k
					expected[e.Name] = e
				}
				if _, ok := sweepOf[e.Name]; !ok {
					sweepOf[e.Name] = i
				}
			}
		} else if !os.IsNotExist(err) {
			return nil, err
		}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if _, err := os.Stat(filepath.Join(path, experiment.ConfigFile)); err != nil {
				return nil
			}
			name := filepath.Base(path)
			if old, ok := found[name]; !ok || !exists(filepath.Join(old, experiment.SummaryFile)) {
				found[name] = path
			}
			if _, ok := sweepOf[name]; !ok {
				sweepOf[name] = i
			}
			return filepath.SkipDir
		})
		if err != nil {
			return nil, err
		}
	}
	for i := range sweeps {
		sweeps[i].Label = sweeps[i].Name
		for j := range sweeps {
			if j != i && sweeps[j].Name == sweeps[i].Name {
				sweeps[i].Label = fmt.Sprintf("%s (%s)", sweeps[i].Name, sweeps[i].Dir)
			}
		}
	}
	c := &Collection{Sweeps: sweeps}
	names := map[string]bool{}
	for name := range found {
		if indexed {
			if _, ok := expected[name]; !ok {
				c.Ignored = append(c.Ignored, found[name])
				continue
			}
		}
		names[name] = true
	}
	for name := range expected {
		names[name] = true
	}
	for name := range names {
		r, err := readRun(name, found[name], expected)
		if err != nil {
			return nil, err
		}
		if e, ok := expected[name]; ok {
			r.Sweep = sweeps[e.sweep].Label
		}
		r.sweep = sweepOf[name]
		c.Runs = append(c.Runs, r)
	}
	sort.Strings(c.Ignored)
	sort.Slice(c.Runs, func(i, j int) bool {
		a, b := c.Runs[i], c.Runs[j]
		if a.sweep != b.sweep { // the dirs' order: several sweeps aggregated together stay apart
			return a.sweep < b.sweep
		}
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.Name < b.Name
	})
	if len(c.Runs) == 0 {
		return nil, fmt.Errorf("no run folders (folders with %s) under %s", experiment.ConfigFile, strings.Join(dirs, ", "))
	}
	return c, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readRun reads one run: its configuration from its folder or the index,
// its summary and metrics if it completed.
func readRun(name, dir string, expected map[string]IndexEntry) (*RunData, error) {
	r := &RunData{Name: name, Dir: dir, Index: -1}
	var cfgJSON []byte
	if e, ok := expected[name]; ok {
		r.Index, cfgJSON = e.Index, e.Config
	}
	if dir != "" {
		data, err := os.ReadFile(filepath.Join(dir, experiment.ConfigFile))
		if err != nil {
			return nil, err
		}
		cfgJSON = data
	}
	if err := json.Unmarshal(cfgJSON, &r.Config); err != nil {
		return nil, fmt.Errorf("run %s: config: %v", name, err)
	}
	r.Config.Out = ""
	var err error
	if r.Fields, err = fields(r.Config); err != nil {
		return nil, err
	}
	if dir == "" {
		r.Problem = "missing: no run folder (never started, or its shard's folder was not given)"
		return r, nil
	}
	s, err := ReadSummary(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Problem = fmt.Sprintf("damaged: %v (running the sweep again writes it again)", err)
		return r, nil
	}
	if err != nil {
		r.Problem = "incomplete: no summary.json"
		if ck, err := os.Stat(filepath.Join(dir, experiment.CheckpointFile)); err == nil {
			r.Problem += fmt.Sprintf(" (a checkpoint from %s: resume it by running the sweep again)", ck.ModTime().Format("2006-01-02 15:04"))
		}
		return r, nil
	}
	if s.Stalled {
		r.Problem = fmt.Sprintf("stalled at step %d (stop_reason %s)", s.Steps, s.StopReason)
		return r, nil
	}
	m, err := experiment.ReadMetrics(dir)
	if err == nil && len(m.Rows) == 0 {
		err = fmt.Errorf("%s has no rows", filepath.Join(dir, experiment.MetricsFile))
	}
	if err != nil { // the sweep skips a run with summary.json: it must go
		r.Problem = fmt.Sprintf("damaged: %v: copy the run's folder again, or remove it and run the sweep again", err)
		return r, nil
	}
	r.Summary, r.Metrics = &s, m
	return r, nil
}

// fields flattens a configuration into the columns the aggregate shows:
// every leaf of its JSON by path, plus the readable names of the main ones
// (model, trainer, graph, seed, optimizer, lr, rollouts_per_step, baseline,
// prompt).
func fields(c experiment.Config) (map[string]string, error) {
	tree, err := toTree(c)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
			return
		}
		out[prefix] = plain(mustMarshal(v))
	}
	walk("", tree)
	delete(out, "out")
	short := map[string]string{"model": "model", "trainer": "train.trainer", "seed": "train.seed", "optimizer": "train.optimizer.name",
		"lr": "train.optimizer.lr", "rollouts_per_step": "train.rollouts", "baseline": "train.baseline", "prompt": "transformer.prompt"}
	for name, path := range short {
		out[name] = out[path]
	}
	for k := range out {
		if strings.HasPrefix(k, "graph.") {
			delete(out, k)
		}
	}
	out["graph"] = c.Graph.Name()
	return out, nil
}

// mainFields are the columns every table and CSV starts with.
var mainFields = []string{"model", "trainer", "graph", "seed", "optimizer", "lr", "rollouts_per_step", "baseline", "prompt"}

// aliased are the paths shown under a main field's name.
var aliased = map[string]bool{"train.trainer": true, "train.seed": true, "train.optimizer.name": true,
	"train.optimizer.lr": true, "train.rollouts": true, "train.baseline": true, "transformer.prompt": true}

// Columns are the configuration columns of the long CSV: the main fields,
// then every other path whose value differs between runs, sorted.
func (c *Collection) Columns() []string {
	cols := append([]string(nil), mainFields...)
	all := map[string]bool{}
	for _, r := range c.Runs {
		for k := range r.Fields {
			all[k] = true
		}
	}
	var extra []string
	for k := range all {
		if slices.Contains(mainFields, k) || aliased[k] {
			continue
		}
		first, differ := "", false
		for i, r := range c.Runs {
			if v := r.Fields[k]; i == 0 {
				first = v
			} else if v != first {
				differ = true
			}
		}
		if differ {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	return append(cols, extra...)
}
