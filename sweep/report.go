package sweep

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/experiment"
)

// Group is the runs whose configurations are the same but for the seed.
type Group struct {
	Fields map[string]string // of its first run, seed aside
	Runs   []*RunData        // every run, counted or not
	// Over the runs that count: the final hitting time, the steps and wall
	// seconds to within Within of the limit (over the runs that got there:
	// Reached of them), the final success rate (RunData.SuccessRate).
	Final, Steps, Wall, Success Estimate
	Reached, Counted            int
	Limit                       float64 // the runs' limit hitting time
	// Stops counts the runs that count by their stop reason; Tokens is
	// their sampled tokens (sampled trainers), and AboveBest the largest
	// relative excess of a final hitting time over its run's best row
	// (NaN: none has both).
	Stops     map[string]int
	Tokens    Estimate
	AboveBest float64
}

// aboveBest is how far a run's final hitting time ends above its best
// row's, relative to the best (NaN: the summary lacks one). For Monte Carlo
// values (a transformer's) it is the excess beyond both 95% intervals, 0
// when they overlap: the best is a second measurement of a row picked for
// being low, still the lowest of several noisy ones, and a difference the
// two estimates do not resolve is not a run wandering off. A Monte Carlo best row with no
// interval is a lower bound (some rollouts of its batch missed: the
// transformer's group-relative trainers at their horizon of 2), and the
// excess over a bound is NaN: not known. Summaries written before runs
// said so hold 0 for that interval, and read as before.
func aboveBest(s *experiment.Summary) float64 {
	f, b := experiment.Value(s.FinalHittingTime), experiment.Value(s.BestHittingTime)
	if !(f > 0 && b > 0) {
		return math.NaN()
	}
	if s.FinalCI95 != nil && s.BestCI95 == nil {
		return math.NaN()
	}
	fc, bc := experiment.Value(s.FinalCI95), experiment.Value(s.BestCI95)
	if fc > 0 || bc > 0 {
		return math.Max(0, (f-math.Max(fc, 0))-(b+math.Max(bc, 0))) / b
	}
	return f/b - 1
}

// Groups splits the runs by configuration, seed aside, in the order of
// their first run; label is the configuration columns that tell the groups
// apart (distinguishing).
func (c *Collection) Groups() (groups []*Group, label []string) {
	byKey := map[string]*Group{}
	for _, r := range c.Runs {
		key := groupKey(r.Fields)
		g, ok := byKey[key]
		if !ok {
			g = &Group{Fields: r.Fields, Limit: math.NaN(), Stops: map[string]int{}, AboveBest: math.NaN()}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.Runs = append(g.Runs, r)
	}
	for _, g := range groups {
		var final, steps, wall, success, tokens []float64
		for _, r := range g.Runs {
			if r.Problem != "" {
				continue
			}
			g.Counted++
			g.Stops[string(r.Summary.StopReason)]++
			if r.Summary.SampledTokens > 0 {
				tokens = append(tokens, float64(r.Summary.SampledTokens))
			}
			if a := aboveBest(r.Summary); !math.IsNaN(a) {
				g.AboveBest = math.Max(nanToInf(g.AboveBest), a)
			}
			final = append(final, experiment.Value(r.Summary.FinalHittingTime))
			s, w := r.Reach()
			if !math.IsNaN(s) {
				g.Reached++
			}
			steps, wall = append(steps, s), append(wall, w)
			success = append(success, r.SuccessRate())
			g.Limit = experiment.Value(r.Summary.LimitHittingTime)
		}
		g.Final, g.Steps, g.Wall, g.Success, g.Tokens = Mean95(final), Mean95(steps), Mean95(wall), Mean95(success), Mean95(tokens)
	}
	label = distinguishing(groups, c.Columns())
	return groups, label
}

// distinguishing picks, in column order, each column that separates groups
// the columns before it do not: model, trainer, graph for a sweep over
// those, without the options they imply (the transformer's, a trainer's
// log_every). summary.csv keeps every column that varies (varying).
func distinguishing(groups []*Group, cols []string) []string {
	var label []string
	classes := 1
	for _, col := range cols {
		if col == "seed" {
			continue
		}
		tuples := map[string]bool{}
		for _, g := range groups {
			var b strings.Builder
			for _, c := range append(label, col) {
				b.WriteString(g.Fields[c] + "\x00")
			}
			tuples[b.String()] = true
		}
		if len(tuples) > classes {
			label, classes = append(label, col), len(tuples)
		}
	}
	if len(label) == 0 {
		label = []string{"model", "trainer", "graph"}
	}
	// A column that varies but not with the model, trainer and graph alone
	// is a setting the sweep compares, and is shown even where the label
	// already separates the groups (a rate and a table rate changed
	// together in one run of a list).
	for _, col := range varying(groups, cols) {
		if !slices.Contains(label, col) && !impliedByTask(groups, col) {
			label = append(label, col)
		}
	}
	slices.SortStableFunc(label, func(a, b string) int { return slices.Index(cols, a) - slices.Index(cols, b) })
	return label
}

// impliedByTask reports whether col takes one value for each model,
// trainer and graph among groups: an option those imply, like the
// transformer's width or a trainer's log_every.
func impliedByTask(groups []*Group, col string) bool {
	seen := map[string]string{}
	for _, g := range groups {
		task := g.Fields["model"] + "\x00" + g.Fields["trainer"] + "\x00" + g.Fields["graph"]
		if v, ok := seen[task]; ok && v != g.Fields[col] {
			return false
		}
		seen[task] = g.Fields[col]
	}
	return true
}

// varying is every column, seed aside, whose value differs between groups.
func varying(groups []*Group, cols []string) []string {
	var out []string
	for _, col := range cols {
		if col == "seed" {
			continue
		}
		for _, g := range groups[1:] {
			if g.Fields[col] != groups[0].Fields[col] {
				out = append(out, col)
				break
			}
		}
	}
	if len(out) == 0 {
		out = []string{"model", "trainer", "graph"}
	}
	return out
}

// nanToInf is x, or -Inf for NaN (a maximum not yet taken).
func nanToInf(x float64) float64 {
	if math.IsNaN(x) {
		return math.Inf(-1)
	}
	return x
}

// StopsString prints the stop reasons' counts, most frequent first: "until 3,
// plateau 1".
func (g *Group) StopsString() string {
	reasons := make([]string, 0, len(g.Stops))
	for r := range g.Stops {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := reasons[i], reasons[j]
		return g.Stops[a] > g.Stops[b] || g.Stops[a] == g.Stops[b] && a < b
	})
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%s %d", r, g.Stops[r])
	}
	if len(reasons) == 0 {
		return "-"
	}
	return strings.Join(reasons, ", ")
}

func groupKey(f map[string]string) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		if k != "seed" && k != "train.seed" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + f[k] + "\n")
	}
	return b.String()
}

// Write writes the aggregate into dir: runs.csv (one row per run per
// logged step: the run, its configuration columns and every metrics
// column), summary.csv and summary.md (one row per group: seeds, means
// and 95% intervals, and the runs that do not count), and one figure per
// graph, hitting_time-<graph>.png (mean over seeds with a 95% band per
// group). It returns the files written.
func (c *Collection) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	groups, label := c.Groups()
	var files []string
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"runs.csv", c.writeLong},
		{"summary.csv", func(b *bytes.Buffer) error { return writeSummaryCSV(b, groups, varying(groups, c.Columns())) }},
		{"summary.md", func(b *bytes.Buffer) error { return c.writeMarkdown(b, groups, label) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return files, err
		}
		path := filepath.Join(dir, f.name)
		if err := checkpoints.WriteFileAtomic(path, b.Bytes()); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	figs, err := writeFigures(dir, groups, label)
	return append(files, figs...), err
}

// writeLong writes runs.csv.
func (c *Collection) writeLong(b *bytes.Buffer) error {
	w := csv.NewWriter(b)
	cols, metrics := c.Columns(), experiment.MetricsColumns()
	first := []string{"run", "index", "code"}
	several := len(c.Sweeps) > 1 // an index is a run's only within its sweep
	if several {
		first = []string{"run", "sweep", "index", "code"}
	}
	w.Write(append(append(first, cols...), metrics...))
	for _, r := range c.Runs {
		if r.Metrics == nil {
			continue
		}
		index, code := "", ""
		if r.Index >= 0 {
			index = strconv.Itoa(r.Index)
		}
		if r.Summary != nil { // the commits that trained it (experiment.Code), in order
			code = strings.Join(r.Summary.Code, " ")
		}
		head := []string{r.Name, index, code}
		if several {
			head = []string{r.Name, r.Sweep, index, code}
		}
		for _, col := range cols {
			head = append(head, r.Fields[col])
		}
		idx := make([]int, len(metrics))
		for i, m := range metrics {
			idx[i] = r.Metrics.Index(m)
		}
		for _, row := range r.Metrics.Rows {
			rec := slices.Clone(head)
			for _, k := range idx {
				cell := ""
				if k >= 0 && k < len(row) {
					cell = experiment.FormatExact(row[k])
				}
				rec = append(rec, cell)
			}
			w.Write(rec)
		}
	}
	w.Flush()
	return w.Error()
}

func writeSummaryCSV(b *bytes.Buffer, groups []*Group, label []string) error {
	w := csv.NewWriter(b)
	w.Write(append(slices.Clone(label), "seeds", "runs", "limit_hitting_time",
		"final_hitting_time_mean", "final_hitting_time_ci95", "reached_within_5pct",
		"steps_to_5pct_mean", "steps_to_5pct_ci95", "wall_seconds_to_5pct_mean", "wall_seconds_to_5pct_ci95",
		"success_rate_mean", "success_rate_ci95", "stops", "sampled_tokens_mean", "sampled_tokens_ci95", "final_above_best_max"))
	for _, g := range groups {
		rec := []string{}
		for _, col := range label {
			rec = append(rec, g.Fields[col])
		}
		rec = append(rec, strconv.Itoa(g.Counted), strconv.Itoa(len(g.Runs)), experiment.FormatExact(g.Limit))
		for _, e := range []Estimate{g.Final} {
			rec = append(rec, experiment.FormatExact(e.Mean), experiment.FormatExact(e.CI95))
		}
		rec = append(rec, strconv.Itoa(g.Reached))
		for _, e := range []Estimate{g.Steps, g.Wall, g.Success} {
			rec = append(rec, experiment.FormatExact(e.Mean), experiment.FormatExact(e.CI95))
		}
		rec = append(rec, g.StopsString(), experiment.FormatExact(g.Tokens.Mean), experiment.FormatExact(g.Tokens.CI95), experiment.FormatExact(g.AboveBest))
		w.Write(rec)
	}
	w.Flush()
	return w.Error()
}

// est prints a mean ± its 95% half-width to 4 significant digits ("-":
// no value).
func est(e Estimate) string {
	switch {
	case e.N == 0:
		return "-"
	case math.IsNaN(e.CI95):
		return fmt.Sprintf("%.4g", e.Mean)
	}
	return fmt.Sprintf("%.4g ± %.2g", e.Mean, e.CI95)
}

func (c *Collection) writeMarkdown(b *bytes.Buffer, groups []*Group, label []string) error {
	fmt.Fprintf(b, "# Sweep aggregate\n\n%d runs in %d groups (same configuration but for the seed). Means over seeds with 95%% Student t intervals; "+
		"steps and wall seconds to within %g%% of the limit are over the seeds that got there; final above best is the largest relative excess "+
		"of a run's final hitting time over its best row's (for Monte Carlo values, the excess beyond both 95%% intervals).\n\n", len(c.Runs), len(groups), Within*100)
	if len(c.Sweeps) > 1 {
		var names []string
		for _, s := range c.Sweeps {
			names = append(names, fmt.Sprintf("%s in %s", s.Name, s.Dir))
		}
		fmt.Fprintf(b, "The runs of %d sweeps, combined: %s. A group holds the runs of equal configuration, seed aside, of every sweep.\n\n", len(c.Sweeps), strings.Join(names, ", "))
	}
	b.WriteString("| " + strings.Join(label, " | ") + " | seeds | final hitting time | limit | within 5% | steps to 5% | wall s to 5% | success rate | stopped by | sampled tokens | final above best (max) |\n")
	b.WriteString(strings.Repeat("| --- ", len(label)+10) + "|\n")
	for _, g := range groups {
		var cells []string
		for _, col := range label {
			cells = append(cells, g.Fields[col])
		}
		seeds := strconv.Itoa(g.Counted)
		if g.Counted < len(g.Runs) {
			seeds = fmt.Sprintf("%d of %d", g.Counted, len(g.Runs))
		}
		limit := "-"
		if !math.IsNaN(g.Limit) {
			limit = experiment.FormatNumber(g.Limit)
		}
		above := "-"
		if !math.IsNaN(g.AboveBest) {
			above = fmt.Sprintf("%.2g%%", 100*g.AboveBest)
		}
		cells = append(cells, seeds, est(g.Final), limit, fmt.Sprintf("%d/%d", g.Reached, g.Counted),
			est(g.Steps), est(g.Wall), est(g.Success), g.StopsString(), est(g.Tokens), above)
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	if p := c.Problems(); len(p) > 0 {
		fmt.Fprintf(b, "\n**%d runs do not count** (their groups have fewer seeds):\n\n", len(p))
		for _, line := range p {
			b.WriteString("- " + line + "\n")
		}
	}
	if len(c.Ignored) > 0 {
		fmt.Fprintf(b, "\n%d run folders are not in the sweep's index (an earlier version of the spec?) and were left out:\n\n", len(c.Ignored))
		for _, d := range c.Ignored {
			b.WriteString("- " + d + "\n")
		}
	}
	return nil
}
