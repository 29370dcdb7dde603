package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// jsonlRows reads dir/metrics.jsonl: one object per line, null as NaN.
func jsonlRows(t *testing.T, dir string) []map[string]float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, JSONLFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var raw map[string]*float64
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("metrics.jsonl line %d: %v", len(rows)+1, err)
		}
		row := map[string]float64{}
		for k, v := range raw {
			row[k] = math.NaN()
			if v != nil {
				row[k] = *v
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// runSmall runs a 20-step sampled trainer on W=3, K=2, L=2, logging every
// 10 steps, into a temporary folder.
func runSmall(t *testing.T, k trainers.Kind, baseline string) string {
	t.Helper()
	cfg := Defaults(trainers.BigramModel, k)
	cfg.Graph = tasks.Config{W: 3, K: 2, L: 2}
	if baseline != "" {
		cfg.Train.Baseline = baseline
	}
	cfg.Train.Steps, cfg.Train.Until, cfg.Train.Rollouts = 20, 0, 32
	cfg.Out = t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	return cfg.Out
}

// TestMetricsColumnsReadBack: every column of a run reads back the same
// from metrics.csv and metrics.jsonl; the batch columns hold consistent
// values (min <= mean <= max, truncated = 1 - success rate, a positive
// gradient norm and token rates, the uniform policy's entropy at step 0's
// batch bounded by log of the widest row), flat_groups only for the
// group-relative trainer, value_loss and explained_variance only with the
// critic, approx_kl and clip_frac only for the clipped trainers; step 0's
// row has no batch statistics (empty) and counts of 0.
func TestMetricsColumnsReadBack(t *testing.T) {
	for _, tc := range []struct {
		k                trainers.Kind
		baseline         string
		grouped, critics bool
	}{
		{trainers.GRPO, "", true, false},
		{trainers.PPO, "gae", false, true},
		{trainers.Reinforce, "", false, false},
	} {
		dir := runSmall(t, tc.k, tc.baseline)
		m, err := ReadMetrics(dir)
		if err != nil {
			t.Fatal(err)
		}
		js := jsonlRows(t, dir)
		if len(js) != len(m.Rows) || len(m.Rows) != 3 {
			t.Fatalf("%s: %d CSV rows, %d JSONL rows; want 3 each", tc.k, len(m.Rows), len(js))
		}
		for i, row := range m.Rows {
			if len(js[i]) != len(m.Header) {
				t.Errorf("%s row %d: %d JSON keys, %d columns", tc.k, i, len(js[i]), len(m.Header))
			}
			for c, name := range m.Header {
				got, ok := js[i][name]
				if !ok || !(got == row[c] || math.IsNaN(got) && math.IsNaN(row[c])) {
					t.Errorf("%s row %d %s: JSONL %v, CSV %v", tc.k, i, name, got, row[c])
				}
			}
		}
		last := func(name string) float64 { c := m.Column(name); return c[len(c)-1] }
		if !(last("reward_min") <= last("reward_mean") && last("reward_mean") <= last("reward_max")) || !(last("reward_std") > 0) {
			t.Errorf("%s: rewards min %v mean %v max %v std %v", tc.k, last("reward_min"), last("reward_mean"), last("reward_max"), last("reward_std"))
		}
		if !(last("length_min") <= last("mean_length") && last("mean_length") <= last("length_max")) {
			t.Errorf("%s: lengths min %v mean %v max %v", tc.k, last("length_min"), last("mean_length"), last("length_max"))
		}
		if math.Abs(last("truncated")-(1-last("success_rate"))) > 1e-12 {
			t.Errorf("%s: truncated %v, success rate %v", tc.k, last("truncated"), last("success_rate"))
		}
		for _, name := range []string{"grad_norm", "sampled_tokens_per_second", "trained_tokens_per_second", "step_seconds"} {
			if !(last(name) > 0) {
				t.Errorf("%s: %s %v, want > 0", tc.k, name, last(name))
			}
		}
		if h := last("entropy"); !(h > 0 && h <= math.Log(3)) { // rows of W=3, L=2 have at most 3 choices
			t.Errorf("%s: entropy %v, want in (0, log 3]", tc.k, h)
		}
		want := trainers.Defaults(tc.k, trainers.BigramModel).Optim.LR
		if lr := m.Column("lr"); lr[0] != want || lr[2] != want {
			t.Errorf("%s: lr %v, want the bigram's default %v throughout", tc.k, lr, want)
		}
		if got := !math.IsNaN(last("flat_groups")); got != tc.grouped {
			t.Errorf("%s: flat_groups %v", tc.k, last("flat_groups"))
		}
		if got := !math.IsNaN(last("value_loss")) && !math.IsNaN(last("explained_variance")); got != tc.critics {
			t.Errorf("%s: value_loss %v, explained_variance %v", tc.k, last("value_loss"), last("explained_variance"))
		}
		if s := m.Column("step_seconds"); !math.IsNaN(s[0]) {
			t.Errorf("%s: step_seconds %v at step 0, want empty", tc.k, s[0])
		}
		// Step 0's row comes before any batch: its statistics are empty,
		// where its counts are 0.
		for _, name := range []string{"success_rate", "mean_length", "entropy", "reward_mean", "reward_std", "reward_min", "reward_max", "length_min", "length_max", "truncated", "grad_norm", "approx_kl", "clip_frac", "flat_groups", "value_loss", "explained_variance"} {
			if v := m.Column(name)[0]; !math.IsNaN(v) {
				t.Errorf("%s: %s %v at step 0, before any batch; want empty", tc.k, name, v)
			}
		}
		for _, name := range []string{"tokens", "rollouts", "trained_tokens"} {
			if v := m.Column(name)[0]; v != 0 {
				t.Errorf("%s: %s %v at step 0, want 0", tc.k, name, v)
			}
		}
		// approx_kl and clip_frac are the clipped trainers' (PPO and the
		// group-relative ones): REINFORCE has no old policy to compare.
		if got := !math.IsNaN(last("approx_kl")) && !math.IsNaN(last("clip_frac")); got != tc.k.Clipped() {
			t.Errorf("%s: approx_kl %v, clip_frac %v", tc.k, last("approx_kl"), last("clip_frac"))
		}
	}
}

// TestExactRunHasNoBatchColumns: an exact RLVR run leaves the sampled
// trainers' columns empty (null in JSONL) and logs its learning rate.
func TestExactRunHasNoBatchColumns(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Graph = tasks.Config{W: 2, K: 2, L: 2}
	cfg.Train.Steps, cfg.Train.Until = 10, 0
	cfg.Out = t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	js := jsonlRows(t, cfg.Out)
	for _, name := range []string{"entropy", "reward_mean", "length_max", "truncated", "flat_groups", "grad_norm", "value_loss", "sampled_tokens_per_second"} {
		if v := js[len(js)-1][name]; !math.IsNaN(v) {
			t.Errorf("%s: %v, want null", name, v)
		}
	}
	if lr := js[len(js)-1]["lr"]; lr != 0.01 {
		t.Errorf("lr %v, want the paper's 0.01", lr)
	}
}

// TestReadMetricsRefusesCutFiles: a metrics file cut inside its header,
// mid-row or inside the last row's last cell, or holding a row of other
// fields than the header, is an error naming the file; the whole file and
// one of a header alone read.
func TestReadMetricsRefusesCutFiles(t *testing.T) {
	const whole = "step,hitting_time,wall_seconds\n0,35.5,0.01\n5,31.25,0.125\n"
	for _, c := range []struct {
		name, text, want string
		rows             int
	}{
		{"whole", whole, "", 2},
		{"header alone", "step,hitting_time,wall_seconds\n", "", 0},
		{"cut inside the header", whole[:12], "cut short: its last line has no line break", 0},
		{"cut mid-row", whole[:len(whole)-8], "cut short: its last line has no line break", 0},
		{"cut inside the last cell", whole[:len(whole)-2], "cut short: its last line has no line break", 0},
		{"a row of fewer fields", "step,hitting_time,wall_seconds\n0,35.5\n5,31.25,0.125\n", "line 2: 2 fields, want the header's 3", 0},
		{"a row of more fields", whole + "10,30,0.2,7\n", "line 4: 4 fields, want the header's 3", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "metrics.csv")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := ReadMetrics(path)
			switch {
			case c.want == "" && (err != nil || len(m.Rows) != c.rows):
				t.Errorf("got %v, want %d rows", err, c.rows)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error naming %s with %q", err, path, c.want)
			}
		})
	}
}
