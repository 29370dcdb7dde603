package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// plan expands the small sweep into dir.
func plan(t *testing.T, spec, dir string) *Plan {
	t.Helper()
	s, err := ParseSpec([]byte(spec), "small")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Expand(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// metricsWithoutWall reads every run's metrics.csv and abcd.csv without
// the timed columns (experiment.TimedColumns), keyed by run folder name.
func metricsWithoutWall(t *testing.T, p *Plan) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range p.Runs {
		for _, f := range []string{"metrics.csv", "abcd.csv"} {
			data, err := os.ReadFile(filepath.Join(r.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(data), "\n")
			header := strings.Split(lines[0], ",")
			for i, l := range lines {
				fs := strings.Split(l, ",")
				if len(fs) != len(header) {
					continue
				}
				var kept []string
				for c, v := range fs {
					if !slices.Contains(experiment.TimedColumns(), header[c]) {
						kept = append(kept, v)
					}
				}
				lines[i] = strings.Join(kept, ",")
			}
			out[r.Name+"/"+f] = strings.Join(lines, "\n")
		}
	}
	return out
}

func sameMetrics(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%s: %d files against %d", what, len(a), len(b))
	}
	for k, v := range a {
		if b[k] != v || len(v) < 50 {
			t.Errorf("%s: %s differs (%d bytes against %d)", what, k, len(b[k]), len(v))
		}
	}
}

// TestJobsShardsAndRerun: the sweep gives the same metrics, bit for bit
// but for the timed columns, run by two workers or as shards 0/2 and 1/2; a
// second pass does no work.
func TestJobsShardsAndRerun(t *testing.T) {
	base := t.TempDir()
	pool := plan(t, small, filepath.Join(base, "pool"))
	rep, err := Execute(context.Background(), pool, Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, trained, _, _ := rep.Counts(); trained != 4 {
		t.Errorf("trained %d runs, want 4", trained)
	}
	shards := plan(t, small, filepath.Join(base, "shards"))
	for i := range 2 {
		rep, err := Execute(context.Background(), shards, Options{Jobs: 1, Shard: Shard{i, 2}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != 2 || rep.Results[0].Run.Index != i || rep.Results[1].Run.Index != i+2 {
			t.Errorf("shard %d/2 ran %v, want runs %d and %d", i, rep.Results, i, i+2)
		}
	}
	sameMetrics(t, "jobs 2 against shards", metricsWithoutWall(t, pool), metricsWithoutWall(t, shards))
	var started int
	rep, err = Execute(context.Background(), pool, Options{Jobs: 2, Started: func(Run, State) { started++ }})
	if err != nil {
		t.Fatal(err)
	}
	if skipped, trained, _, _ := rep.Counts(); skipped != 4 || trained != 0 || started != 0 {
		t.Errorf("rerun: skipped %d, trained %d, started %d; want 4, 0, 0", skipped, trained, started)
	}
	for _, res := range rep.Results {
		if res.Summary.FinalHittingTime == nil {
			t.Errorf("rerun: run %d has no summary", res.Run.Index)
		}
	}
}

// TestInterruptResumes cancels a sweep after some steps: every unfinished
// run has a checkpoint, and the next pass resumes them all to the metrics
// of an uninterrupted sweep.
func TestInterruptResumes(t *testing.T) {
	base := t.TempDir()
	whole := plan(t, small, filepath.Join(base, "whole"))
	if _, err := Execute(context.Background(), whole, Options{Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	cut := plan(t, small, filepath.Join(base, "cut"))
	ctx, cancel := context.WithCancel(context.Background())
	var steps atomic.Int64
	opts := Options{Jobs: 2}
	opts.Run.AfterStep = func(int) {
		if steps.Add(1) == 30 {
			cancel()
		}
	}
	rep, err := Execute(ctx, cut, opts)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("got %v, want ErrInterrupted", err)
	}
	if _, _, interrupted, _ := rep.Counts(); interrupted != 2 {
		t.Errorf("%d runs interrupted, want 2 (one per worker)", interrupted)
	}
	states, err := cut.Check(All)
	if err != nil {
		t.Fatal(err)
	}
	if want := []State{Resumable, Resumable, New, New}; !slices.Equal(states, want) {
		t.Errorf("states after the interruption %v, want %v", states, want)
	}
	var resumed int
	rep, err = Execute(context.Background(), cut, Options{Jobs: 2, Started: func(_ Run, st State) {
		if st == Resumable {
			resumed++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, trained, _, _ := rep.Counts(); trained != 4 || resumed != 2 {
		t.Errorf("second pass trained %d (resumed %d), want 4 (2)", trained, resumed)
	}
	sameMetrics(t, "interrupted and resumed against whole", metricsWithoutWall(t, whole), metricsWithoutWall(t, cut))
}

// TestOtherConfigRefused: a run folder holding another configuration stops
// the sweep before any work.
func TestOtherConfigRefused(t *testing.T) {
	p := plan(t, small, t.TempDir())
	r := p.Runs[1]
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	other := p.Runs[0].Config
	data := mustMarshal(other)
	if err := os.WriteFile(filepath.Join(r.Dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	started := 0
	_, err := Execute(context.Background(), p, Options{Started: func(Run, State) { started++ }})
	if err == nil || !strings.Contains(err.Error(), "run 1: folder "+r.Dir+" holds another configuration") || started != 0 {
		t.Errorf("got %v after %d runs started, want run 1 refused before any", err, started)
	}
}

// TestCollectKeepsSweepsApart: two sweeps aggregated together (each with
// its own index 0, 1, ...) keep the order of the folders given, each in
// its index's order, rather than interleaving by index; both are named in
// Sweeps (two of one name by their folders too), each run carries its
// sweep's label, and runs.csv has a sweep column. A copy of a sweep's
// folder is the same sweep.
func TestCollectKeepsSweepsApart(t *testing.T) {
	base := t.TempDir()
	a := plan(t, `{"base": {"train": {"trainer": "rlvr-exact", "steps": 2, "until": 0}}, "grid": {"train.seed": [1, 2]}}`, filepath.Join(base, "a"))
	b := plan(t, `{"base": {"graph": {"W": 2, "K": 2, "L": 1}, "train": {"trainer": "rlvr-exact", "steps": 2, "until": 0}}, "grid": {"train.seed": [1, 2]}}`, filepath.Join(base, "b"))
	for _, p := range []*Plan{a, b} {
		if _, err := Execute(context.Background(), p, Options{Jobs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, order := range [][]*Plan{{b, a}, {a, b}} {
		c, err := Collect([]string{order[0].Out, order[1].Out})
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, r := range c.Runs {
			got = append(got, r.Name)
		}
		for _, p := range order {
			for _, r := range p.Runs {
				want = append(want, r.Name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("runs in the order\n%v\nwant\n%v", got, want)
		}
		if len(c.Sweeps) != 2 || c.Sweeps[0].Dir != order[0].Out || c.Sweeps[1].Label != "small ("+order[1].Out+")" {
			t.Errorf("sweeps %+v, want small in %s and %s", c.Sweeps, order[0].Out, order[1].Out)
		}
		if r := c.Runs[len(c.Runs)-1]; r.Sweep != c.Sweeps[1].Label {
			t.Errorf("run %s of sweep %q, want %q", r.Name, r.Sweep, c.Sweeps[1].Label)
		}
	}
	agg := filepath.Join(base, "agg")
	c, err := Collect([]string{a.Out, b.Out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(agg); err != nil {
		t.Fatal(err)
	}
	runs, _ := os.ReadFile(filepath.Join(agg, "runs.csv"))
	if !strings.HasPrefix(string(runs), "run,sweep,index,code,") {
		t.Errorf("runs.csv of two sweeps starts %.40q, want a sweep column", runs)
	}
	copied := filepath.Join(base, "copy")
	if err := os.CopyFS(copied, os.DirFS(a.Out)); err != nil {
		t.Fatal(err)
	}
	c, err = Collect([]string{a.Out, copied})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sweeps) != 1 || len(c.Runs) != 2 {
		t.Errorf("a sweep and its copy: sweeps %+v, %d runs; want one sweep of 2 runs", c.Sweeps, len(c.Runs))
	}
}

// TestCollectNamesDamagedRuns: a completed run whose metrics.csv holds its
// header alone (cut at its line break) or whose summary.json does not
// parse does not count, and its problem names the file.
func TestCollectNamesDamagedRuns(t *testing.T) {
	p := plan(t, `{"base": {"graph": {"W": 2, "K": 2, "L": 1}, "train": {"trainer": "rlvr-exact", "steps": 2, "until": 0}}, "grid": {"train.seed": [1, 2]}}`, t.TempDir())
	if _, err := Execute(context.Background(), p, Options{Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	metrics := filepath.Join(p.Runs[0].Dir, experiment.MetricsFile)
	data, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(data), "\n")
	os.WriteFile(metrics, []byte(header+"\n"), 0o644)
	summary := filepath.Join(p.Runs[1].Dir, experiment.SummaryFile)
	os.WriteFile(summary, []byte(`{"steps": 2,`), 0o644)
	c, err := Collect([]string{p.Out})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"damaged: " + metrics + " has no rows: copy the run's folder again, or remove it and run the sweep again", "damaged: " + summary + " does not parse: "} {
		if got := c.Runs[i].Problem; !strings.HasPrefix(got, want) {
			t.Errorf("run %d: problem %q, want %q", i, got, want)
		}
	}
}
