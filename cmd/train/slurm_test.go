package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slurm skips a test unless a Slurm cluster answers: sbatch on PATH and
// SLURM_CONF set (a one-node cluster: /work/shared/tools/slurm-local start).
func slurm(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sbatch"); err != nil || os.Getenv("SLURM_CONF") == "" {
		t.Skip("no Slurm cluster: this test needs sbatch on PATH and SLURM_CONF set (e.g. slurm-local start, then export SLURM_CONF=...)")
	}
}

// buildTrain builds the train binary into a temporary folder.
func buildTrain(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "train")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// submit submits an sbatch script and waits until its job leaves the queue
// (squeue: sacct may not be there).
func submit(t *testing.T, script string, timeout time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sweep.sbatch")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sbatch", "--parsable", path).CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v: %s", err, out)
	}
	job, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	t.Logf("submitted job %s", job)
	submitWait(t, job, timeout)
	return job
}

// submitWait waits until a job leaves the queue.
func submitWait(t *testing.T, job string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		q, err := exec.Command("squeue", "-h", "-j", job, "-o", "%i %T").CombinedOutput()
		if err != nil && !strings.Contains(string(q), "Invalid job id") {
			t.Fatalf("squeue: %v: %s", err, q)
		}
		if strings.TrimSpace(string(q)) == "" || strings.Contains(string(q), "Invalid job id") {
			return
		}
		if time.Now().After(deadline) {
			exec.Command("scancel", job).Run()
			t.Fatalf("job %s still queued after %v:\n%s", job, timeout, q)
		}
		time.Sleep(time.Second)
	}
}

// TestSlurmArrayMatchesLocal (opt-in, needs a Slurm cluster) submits the
// printed sbatch script of a sweep of 2 seeds x 2 sizes of exact RLVR, one
// array task per run, waits for it, and expects its aggregate to equal the
// local run's bit for bit (wall seconds aside); submitting it again trains
// nothing.
func TestSlurmArrayMatchesLocal(t *testing.T) {
	slurm(t)
	bin := buildTrain(t)
	spec := writeSpec(t, smallSweep)
	base := t.TempDir()
	local, cluster := filepath.Join(base, "local"), filepath.Join(base, "slurm")
	mustCLI(t, "sweep", spec, "-out", local, "-jobs", "2")
	script, err := exec.Command(bin, "sweep", spec, "-out", cluster, "-print", "slurm", "-time", "00:10:00").Output()
	if err != nil {
		t.Fatalf("-print slurm: %v", err)
	}
	start := time.Now()
	job := submit(t, string(script), 5*time.Minute)
	t.Logf("job %s left the queue after %.1fs", job, time.Since(start).Seconds())
	logs, _ := filepath.Glob(filepath.Join(cluster, "slurm-"+job+"_*.out"))
	if len(logs) != 4 {
		t.Errorf("%d task logs, want 4 (one per run)", len(logs))
	}
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if !contains(string(data), "1 trained, 0 already done, 0 interrupted, 0 failed") {
			t.Errorf("%s:\n%s", l, data)
		}
	}
	mustCLI(t, "aggregate", local)
	agg := mustCLI(t, "aggregate", cluster)
	t.Logf("aggregate of the Slurm sweep:\n%s", agg)
	a, b := csvWithoutWall(t, filepath.Join(local, "aggregate", "runs.csv")), csvWithoutWall(t, filepath.Join(cluster, "aggregate", "runs.csv"))
	if a != b || strings.Count(a, "\n") < 100 {
		t.Errorf("the Slurm sweep's runs.csv differs from the local one (%d and %d bytes)", len(b), len(a))
	}
	job = submit(t, string(script), 5*time.Minute)
	logs, _ = filepath.Glob(filepath.Join(cluster, "slurm-"+job+"_*.out"))
	for _, l := range logs {
		if data, _ := os.ReadFile(l); !contains(string(data), "0 trained, 1 already done") {
			t.Errorf("resubmitted: %s:\n%s", l, data)
		}
	}
}

// TestSlurmTimeLimitRequeues (opt-in, needs a Slurm cluster) plays the
// time-limit warning of --signal=B:USR1@120 with scancel --signal=USR1
// --batch: the task checkpoints its run, requeues itself and resumes it,
// and the run ends with the metrics of an uninterrupted one.
func TestSlurmTimeLimitRequeues(t *testing.T) {
	slurm(t)
	bin := buildTrain(t)
	spec := writeSpec(t, `{
  "base": {"graph": {"W": 15, "K": 15, "L": 5}, "train": {"trainer": "rlvr-exact", "optimizer": {"name": "adam", "lr": 0.02}, "steps": 2000, "until": 0, "log_every": 1}, "checkpoint_every": 50},
  "grid": {"train.seed": [1]}
}`)
	base := t.TempDir()
	local, cluster := filepath.Join(base, "local"), filepath.Join(base, "slurm")
	mustCLI(t, "sweep", spec, "-out", local)
	script, err := exec.Command(bin, "sweep", spec, "-out", cluster, "-print", "slurm", "-cpus", "2").Output()
	if err != nil {
		t.Fatalf("-print slurm: %v", err)
	}
	path := filepath.Join(t.TempDir(), "sweep.sbatch")
	os.WriteFile(path, script, 0o755)
	out, err := exec.Command("sbatch", "--parsable", path).CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v: %s", err, out)
	}
	job, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	// Wait for the run's first checkpoint, then warn the batch shell.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if ck, _ := filepath.Glob(filepath.Join(cluster, "*", "checkpoint.bin")); len(ck) > 0 {
			break
		}
		if time.Now().After(deadline) {
			exec.Command("scancel", job).Run()
			t.Fatal("no checkpoint after 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := exec.Command("scancel", "--signal=USR1", "--batch", job).CombinedOutput(); err != nil {
		t.Fatalf("scancel --signal=USR1: %v: %s", err, out)
	}
	t.Logf("sent USR1 to the batch shell of job %s", job)
	submitWait(t, job, 5*time.Minute)
	logs, _ := filepath.Glob(filepath.Join(cluster, "slurm-*_0.out"))
	if len(logs) != 1 {
		t.Fatalf("task logs %v, want one", logs)
	}
	data, _ := os.ReadFile(logs[0])
	t.Logf("task log:\n%s", data)
	for _, want := range []string{"interrupted at step", "time limit near: checkpoints written; requeueing", "resumed, done"} {
		if !contains(string(data), want) {
			t.Errorf("task log lacks %q", want)
		}
	}
	mustCLI(t, "aggregate", local)
	mustCLI(t, "aggregate", cluster)
	if a, b := csvWithoutWall(t, filepath.Join(local, "aggregate", "runs.csv")), csvWithoutWall(t, filepath.Join(cluster, "aggregate", "runs.csv")); a != b || strings.Count(a, "\n") < 2000 {
		t.Errorf("the requeued run differs from the uninterrupted one (%d and %d bytes)", len(b), len(a))
	}
}
