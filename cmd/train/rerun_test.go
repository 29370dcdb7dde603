package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunFolderHasOneWriter: while a run holds its folder, a second run on
// the same -out (the same configuration or another) exits 2 naming the
// holder's pid, and writes nothing.
func TestRunFolderHasOneWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("a second")
	}
	out := filepath.Join(t.TempDir(), "run")
	first := trainProcess(t, "run", "-W", "15", "-K", "15", "-L", "5", "-until", "0", "-steps", "100000", "-out", out)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { first.Process.Signal(syscall.SIGKILL); first.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for { // the first run holds its lock once it writes metrics.csv
		if _, err := os.Stat(filepath.Join(out, "metrics.csv")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run wrote no metrics.csv in 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, args := range [][]string{
		{"run", "-W", "15", "-K", "15", "-L", "5", "-until", "0", "-steps", "100000", "-out", out},
		{"run", "-W", "3", "-K", "2", "-L", "2", "-seed", "2", "-out", out, "-force"},
	} {
		code, _, errs := runCLI(t, args...)
		if want := "in use by another run (pid " + strconv.Itoa(first.Process.Pid) + ")"; code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, code, errs, want)
		}
	}
}

// TestRerunResumesOrSaysDone: running the same command again after an
// interruption resumes the run from its checkpoint (never restarts it) and
// reaches the uninterrupted run's metrics; running it once more finds it
// finished, says so and changes nothing. Resuming it with a smaller -until
// trains on; a resume with nothing to change does nothing.
func TestRerunResumesOrSaysDone(t *testing.T) {
	base := t.TempDir()
	args := func(out string) []string {
		return []string{"run", "-W", "3", "-K", "3", "-L", "2", "-optimizer", "adam", "-lr", "0.05", "-until", "0.01", "-log-every", "1", "-checkpoint-every", "25", "-out", out}
	}
	full, cut := filepath.Join(base, "full"), filepath.Join(base, "cut")
	if code, _, errs := runCLI(t, args(full)...); code != 0 {
		t.Fatalf("full run: exit %d: %s", code, errs)
	}
	interruptAtStep = 30
	code, _, _ := runCLI(t, args(cut)...)
	interruptAtStep = 0
	if code != 130 {
		t.Fatalf("interrupted run: exit %d, want 130", code)
	}
	code, out, errs := runCLI(t, args(cut)...)
	if code != 0 || !strings.Contains(out, "resuming") {
		t.Fatalf("rerun: exit %d, stdout %q, stderr %q; want it resumed", code, out, errs)
	}
	for _, f := range []string{"metrics.csv", "abcd.csv"} {
		if a, b := withoutWall(t, filepath.Join(full, f)), withoutWall(t, filepath.Join(cut, f)); a != b {
			t.Errorf("%s differs between the uninterrupted and the rerun run", f)
		}
	}
	files := func() string {
		var b strings.Builder
		for _, f := range []string{"summary.json", "metrics.csv", "checkpoint.bin", "config.json"} {
			data, _ := os.ReadFile(filepath.Join(cut, f))
			b.Write(data)
		}
		return b.String()
	}
	before := files()
	for _, again := range [][]string{args(cut), {"run", "-resume", cut}, {"run", "-resume", cut, "-until", "0.01"}} {
		code, out, errs := runCLI(t, again...)
		if code != 0 || !strings.Contains(out, "nothing to do") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want nothing to do", again, code, out, errs)
		}
		if files() != before {
			t.Errorf("%v changed the finished run's files", again)
		}
	}
	code, _, errs = runCLI(t, "run", "-resume", cut, "-until", "0.001")
	s := readJSON(t, filepath.Join(cut, "summary.json"))
	if code != 0 || s["converged"] != true || s["final_hitting_time"].(float64) > 35*1.001 {
		t.Errorf("resume with -until 0.001: exit %d (%s), summary %v", code, errs, s)
	}
}

// TestResumeRefusesEditedConfig: config.json edited by hand is not
// silently overwritten: the resume is refused, naming the file; so is a
// checkpoint copied in from another run.
func TestResumeRefusesEditedConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	interruptAtStep = 5
	runCLI(t, "run", "-W", "3", "-K", "2", "-L", "2", "-until", "0", "-steps", "50", "-out", dir)
	interruptAtStep = 0
	cfg := filepath.Join(dir, "config.json")
	data, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(data), `"steps": 50`, `"steps": 60`, 1)), 0o644)
	code, _, errs := runCLI(t, "run", "-resume", dir)
	if code != 2 || !strings.Contains(errs, "edited by hand") {
		t.Errorf("exit %d, stderr %q; want 2 naming the edited config.json", code, errs)
	}

	// Another run's checkpoint copied in (seed 2's, into seed 1's folder
	// with its config.json restored) is refused the same way.
	os.WriteFile(cfg, data, 0o644)
	other := filepath.Join(t.TempDir(), "other")
	runCLI(t, "run", "-W", "3", "-K", "2", "-L", "2", "-until", "0", "-steps", "10", "-seed", "2", "-out", other)
	ck, _ := os.ReadFile(filepath.Join(other, "checkpoint.bin"))
	os.WriteFile(filepath.Join(dir, "checkpoint.bin"), ck, 0o644)
	code, _, errs = runCLI(t, "run", "-resume", dir)
	if code != 2 || !oneLine(errs) || !strings.Contains(errs, "copied from another run") {
		t.Errorf("another run's checkpoint: exit %d, stderr %q; want 2 and one line saying so", code, errs)
	}
}

// TestResumeChecksVocab: a vocab.txt that is not the run's own (here one
// name edited) is refused on resume, naming the file; a deleted one is
// rewritten, byte for byte as the run wrote it.
func TestResumeChecksVocab(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	interruptAtStep = 5
	runCLI(t, "run", "-W", "3", "-K", "2", "-L", "2", "-until", "0", "-steps", "20", "-out", dir)
	interruptAtStep = 0
	path := filepath.Join(dir, "vocab.txt")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(strings.Replace(string(orig), "f>u1.1l", "f>u9.9l", 1)), 0o644)
	if code, _, errs := runCLI(t, "run", "-resume", dir); code != 2 || !strings.Contains(errs, "vocab.txt is not this run's vocabulary") {
		t.Errorf("edited vocab.txt: exit %d, stderr %q; want 2 naming vocab.txt", code, errs)
	}
	os.Remove(path)
	if code, _, errs := runCLI(t, "run", "-resume", dir); code != 0 {
		t.Fatalf("deleted vocab.txt: exit %d, stderr %q; want 0", code, errs)
	}
	if got, _ := os.ReadFile(path); string(got) != string(orig) {
		t.Errorf("rewritten vocab.txt differs from the run's own")
	}
}
