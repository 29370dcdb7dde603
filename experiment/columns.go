package experiment

import (
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
	sampled bool    // reinforce or ppo: the batch columns apply
	wall    float64 // seconds spent on the run so far
}

// column is one column of metrics.csv: its name, how it is read from a
// record (NaN: does not apply, an empty cell) and how it is printed.
type column struct {
	name string
	get  func(r *record) float64
	kind byte // 'i' integer, 'g' shortest exact float, 'f' three decimals
}

// batch is a column of the sampled trainers only.
func batch(name string, kind byte, get func(r *record) float64) column {
	return column{name, func(r *record) float64 {
		if !r.sampled {
			return math.NaN()
		}
		return get(r)
	}, kind}
}

// monteCarlo is a column of Monte Carlo rows only.
func monteCarlo(name string, get func(r *record) float64) column {
	return column{name, func(r *record) float64 {
		if !r.Estimated {
			return math.NaN()
		}
		return get(r)
	}, 'g'}
}

// columns are metrics.csv's columns, defined once: the writer, the plots,
// the reproduce suite and the tests read them by name (Metrics.Column).
var columns = []column{
	{"step", func(r *record) float64 { return float64(r.Step) }, 'i'},
	{"hitting_time", func(r *record) float64 { return r.HittingTime }, 'g'},
	{"objective", func(r *record) float64 { return r.Objective }, 'g'},
	{"a", func(r *record) float64 { return r.A }, 'g'},
	{"b", func(r *record) float64 { return r.B }, 'g'},
	{"c", func(r *record) float64 { return r.C }, 'g'},
	{"d", func(r *record) float64 { return r.D }, 'g'},
	{"invalid_mass", func(r *record) float64 { return r.InvalidMass }, 'g'},
	{"bound_ratio", func(r *record) float64 { return r.BoundRatio }, 'g'},
	batch("tokens", 'i', func(r *record) float64 { return float64(r.Tokens) }),
	batch("rollouts", 'i', func(r *record) float64 { return float64(r.Rollouts) }),
	batch("trained_tokens", 'i', func(r *record) float64 { return float64(r.TrainedTokens) }),
	batch("success_rate", 'g', func(r *record) float64 { return r.Batch.SuccessRate }),
	batch("mean_length", 'g', func(r *record) float64 { return r.Batch.MeanLength }),
	batch("approx_kl", 'g', func(r *record) float64 { return r.Batch.ApproxKL }),
	batch("clip_frac", 'g', func(r *record) float64 { return r.Batch.ClipFrac }),
	monteCarlo("hitting_time_ci95", func(r *record) float64 { return r.HittingTimeCI95 }),
	monteCarlo("mc_success_rate", func(r *record) float64 { return r.MCSuccessRate }),
	{"wall_seconds", func(r *record) float64 { return r.wall }, 'f'},
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

// format prints one record as a CSV line (without the newline).
func format(r *record) string {
	cells := make([]string, len(columns))
	for i, c := range columns {
		v := c.get(r)
		switch {
		case math.IsNaN(v):
		case c.kind == 'i':
			cells[i] = strconv.FormatInt(int64(v), 10)
		case c.kind == 'f':
			cells[i] = strconv.FormatFloat(v, 'f', 3, 64)
		default:
			cells[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return strings.Join(cells, ",")
}

// Metrics is a run folder's metrics.csv, read back: one row per logged
// step, empty cells as NaN.
type Metrics struct {
	Header []string
	Rows   [][]float64
}

// ReadMetrics reads dir/metrics.csv (or any numeric CSV with a header, at
// path when it ends in .csv).
func ReadMetrics(dir string) (*Metrics, error) {
	path := dir
	if !strings.HasSuffix(dir, ".csv") {
		path = dir + string(os.PathSeparator) + "metrics.csv"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	m := &Metrics{Header: strings.Split(lines[0], ",")}
	for i, line := range lines[1:] {
		if line == "" {
			continue
		}
		var rec []float64
		for _, f := range strings.Split(line, ",") {
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
