package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/experiment"
)

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestRunWritesFolder is the end-to-end check of train run: a small exact
// RLVR run converges and leaves every file of a run folder.
func TestRunWritesFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := runCLI(t, "run", "-W", "3", "-K", "2", "-L", "2", "-out", dir, "-checkpoint-every", "50")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range []string{"config.json", "metrics.csv", "abcd.csv", "summary.json", "hitting_time.png", "abcd.png", "checkpoint.bin"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	s := readJSON(t, filepath.Join(dir, "summary.json"))
	for _, k := range []string{"initial_hitting_time", "final_hitting_time", "limit_hitting_time", "steps", "wall_seconds"} {
		if _, ok := s[k]; !ok {
			t.Errorf("summary.json: missing %q", k)
		}
	}
	if got := s["initial_hitting_time"].(float64); math.Abs(got-140) > 1e-9 {
		t.Errorf("initial hitting time %v, want H_0 = 140", got)
	}
	final, limit := s["final_hitting_time"].(float64), s["limit_hitting_time"].(float64)
	if limit != 25 || math.Abs(final-limit) > 1e-3*limit {
		t.Errorf("final %v, limit %v (want 25)", final, limit)
	}
	if !strings.Contains(out, "final hitting time") {
		t.Errorf("no closing table in output:\n%s", out)
	}
	// The checkpoint evaluates to the same final policy.
	code, out, errs = runCLI(t, "eval", "-checkpoint", dir, "-json")
	if code != 0 {
		t.Fatalf("eval -checkpoint: exit %d: %s", code, errs)
	}
	var ev map[string]any
	json.Unmarshal([]byte(out), &ev)
	if got := ev["hitting_time"].(float64); got != final {
		t.Errorf("eval -checkpoint: hitting time %v, summary says %v", got, final)
	}
	// Distillation from that run as teacher.
	ddir := filepath.Join(t.TempDir(), "distill")
	code, _, errs = runCLI(t, "run", "-W", "3", "-K", "2", "-L", "2", "-trainer", "distill", "-teacher", dir, "-until", "0.005", "-out", ddir)
	if code != 0 {
		t.Fatalf("distill: exit %d: %s", code, errs)
	}
	d := readJSON(t, filepath.Join(ddir, "summary.json"))
	if got := d["final_hitting_time"].(float64); math.Abs(got-25) > 0.01*25 {
		t.Errorf("distilled hitting time %v, want within 1%% of 25", got)
	}
}

// TestResumeMatchesUninterrupted interrupts a run after step 37 (as SIGINT
// would), resumes it, and expects metrics identical to the uninterrupted
// run's, byte for byte; and the same after step 90, its last: the signal
// then lands in the final measurement and the summary, which a resume
// does (before, such a run went on to exit 0, or for a transformer exit 1).
func TestResumeMatchesUninterrupted(t *testing.T) {
	base := t.TempDir()
	args := func(out string) []string {
		return []string{"run", "-W", "3", "-K", "3", "-L", "2", "-optimizer", "adam", "-lr", "0.05", "-until", "0", "-steps", "90", "-log-every", "1", "-checkpoint-every", "25", "-out", out}
	}
	full := filepath.Join(base, "full")
	if code, _, errs := runCLI(t, args(full)...); code != 0 {
		t.Fatalf("full run: exit %d: %s", code, errs)
	}
	for _, step := range []int{37, 90} {
		cut := filepath.Join(base, fmt.Sprint("cut", step))
		interruptAtStep = step
		code, _, errs := runCLI(t, args(cut)...)
		interruptAtStep = 0
		if code != 130 || !strings.Contains(errs, "train run -resume "+cut) {
			t.Fatalf("run interrupted after step %d: exit %d, stderr %q; want 130 and a resume hint", step, code, errs)
		}
		if _, err := os.Stat(filepath.Join(cut, "summary.json")); err == nil {
			t.Fatalf("a run interrupted after step %d left summary.json", step)
		}
		if code, _, errs := runCLI(t, "run", "-resume", cut); code != 0 {
			t.Fatalf("resume after step %d: exit %d: %s", step, code, errs)
		}
		for _, f := range []string{"metrics.csv", "abcd.csv", "summary.json"} {
			a, b := withoutWall(t, filepath.Join(full, f)), withoutWall(t, filepath.Join(cut, f))
			if f == "summary.json" {
				a, b = finalOf(t, filepath.Join(full, f)), finalOf(t, filepath.Join(cut, f))
			}
			if a != b || len(a) == 0 {
				t.Errorf("%s differs between the uninterrupted run and the one resumed after step %d", f, step)
			}
		}
	}
}

// finalOf is a summary.json's final step and hitting time, as text.
func finalOf(t *testing.T, path string) string {
	s := readJSON(t, path)
	return fmt.Sprint(s["final_step"], s["final_hitting_time"])
}

// TestOutSpellingsNameOneFolder: -out ./orig, orig/ and the absolute path
// name the folder -out orig trained, as does a copy of it: the finished run
// is found (nothing to do), an interrupted one resumed, not refused as
// another run.
func TestOutSpellingsNameOneFolder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	small := []string{"run", "-W", "3", "-K", "3", "-L", "2", "-steps", "3", "-out"}
	if code, _, errs := runCLI(t, append(small, "orig")...); code != 0 {
		t.Fatalf("-out orig: exit %d: %s", code, errs)
	}
	if err := os.CopyFS("copy", os.DirFS("orig")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"orig", "./orig", "orig/", "./orig/", filepath.Join(dir, "orig"), "copy"} {
		code, stdout, errs := runCLI(t, append(small, out)...)
		if code != 0 || !strings.Contains(stdout, out+" already holds this run, finished: nothing to do") {
			t.Errorf("-out %s: exit %d, stdout %q, stderr %q; want this run, nothing to do", out, code, stdout, errs)
		}
	}
	interruptAtStart = true
	code, _, errs := runCLI(t, append(small, "cut")...)
	interruptAtStart = false
	if code != 130 {
		t.Fatalf("-out cut, interrupted: exit %d: %s", code, errs)
	}
	code, stdout, errs := runCLI(t, append(small, "./cut/")...)
	if code != 0 || !strings.Contains(stdout, "resumed the unfinished run in ./cut/") {
		t.Errorf("-out ./cut/: exit %d, stdout %q, stderr %q; want the run resumed", code, stdout, errs)
	}
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.json")
	os.WriteFile(unknown, []byte(`{"graph":{"W":3,"K":2,"L":2},"trian":{}}`), 0o644)
	badW := filepath.Join(dir, "badw.json")
	os.WriteFile(badW, []byte(`{"graph":{"W":0,"K":2,"L":2}}`), 0o644)
	corrupt := filepath.Join(dir, "corrupt")
	os.MkdirAll(corrupt, 0o755)
	os.WriteFile(filepath.Join(corrupt, "checkpoint.bin"), []byte("BTCKPT\x00\x01garbage"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-config", unknown}, `unknown field "trian"`},
		{[]string{"run", "-config", badW}, "W=0"},
		{[]string{"run", "-config", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"run", "-trainer", "ppo2"}, "trainer"},
		{[]string{"run", "-optimizer", "rmsprop"}, "optimizer"},
		{[]string{"run", "-lr", "-1"}, "lr"},
		{[]string{"run", "-steps", "0"}, "steps"},
		{[]string{"run", "-trainer", "distill"}, "-teacher"},
		{[]string{"run", "-trainer", "distill", "-teacher", filepath.Join(dir, "nowhere")}, "-teacher"},
		{[]string{"run", "-resume", filepath.Join(dir, "nowhere")}, "-resume"},
		{[]string{"run", "-resume", corrupt}, "truncated"},
		{[]string{"run", "-resume", corrupt, "-lr", "3"}, "-resume takes only -steps"},
		{[]string{"eval", "-checkpoint", corrupt}, "truncated"},
		{[]string{"eval", "-checkpoint", corrupt, "-W", "3"}, "-checkpoint takes its graph"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestRefusesDamagedOrForeignCheckpoints: a flipped byte, a truncation, a
// checkpoint of another graph or of another kind of model are refused with
// exit 2 and a message saying which.
func TestRefusesDamagedOrForeignCheckpoints(t *testing.T) {
	base := t.TempDir()
	small := filepath.Join(base, "w2")
	if code, _, errs := runCLI(t, "run", "-W", "2", "-K", "2", "-L", "2", "-out", small); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	good, _ := os.ReadFile(filepath.Join(small, experiment.CheckpointFile))
	damaged := func(name string, data []byte) string {
		dir := filepath.Join(base, name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, experiment.CheckpointFile), data, 0o644)
		return dir
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 1
	ck, _ := checkpoints.Decode(good)
	ck.Kind = "transformer"
	foreign, _ := checkpoints.Encode(ck)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-resume", damaged("flipped", flipped)}, "checksum mismatch"},
		{[]string{"run", "-resume", damaged("truncated", good[:len(good)-100])}, "checksum mismatch"},
		{[]string{"eval", "-checkpoint", damaged("flipped2", flipped)}, "checksum mismatch"},
		{[]string{"run", "-resume", damaged("foreign", foreign)}, "transformer"},
		{[]string{"eval", "-checkpoint", damaged("foreign2", foreign)}, "transformer"},
		{[]string{"run", "-W", "3", "-K", "2", "-L", "2", "-trainer", "distill", "-teacher", small}, "trained on graph W=2,K=2,L=2"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestConfigFileAndFlagsResolveAlike: the trainer- and model-dependent
// defaults are resolved in one place, so a config file naming only the
// trainer and the same trainer given as a flag give the same run (before,
// the file trained ppo with sign descent at lr 0.01 and the flag with Adam
// at 0.05).
func TestConfigFileAndFlagsResolveAlike(t *testing.T) {
	dir := t.TempDir()
	for _, model := range []string{"bigram", "transformer"} {
		file := filepath.Join(dir, model+".json")
		os.WriteFile(file, []byte(`{"model":"`+model+`","train":{"trainer":"ppo"}}`), 0o644)
		fromFile, err := parseRun([]string{"-config", file}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		fromFlags, err := parseRun([]string{"-model", model, "-trainer", "ppo"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(fromFile.cfg)
		b, _ := json.Marshal(fromFlags.cfg)
		if string(a) != string(b) {
			t.Errorf("%s: config file resolves to\n%s\nflags to\n%s", model, a, b)
		}
		want := map[string]string{"bigram": "adam 0.025 256 fork 2", "transformer": "adam 0.001 128 fork 20"}[model]
		tr := fromFile.cfg.Train
		if got := fmt.Sprintf("%s %g %d %s %g", tr.Optim.Name, tr.Optim.LR, tr.Rollouts, tr.Baseline, tr.HorizonFactor); got != want {
			t.Errorf("%s ppo resolves to %s, want %s", model, got, want)
		}
	}
}

// TestRunStopsAtOptimum: with -until 0, exact RLVR that reaches the exact
// optimum of its setting and stops improving ends with exit 0 and says so;
// on a homogeneous graph with the source row trained it stops at the
// symmetric stationary point, above that setting's optimum, and says that.
func TestRunStopsAtOptimum(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		reason string
		final  float64
	}{
		{[]string{"-branches", "2,3,1,2;4,1;1,1,3,2,5,2", "-train-source"}, "optimum", 37},
		{[]string{"-W", "3", "-K", "3", "-L", "2", "-train-source"}, "stationary", 35},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		args := append([]string{"run", "-until", "0", "-out", dir}, tc.args...)
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		s := readJSON(t, filepath.Join(dir, "summary.json"))
		if s["stop_reason"] != tc.reason || s["stalled"] != false || math.Abs(s["final_hitting_time"].(float64)-tc.final) > 1e-6*tc.final {
			t.Errorf("%v: stop_reason %v, stalled %v, final %v; want %s at %v", args, s["stop_reason"], s["stalled"], s["final_hitting_time"], tc.reason, tc.final)
		}
		if !strings.Contains(out, "stopped: no further progress") {
			t.Errorf("%v: the closing lines do not say why the run stopped:\n%s", args, out)
		}
	}
}

// TestRefusedRunLeavesNoFolder: a run refused after it locked its folder
// (here: a teacher that does not exist) removes the folder it created, so
// no empty run folder is left behind (nor the folders above it that it
// created); a folder that existed before stays.
func TestRefusedRunLeavesNoFolder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "new", "refused")
	code, _, errs := runCLI(t, "run", "-trainer", "distill", "-teacher", filepath.Join(dir, "nowhere"), "-W", "2", "-K", "2", "-L", "1", "-out", out)
	if code != 2 {
		t.Fatalf("exit %d (%s), want 2", code, errs)
	}
	if _, err := os.Stat(filepath.Dir(out)); !os.IsNotExist(err) {
		t.Errorf("refused run left %s behind (stat: %v)", filepath.Dir(out), err)
	}
	kept := filepath.Join(dir, "kept")
	os.MkdirAll(kept, 0o755)
	if code, _, errs := runCLI(t, "run", "-trainer", "distill", "-teacher", filepath.Join(dir, "nowhere"), "-W", "2", "-K", "2", "-L", "1", "-out", kept); code != 2 {
		t.Fatalf("exit %d (%s), want 2", code, errs)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a folder that existed before the run was removed: %v", err)
	}
}
