package experiment

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rlvr-backtrack/backtrack/trainers"
)

// record is one metrics row as the columns see it: the trainer's row, and
// what the run adds.
type record struct {
	trainers.Row
	applies
	wall float64 // seconds spent on the run so far
}

// applies says which groups of columns apply to a run's trainer.
type applies struct {
	sampled bool // a sampled trainer: the batch columns
	clipped bool // a clipped trainer (PPO and the group-relative ones): approx_kl and clip_frac
	grouped bool // a group-relative trainer: flat_groups
	critic  bool // a sampled trainer with baseline gae: the critic's columns
}

// appliesTo is what applies to a trainer configuration.
func appliesTo(c trainers.Config) applies {
	k := c.Trainer
	return applies{sampled: k.Sampled(), clipped: k.Clipped(), grouped: k.Grouped(), critic: k.Sampled() && c.Baseline == "gae"}
}

// column is one column of metrics.csv: its name, how it is read from a
// record (NaN: does not apply, an empty cell) and how it is printed.
// A timed column measures wall time: the one kind of value a resumed or
// rerun run does not reproduce.
type column struct {
	name  string
	get   func(r *record) float64
	kind  byte // 'i' integer, 'g' shortest exact float, 'f' three decimals
	timed bool
}

// only restricts a column to the records for which when holds (NaN
// elsewhere).
func only(when func(r *record) bool, c column) column {
	get := c.get
	c.get = func(r *record) float64 {
		if !when(r) {
			return math.NaN()
		}
		return get(r)
	}
	return c
}

// batch is a column of the sampled trainers only.
func batch(name string, kind byte, get func(r *record) float64) column {
	return only(func(r *record) bool { return r.sampled }, column{name: name, get: get, kind: kind})
}

// stat is a column of a sampled trainer's statistics of its last step's
// batch: empty on the row of step 0, before any batch (the batch columns
// that count, tokens and rollouts, are 0 there), and empty where when
// does not hold.
func stat(name string, kind byte, when func(r *record) bool, get func(r *record) float64) column {
	return only(func(r *record) bool { return r.sampled && r.Step > 0 && when(r) }, column{name: name, get: get, kind: kind})
}

// always, clipped, grouped and critic say which sampled trainers a
// statistic applies to.
func always(*record) bool    { return true }
func clipped(r *record) bool { return r.clipped }
func grouped(r *record) bool { return r.grouped }
func critic(r *record) bool  { return r.critic }

// perSecond is a timed column of the sampled trainers: n(r) over the
// last step's wall time.
func perSecond(name string, n func(r *record) int) column {
	c := batch(name, 'f', func(r *record) float64 { return float64(n(r)) / r.StepSeconds })
	c.timed = true
	return c
}

// monteCarlo is a column of Monte Carlo rows only.
func monteCarlo(name string, get func(r *record) float64) column {
	return only(func(r *record) bool { return r.Estimated }, column{name: name, get: get, kind: 'g'})
}

// columns are metrics.csv's columns, defined once: the writer, the plots,
// the reproduce suite and the tests read them by name (Metrics.Column).
var columns = []column{
	{name: "step", get: func(r *record) float64 { return float64(r.Step) }, kind: 'i'},
	{name: "hitting_time", get: func(r *record) float64 { return r.HittingTime }, kind: 'g'},
	{name: "objective", get: func(r *record) float64 { return r.Objective }, kind: 'g'},
	{name: "a", get: func(r *record) float64 { return r.A }, kind: 'g'},
	{name: "b", get: func(r *record) float64 { return r.B }, kind: 'g'},
	{name: "c", get: func(r *record) float64 { return r.C }, kind: 'g'},
	{name: "d", get: func(r *record) float64 { return r.D }, kind: 'g'},
	{name: "invalid_mass", get: func(r *record) float64 { return r.InvalidMass }, kind: 'g'},
	{name: "bound_ratio", get: func(r *record) float64 { return r.BoundRatio }, kind: 'g'},
	batch("tokens", 'i', func(r *record) float64 { return float64(r.Tokens) }),
	batch("rollouts", 'i', func(r *record) float64 { return float64(r.Rollouts) }),
	batch("trained_tokens", 'i', func(r *record) float64 { return float64(r.TrainedTokens) }),
	stat("success_rate", 'g', always, func(r *record) float64 { return r.Batch.SuccessRate }),
	stat("mean_length", 'g', always, func(r *record) float64 { return r.Batch.MeanLength }),
	stat("approx_kl", 'g', clipped, func(r *record) float64 { return r.Batch.ApproxKL }),
	stat("clip_frac", 'g', clipped, func(r *record) float64 { return r.Batch.ClipFrac }),
	monteCarlo("hitting_time_ci95", func(r *record) float64 { return r.HittingTimeCI95 }),
	monteCarlo("mc_success_rate", func(r *record) float64 { return r.MCSuccessRate }),
	only(func(r *record) bool { return r.Estimated && r.sampled }, column{name: "measured_tokens", get: func(r *record) float64 { return float64(r.MeasuredTokens) }, kind: 'i'}),
	stat("entropy", 'g', always, func(r *record) float64 { return r.Batch.Entropy }),
	stat("reward_mean", 'g', always, func(r *record) float64 { return r.Batch.RewardMean }),
	stat("reward_std", 'g', always, func(r *record) float64 { return r.Batch.RewardStd }),
	stat("reward_min", 'g', always, func(r *record) float64 { return r.Batch.RewardMin }),
	stat("reward_max", 'g', always, func(r *record) float64 { return r.Batch.RewardMax }),
	stat("length_min", 'i', always, func(r *record) float64 { return float64(r.Batch.LengthMin) }),
	stat("length_max", 'i', always, func(r *record) float64 { return float64(r.Batch.LengthMax) }),
	stat("truncated", 'g', always, func(r *record) float64 { return r.Batch.Truncated }),
	stat("flat_groups", 'g', grouped, func(r *record) float64 { return r.Batch.FlatGroups }),
	stat("grad_norm", 'g', always, func(r *record) float64 { return r.Batch.GradNorm }),
	stat("value_loss", 'g', critic, func(r *record) float64 { return r.Batch.ValueLoss }),
	stat("explained_variance", 'g', critic, func(r *record) float64 { return r.Batch.ExplainedVariance }),
	{name: "lr", get: func(r *record) float64 { return r.LR }, kind: 'g'},
	{name: "step_seconds", get: func(r *record) float64 { return r.StepSeconds }, kind: 'g', timed: true},
	perSecond("sampled_tokens_per_second", func(r *record) int { return r.Batch.Sampled }),
	perSecond("trained_tokens_per_second", func(r *record) int { return r.Batch.Trained }),
	{name: "wall_seconds", get: func(r *record) float64 { return r.wall }, kind: 'f', timed: true},
}

// TimedColumns lists the columns that measure wall time, the values a
// resumed or rerun run does not reproduce (tests compare runs without
// them).
func TimedColumns() []string {
	var names []string
	for _, c := range columns {
		if c.timed {
			names = append(names, c.name)
		}
	}
	return names
}

// MetricsColumns lists the column names of metrics.csv, in order.
func MetricsColumns() []string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.name
	}
	return names
}

// metricsHeader is metrics.csv's first line.
func metricsHeader() string { return strings.Join(MetricsColumns(), ",") }

// cells prints one record's values, "" where a column does not apply
// (NaN) or a timed rate has no time to divide by (an infinity).
func cells(r *record) []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		v := c.get(r)
		switch {
		case math.IsNaN(v), c.timed && math.IsInf(v, 0):
		case c.kind == 'i':
			out[i] = strconv.FormatInt(int64(v), 10)
		case c.kind == 'f':
			out[i] = strconv.FormatFloat(v, 'f', 3, 64)
		default:
			out[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return out
}

// scalars are a record's columns but step, named, as TensorBoard's
// scalars (NaN where a column does not apply).
func scalars(r *record) (tags []string, values []float64) {
	for _, c := range columns[1:] {
		tags, values = append(tags, c.name), append(values, c.get(r))
	}
	return tags, values
}

// format prints one record as a CSV line (without the newline).
func format(r *record) string { return strings.Join(cells(r), ",") }

// formatJSON prints one record as a JSON object on one line (without the
// newline), metrics.jsonl's: the same columns and digits as the CSV line,
// null where the CSV cell is empty.
func formatJSON(r *record) string { return jsonLine(cells(r)) }

// jsonLine prints a metrics row's cells as formatJSON does.
func jsonLine(cells []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range cells {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(columns[i].name) + ": ")
		if v == "" || v == "+Inf" || v == "-Inf" {
			v = "null"
		}
		b.WriteString(v)
	}
	b.WriteByte('}')
	return b.String()
}

// Metrics is a run folder's metrics.csv, read back: one row per logged
// step, empty cells as NaN.
type Metrics struct {
	Header []string
	Rows   [][]float64
}

// ReadMetrics reads dir/metrics.csv (or any numeric CSV with a header, at
// path when it ends in .csv). A file cut short is an error naming it: one
// whose last line has no line break, or a row with other fields than the
// header.
func ReadMetrics(dir string) (*Metrics, error) {
	path := dir
	if !strings.HasSuffix(dir, ".csv") {
		path = dir + string(os.PathSeparator) + MetricsFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// Every line is written whole, line break included: a file that does
	// not end in one, or a row of other fields than the header, was cut
	// short (a copy interrupted, a full disk) and must not pass for a run.
	if !bytes.HasSuffix(data, []byte("\n")) {
		return nil, fmt.Errorf("%s: cut short: its last line has no line break", path)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	m := &Metrics{Header: strings.Split(lines[0], ",")}
	for i, line := range lines[1:] {
		if line == "" {
			continue
		}
		cells := strings.Split(line, ",")
		if len(cells) != len(m.Header) {
			return nil, fmt.Errorf("%s line %d: %d fields, want the header's %d", path, i+2, len(cells), len(m.Header))
		}
		var rec []float64
		for _, f := range cells {
			v := math.NaN() // an empty cell does not apply
			if f != "" {
				if v, err = strconv.ParseFloat(f, 64); err != nil {
					return nil, fmt.Errorf("%s line %d: %v", path, i+2, err)
				}
			}
			rec = append(rec, v)
		}
		m.Rows = append(m.Rows, rec)
	}
	return m, nil
}

// Index is the position of a column (-1: none).
func (m *Metrics) Index(name string) int { return slices.Index(m.Header, name) }

// Column returns the values of a column, NaN where a row lacks it (nil if
// there is no such column).
func (m *Metrics) Column(name string) []float64 {
	k := m.Index(name)
	if k < 0 {
		return nil
	}
	out := make([]float64, len(m.Rows))
	for i, r := range m.Rows {
		out[i] = math.NaN()
		if k < len(r) {
			out[i] = r[k]
		}
	}
	return out
}

// Max is the largest value of a column (NaN when it has none).
func (m *Metrics) Max(name string) float64 {
	best := math.NaN()
	for _, v := range m.Column(name) {
		if !(v <= best) && !math.IsNaN(v) {
			best = v
		}
	}
	return best
}
