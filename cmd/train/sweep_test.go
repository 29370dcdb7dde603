package main

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/sweep"
)

// smallSweep is 2 seeds x 2 sizes of exact RLVR, a fraction of a second
// each.
const smallSweep = `{
  "base": {"train": {"trainer": "rlvr-exact", "steps": 300, "until": 0.001, "log_every": 5}, "checkpoint_every": 20},
  "grid": {"train.seed": [1, 2], "graph": [{"W": 2, "K": 2, "L": 2}, {"W": 3, "K": 2, "L": 2}]}
}`

// writeSpec writes a spec file into a temporary folder.
func writeSpec(t *testing.T, spec string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "small.json")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// csvWithoutWall reads an aggregate's runs.csv without its timed columns
// (experiment.TimedColumns), the values a resumed or differently scheduled
// run may change, and without the code column: a sweep trained in this
// test process and one trained by a built binary record their commits
// differently (git's HEAD here, the binary's stamp or none there).
func csvWithoutWall(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	for _, r := range recs {
		var kept []string
		for c, v := range r {
			if !slices.Contains(experiment.TimedColumns(), recs[0][c]) && recs[0][c] != "code" {
				kept = append(kept, v)
			}
		}
		w.Write(kept)
	}
	w.Flush()
	return b.String()
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("train %s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// TestSweepJobsEqualsShardProcesses: train sweep -jobs 2 and the same sweep
// as shards 0/2 and 1/2 in two processes at once aggregate to the same
// runs.csv (wall seconds aside); a second pass trains nothing.
func TestSweepJobsEqualsShardProcesses(t *testing.T) {
	spec := writeSpec(t, smallSweep)
	base := t.TempDir()
	pool, shards := filepath.Join(base, "pool"), filepath.Join(base, "shards")
	mustCLI(t, "sweep", spec, "-out", pool, "-jobs", "2")
	var procs []*exec.Cmd
	for _, s := range []string{"0/2", "1/2"} {
		cmd := trainProcess(t, "sweep", spec, "-out", shards, "-jobs", "1", "-shard", s)
		cmd.Stdout, cmd.Stderr = new(safeBuffer), new(safeBuffer)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	for _, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: %v: %s", cmd.Args, err, cmd.Stderr)
		}
	}
	mustCLI(t, "aggregate", pool)
	mustCLI(t, "aggregate", shards)
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "sub")} { // an -out that cannot be a folder is the user's input
		if code, _, errs := runCLI(t, "aggregate", pool, "-out", out); code != 2 || !strings.Contains(errs, "aggregate: -out "+out) {
			t.Errorf("aggregate -out %s: exit %d, %q; want 2 naming -out", out, code, errs)
		}
	}
	a := csvWithoutWall(t, filepath.Join(pool, "aggregate", "runs.csv"))
	b := csvWithoutWall(t, filepath.Join(shards, "aggregate", "runs.csv"))
	if a != b || strings.Count(a, "\n") < 100 {
		t.Errorf("runs.csv of -jobs 2 and of two shard processes differ (%d and %d bytes)", len(a), len(b))
	}
	for _, dir := range []string{pool, shards} { // each row names the code that trained its run
		f, err := os.Open(filepath.Join(dir, "aggregate", "runs.csv"))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(recs) < 2 || recs[0][2] != "code" {
			t.Fatalf("%s runs.csv: %v, header %v: want a code column third", dir, err, recs[0])
		}
		for _, r := range recs[1:] {
			if r[2] != experiment.Code() {
				t.Fatalf("%s runs.csv: run %s code %q, want this test's %q", dir, r[0], r[2], experiment.Code())
			}
		}
	}
	if out := mustCLI(t, "sweep", spec, "-out", pool); !contains(out, "0 trained, 4 already done, 0 interrupted, 0 failed") {
		t.Errorf("second pass: %q, want nothing trained", out)
	}
}

// TestSweepBadInput: a bad spec or shard exits 2 with one line naming the
// field.
func TestSweepBadInput(t *testing.T) {
	for _, c := range []struct {
		name, spec string
		args, env  []string
		want       string
	}{
		{"unknown path", `{"grid": {"train.sed": [1]}}`, nil, nil, `grid "train.sed": unknown path`},
		{"empty grid", `{"grid": {}}`, nil, nil, "grid is empty"},
		{"duplicate keys", `{"grid": {"train.seed": [1]}, "grid": {}}`, nil, nil, "grid: duplicate key"},
		{"refused type", `{"grid": {"train.steps": [10, 2.5]}}`, nil, nil, `grid "train.steps" value 2 (2.5): `},
		{"refused value", `{"grid": {"train.optimizer.name": ["adam", "rmsprop"]}}`, nil, nil, `run 1 (train.optimizer.name=rmsprop): solvers: optimizer "rmsprop": want sign, sgd or adam`},
		{"bad combination", `{"grid": {"model": ["transformer"]}}`, nil, nil, "run 0 (model=transformer): trainers: model transformer trains with"},
		{"shard out of range", smallSweep, []string{"-shard", "2/2"}, nil, "-shard 2/2: want 0 <= i < n"},
		{"malformed shard", smallSweep, []string{"-shard", "1"}, nil, `-shard "1": want i/n`},
		{"shard and env", smallSweep, []string{"-shard", "0/2"}, []string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "2"}, "-shard 0/2 and SLURM_ARRAY_TASK_ID=1 are both given"},
		{"k8s without count", smallSweep, nil, []string{"JOB_COMPLETION_INDEX", "1"}, "TRAIN_SWEEP_SHARDS is not set"},
		{"slurm list without count", smallSweep, nil, []string{"SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_MAX", "3", "SLURM_ARRAY_TASK_COUNT", "2"}, "TRAIN_SWEEP_SHARDS is not set: set it to the number of shards (the script of -print slurm does)"},
		{"env out of range", smallSweep, nil, []string{"SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "3"}, "SLURM_ARRAY_TASK_ID=5: want 0 <= i < n"},
		{"unknown print", smallSweep, []string{"-print", "pbs"}, nil, `-print "pbs": want slurm or k8s`},
		{"no spec", "", []string{"-jobs", "2"}, nil, "name the spec file: train sweep SPEC.json"},
		{"two specs", smallSweep, []string{"other.json"}, nil, "one spec file, got 2 arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := 0; i < len(c.env); i += 2 {
				t.Setenv(c.env[i], c.env[i+1])
			}
			args := []string{"sweep"}
			if c.spec != "" {
				args = append(args, writeSpec(t, c.spec), "-out", t.TempDir(), "-dry-run")
			}
			code, _, errs := runCLI(t, append(args, c.args...)...)
			if code != 2 || !contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, errs, c.want)
			}
		})
	}
}

// TestSlurmResubmittedTaskKeepsItsShard: the printed sbatch script gives
// its tasks the count of shards it was printed for, so a task submitted
// again alone (sbatch --array=3), in a range (--array=2-3) or in a list
// (--array=1,3) trains the runs it was printed to train. The script is
// run by bash with a stand-in binary that records what the task sees, as
// Slurm would set the array's variables.
func TestSlurmResubmittedTaskKeepsItsShard(t *testing.T) {
	spec := writeSpec(t, smallSweep)
	out := t.TempDir()
	stub := filepath.Join(t.TempDir(), "train")
	seen := filepath.Join(t.TempDir(), "shards")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nprintf %s \"$TRAIN_SWEEP_SHARDS\" > '"+seen+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte(mustCLI(t, "sweep", spec, "-out", out, "-print", "slurm", "-tasks", "4", "-binary", stub)), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name            string
		id, lo, hi, cnt string
		want            string
	}{
		{"--array=3", "3", "3", "3", "1", "   3  new"},
		{"--array=2-3", "3", "2", "3", "2", "   3  new"},
		{"--array=1,3", "1", "1", "3", "2", "   1  new"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := []string{"SLURM_ARRAY_TASK_ID", c.id, "SLURM_ARRAY_TASK_MIN", c.lo, "SLURM_ARRAY_TASK_MAX", c.hi, "SLURM_ARRAY_TASK_COUNT", c.cnt}
			run := exec.Command("bash", script)
			run.Env = os.Environ()
			for i := 0; i < len(env); i += 2 {
				run.Env = append(run.Env, env[i]+"="+env[i+1])
				t.Setenv(env[i], env[i+1])
			}
			os.Remove(seen)
			if msg, err := run.CombinedOutput(); err != nil {
				t.Fatalf("bash %s: %v: %s", script, err, msg)
			}
			shards, err := os.ReadFile(seen)
			if err != nil {
				t.Fatalf("the stand-in train did not run: %v", err)
			}
			t.Setenv(sweep.ShardsEnv, string(shards))
			got := mustCLI(t, "sweep", spec, "-out", out, "-dry-run")
			if lines := strings.Split(strings.TrimSpace(got), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], c.want) {
				t.Errorf("task %s with %s=%s lists:\n%s\nwant its one run, %q", c.id, sweep.ShardsEnv, shards, got, c.want)
			}
		})
	}
}

// TestSweepSIGINTResumes interrupts a sweep process with SIGINT: it exits
// 130, every unfinished run is resumable, and running the sweep again
// finishes them with the metrics of an uninterrupted sweep.
func TestSweepSIGINTResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("several seconds")
	}
	spec := writeSpec(t, `{
  "base": {"graph": {"W": 15, "K": 15, "L": 5}, "train": {"trainer": "rlvr-exact", "optimizer": {"name": "adam", "lr": 0.02}, "steps": 300, "until": 0, "log_every": 1}, "checkpoint_every": 7},
  "grid": {"train.seed": [1, 2, 3]}
}`)
	base := t.TempDir()
	whole, cut := filepath.Join(base, "whole"), filepath.Join(base, "cut")
	mustCLI(t, "sweep", spec, "-out", whole, "-jobs", "2")
	cmd := trainProcess(t, "sweep", spec, "-out", cut, "-jobs", "2")
	var stdout, stderr safeBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the first checkpoint is on disk: the runs are then
	// under way, whatever the machine's speed (a fixed sleep let a fast
	// machine finish two runs and not start the third).
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(cut, "*", "checkpoint.bin")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no checkpoint after 30 s; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130; stdout %q stderr %q", err, stdout.String(), stderr.String())
	}
	if !contains(stderr.String(), "run the same command again to resume") {
		t.Errorf("stderr %q does not say how to resume", stderr.String())
	}
	dry := mustCLI(t, "sweep", spec, "-out", cut, "-dry-run")
	if !contains(dry, "resumable") {
		t.Errorf("after SIGINT no run is resumable:\n%s", dry)
	}
	out := mustCLI(t, "sweep", spec, "-out", cut, "-jobs", "2")
	if !contains(out, "resumed, done") {
		t.Errorf("second pass resumed nothing:\n%s", out)
	}
	mustCLI(t, "aggregate", whole)
	mustCLI(t, "aggregate", cut)
	if a, b := csvWithoutWall(t, filepath.Join(whole, "aggregate", "runs.csv")), csvWithoutWall(t, filepath.Join(cut, "aggregate", "runs.csv")); a != b || len(a) < 1000 {
		t.Errorf("interrupted and resumed sweep differs from the uninterrupted one (%d and %d bytes)", len(b), len(a))
	}
}

// TestAggregateNamesFailedRuns: a run without summary.json, a stalled run,
// one whose summary.json does not parse and one whose metrics.csv was cut
// mid-row are named (the damaged ones with their file), and aggregate
// exits 1 unless -allow-missing.
func TestAggregateNamesFailedRuns(t *testing.T) {
	spec := writeSpec(t, smallSweep)
	out := filepath.Join(t.TempDir(), "sweep")
	mustCLI(t, "sweep", spec, "-out", out)
	dirs, _ := filepath.Glob(filepath.Join(out, "rlvr-exact-*"))
	if len(dirs) != 4 {
		t.Fatalf("%d run folders, want 4", len(dirs))
	}
	if err := os.Remove(filepath.Join(dirs[0], "summary.json")); err != nil {
		t.Fatal(err)
	}
	stalled := filepath.Join(dirs[1], "summary.json")
	data, err := os.ReadFile(stalled)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(stalled, []byte(strings.Replace(string(data), `"stalled": false`, `"stalled": true`, 1)), 0o644)
	corrupt := filepath.Join(dirs[2], "summary.json")
	os.WriteFile(corrupt, data[:len(data)/2], 0o644)
	cut := filepath.Join(dirs[3], "metrics.csv")
	if data, err = os.ReadFile(cut); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cut, data[:len(data)-20], 0o644)
	code, stdout, errs := runCLI(t, "aggregate", out)
	first, second := filepath.Base(dirs[0]), filepath.Base(dirs[1])
	if code != 1 || !contains(errs, "4 of 4 runs missing, incomplete, damaged or stalled") || !contains(errs, first+"): incomplete: no summary.json") || !contains(errs, second+"): stalled at step") ||
		!contains(errs, ": damaged: "+corrupt+" does not parse: unexpected end of JSON input") || !contains(errs, ": damaged: "+cut+": cut short") {
		t.Errorf("exit %d, stderr %q; want 1 naming %s, %s, %s and %s", code, errs, first, second, corrupt, cut)
	}
	if !contains(stdout, "| 0 of 2 |") || !contains(stdout, "**4 runs do not count**") {
		t.Errorf("summary does not show the missing seeds:\n%s", stdout)
	}
	// Flags and folders in any order.
	if code, _, errs := runCLI(t, "aggregate", "-allow-missing", "-out", filepath.Join(t.TempDir(), "agg"), out); code != 0 {
		t.Errorf("-allow-missing: exit %d: %s", code, errs)
	}
}

// TestAggregateTwoSweeps: the folders of two sweeps (each numbering its
// runs from 0) are refused in one line naming both, exit 2, with nothing
// written; with -combine runs.csv tells them apart in a sweep column.
func TestAggregateTwoSweeps(t *testing.T) {
	base := t.TempDir()
	small, other := filepath.Join(base, "small"), filepath.Join(base, "other")
	mustCLI(t, "sweep", writeSpec(t, smallSweep), "-out", small)
	otherSpec := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(otherSpec, []byte(`{"base": {"graph": {"W": 2, "K": 2, "L": 1}, "train": {"trainer": "rlvr-exact", "steps": 20}}, "grid": {"train.seed": [3, 4]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "sweep", otherSpec, "-out", other)
	agg := filepath.Join(base, "agg")
	code, out, errs := runCLI(t, "aggregate", small, other, "-out", agg)
	want := small + " holds sweep small and " + other + " sweep other, each numbering its runs from 0: give the folders of one sweep, or -combine"
	if code != 2 || out != "" || !contains(errs, want) || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line with %q", code, out, errs, want)
	}
	if _, err := os.Stat(agg); err == nil {
		t.Errorf("a refused aggregate made %s", agg)
	}
	mustCLI(t, "aggregate", small, other, "-out", agg, "-combine")
	f, err := os.Open(filepath.Join(agg, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || !slices.Equal(recs[0][:4], []string{"run", "sweep", "index", "code"}) {
		t.Fatalf("runs.csv: %v, header %v: want run, sweep, index, code first", err, recs[0])
	}
	runs := map[string]string{} // sweep and index -> run
	for _, r := range recs[1:] {
		key := r[1] + " " + r[2]
		if run, ok := runs[key]; ok && run != r[0] {
			t.Errorf("runs %s and %s are both run %s", run, r[0], key)
		}
		runs[key] = r[0]
	}
	if len(runs) != 6 {
		t.Errorf("%d runs by sweep and index, want 6: %v", len(runs), runs)
	}
}
