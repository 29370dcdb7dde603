package experiment_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// resumeConfig is a run of 60 steps, a row every 5, a checkpoint every 20.
func resumeConfig(out string) experiment.Config {
	cfg := experiment.DefaultConfig()
	cfg.Graph = tasks.Config{W: 3, K: 2, L: 2}
	cfg.Train.Steps, cfg.Train.Until, cfg.Train.LogEvery, cfg.CheckpointEvery = 60, 0, 5, 20
	cfg.Out = out
	return cfg
}

// interruptAt runs cfg and cancels it after step n: its checkpoint is at
// step n, its logs hold the rows of steps 0 to n.
func interruptAt(t *testing.T, cfg experiment.Config, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := experiment.Run(ctx, cfg, experiment.Options{AfterStep: func(s int) {
		if s == n {
			cancel()
		}
	}})
	if in := new(experiment.Interrupted); !errors.As(err, &in) || in.Step != n {
		t.Fatalf("interrupted run: %v, want interrupted at step %d", err, n)
	}
}

// untimed reads a metrics log (CSV or JSON lines) as its rows without the
// timed columns (experiment.TimedColumns), one string per row.
func untimed(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var out []string
	if strings.HasSuffix(path, ".jsonl") {
		for _, l := range lines {
			var row map[string]any
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, c := range experiment.TimedColumns() {
				delete(row, c)
			}
			b, _ := json.Marshal(row)
			out = append(out, string(b))
		}
		return out
	}
	header := strings.Split(lines[0], ",")
	for _, l := range lines {
		var kept []string
		for i, v := range strings.Split(l, ",") {
			if !slices.Contains(experiment.TimedColumns(), header[i]) {
				kept = append(kept, v)
			}
		}
		out = append(out, strings.Join(kept, ","))
	}
	return out
}

// TestResumeRebuildsLogs: a run checkpointed at step 40 whose metrics.csv
// or metrics.jsonl was truncated or deleted resumes with a warning naming
// the file, and ends with both logs, summary.json's initial hitting time
// and hitting_time.png's data equal to an uninterrupted run's; when both
// logs lack a row, or abcd.csv lacks one, or no one would hear the warning,
// the resume is refused naming the file and changes nothing.
func TestResumeRebuildsLogs(t *testing.T) {
	base := t.TempDir()
	full := filepath.Join(base, "full")
	want, err := experiment.Run(context.Background(), resumeConfig(full), experiment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	truncate := func(name string, size int64) func(dir string) error {
		return func(dir string) error { return os.Truncate(filepath.Join(dir, name), size) }
	}
	remove := func(name string) func(dir string) error {
		return func(dir string) error { return os.Remove(filepath.Join(dir, name)) }
	}
	both := func(a, b func(string) error) func(string) error {
		return func(dir string) error { return errors.Join(a(dir), b(dir)) }
	}
	for _, tc := range []struct {
		name    string
		damage  func(dir string) error
		silent  bool   // Warn nil
		warning string // the warning's file ("": none)
		refused string // the refusal's file ("": resumed)
	}{
		{name: "intact", damage: func(string) error { return nil }},
		{name: "metrics.csv truncated", damage: truncate("metrics.csv", 300), warning: "metrics.csv lacked"},
		{name: "metrics.csv deleted", damage: remove("metrics.csv"), warning: "metrics.csv lacked"},
		{name: "metrics.jsonl truncated", damage: truncate("metrics.jsonl", 300), warning: "metrics.jsonl lacked"},
		{name: "metrics.jsonl deleted", damage: remove("metrics.jsonl"), warning: "metrics.jsonl lacked"},
		{name: "both truncated", damage: both(truncate("metrics.csv", 300), truncate("metrics.jsonl", 900)), refused: "metrics.csv and metrics.jsonl both lack"},
		{name: "abcd.csv truncated", damage: truncate("abcd.csv", 500), refused: "abcd.csv lacks"},
		{name: "no one to warn", damage: truncate("metrics.csv", 300), silent: true, refused: "metrics.csv lacks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "-"))
			interruptAt(t, resumeConfig(dir), 40)
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			var warnings []string
			opts := experiment.Options{Warn: func(msg string) { warnings = append(warnings, msg) }}
			if tc.silent {
				opts.Warn = nil
			}
			got, err := experiment.Resume(context.Background(), dir, experiment.Changes{}, opts)
			if tc.refused != "" {
				if !experiment.IsInput(err) || !strings.Contains(err.Error(), tc.refused) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("resume: %v, want one line of bad input saying %q", err, tc.refused)
				}
				if after := snapshot(t, dir); !maps.Equal(before, after) {
					t.Errorf("a refused resume changed the folder")
				}
				return
			}
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			switch {
			case tc.warning == "" && len(warnings) > 0:
				t.Errorf("warnings %q, want none", warnings)
			case tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning) || !strings.Contains(warnings[0], "rebuilt from")):
				t.Errorf("warnings %q, want one saying %q ... rebuilt from", warnings, tc.warning)
			}
			for _, f := range []string{"metrics.csv", "metrics.jsonl", "abcd.csv"} {
				a, b := untimed(t, filepath.Join(full, f)), untimed(t, filepath.Join(dir, f))
				if !slices.Equal(a, b) {
					t.Errorf("%s: %d rows, want the uninterrupted run's %d, equal", f, len(b), len(a))
				}
			}
			if g, w := fmt.Sprint(experiment.Value(got.InitialHittingTime)), fmt.Sprint(experiment.Value(want.InitialHittingTime)); g != w {
				t.Errorf("initial_hitting_time: got %s, want %s", g, w)
			}
			m, err := experiment.ReadMetrics(dir)
			if err != nil || m.Column("step")[0] != 0 {
				t.Errorf("hitting_time.png's data (metrics.csv) does not start at step 0: %v", err)
			}
		})
	}
}

// snapshot reads every file of a folder.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}
