package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// TestRunTransformer is the end-to-end check of -model transformer: a short
// PPO run with a prompt writes a run folder whose summary carries the Monte
// Carlo hitting time and its interval, resumes from its checkpoint, and
// refuses to resume as a bigram; transformer flags without the model and
// exact trainers with it are usage errors.
func TestRunTransformer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tf")
	code, out, errs := runCLI(t, "run", "-model", "transformer", "-trainer", "ppo", "-prompt", "-W", "2", "-K", "2", "-L", "1",
		"-rollouts", "8", "-steps", "4", "-log-every", "2", "-eval-rollouts", "200", "-out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range []string{"config.json", "metrics.csv", "summary.json", "hitting_time.png", "checkpoint.bin", "vocab.txt"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	s := readJSON(t, filepath.Join(dir, "summary.json"))
	for _, k := range []string{"initial_hitting_time", "final_hitting_time", "final_hitting_time_ci95", "final_mc_success_rate", "limit_hitting_time"} {
		if _, ok := s[k]; !ok {
			t.Errorf("summary.json: missing %q", k)
		}
	}
	if s["model"] != "transformer" || !strings.Contains(out, "±") {
		t.Errorf("summary model %v; output:\n%s", s["model"], out)
	}
	if code, _, errs = runCLI(t, "run", "-resume", dir, "-steps", "6"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if s = readJSON(t, filepath.Join(dir, "summary.json")); s["steps"].(float64) != 6 {
		t.Errorf("resumed run: steps %v, want 6", s["steps"])
	}
	// From an SFT-trained bigram (-init): the transformer starts at that
	// bigram's exact hitting time, within the Monte Carlo interval.
	sft := filepath.Join(t.TempDir(), "sft")
	if code, _, errs := runCLI(t, "run", "-trainer", "sft", "-optimizer", "adam", "-lr", "0.05", "-W", "2", "-K", "3", "-L", "2", "-steps", "300", "-out", sft); code != 0 {
		t.Fatalf("sft: exit %d: %s", code, errs)
	}
	want := readJSON(t, filepath.Join(sft, "summary.json"))["final_hitting_time"].(float64)
	init := filepath.Join(t.TempDir(), "init")
	if code, _, errs := runCLI(t, "run", "-model", "transformer", "-trainer", "ppo", "-init", sft, "-W", "2", "-K", "3", "-L", "2",
		"-rollouts", "8", "-steps", "1", "-eval-rollouts", "5000", "-out", init); code != 0 {
		t.Fatalf("transformer -init: exit %d: %s", code, errs)
	}
	m, err := experiment.ReadMetrics(init)
	if err != nil {
		t.Fatal(err)
	}
	rows := m.Rows
	const h0 = 165 // the pretrained bigram's, (2W-1)(1+K+K/L)(1+K(L+1)): SFT moved away from it
	if h, ci := rows[0][m.Index("hitting_time")], rows[0][m.Index("hitting_time_ci95")]; math.Abs(h-want) > 2*ci || math.Abs(want-h0) < 4*ci {
		t.Errorf("transformer from the sft bigram starts at %v ± %v, want the bigram's %v (pretrained: %v)", h, ci, want, h0)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-heads", "2", "-W", "2", "-K", "2", "-L", "1"}, "-heads: applies to the transformer; this run is rlvr-exact on the bigram"},
		{[]string{"run", "-model", "transformer", "-trainer", "rlvr-exact", "-W", "2", "-K", "2", "-L", "1"}, "model transformer trains with sft, distill, reinforce, ppo, grpo, rloo, dr-grpo, not rlvr-exact"},
		{[]string{"run", "-model", "transformer", "-trainer", "ppo", "-context", "0"}, "transformer heads 1, context 0: want >= 1 each"},
		{[]string{"run", "-model", "mlp"}, `model "mlp": want bigram or transformer`},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestIdentityInitNeedsNoDim: -init-mode identity alone runs (its width is
// the vocabulary; -dim's default belongs to the table initialisation),
// while an explicit -dim with it is refused in one line.
func TestIdentityInitNeedsNoDim(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "-model", "transformer", "-trainer", "ppo", "-init-mode", "identity", "-W", "2", "-K", "2", "-L", "1", "-steps", "1", "-eval-rollouts", "200"}
	if code, _, errs := runCLI(t, append(args, "-out", filepath.Join(dir, "a"))...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, _, errs := runCLI(t, append(args, "-dim", "64", "-out", filepath.Join(dir, "b"))...)
	if code != 2 || !strings.Contains(errs, "set dim to 0") || strings.Count(errs, "\n") != 1 {
		t.Errorf("-dim 64 with identity: exit %d, stderr %q; want exit 2, one line saying to set dim to 0", code, errs)
	}
}

// TestRunSaysWhatItDraws: the transformer's PPO draws walks with hindsight
// targets by default, and its closing table says so, also when run again
// with nothing to do; with -prompt it draws independent rollouts and the
// table leaves the note out.
func TestRunSaysWhatItDraws(t *testing.T) {
	const note = "(transformer; Monte Carlo hitting times; batches of walks with hindsight targets)"
	for _, tc := range []struct {
		flags []string
		walks bool
	}{{nil, true}, {[]string{"-prompt"}, false}} {
		dir := filepath.Join(t.TempDir(), "tf")
		args := append([]string{"run", "-model", "transformer", "-trainer", "ppo", "-W", "2", "-K", "2", "-L", "1",
			"-rollouts", "8", "-steps", "2", "-until", "0", "-eval-rollouts", "100", "-final-rollouts", "100", "-out", dir}, tc.flags...)
		for _, again := range []bool{false, true} {
			code, out, errs := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("%v (again %v): exit %d: %s", tc.flags, again, code, errs)
			}
			if strings.Contains(out, note) != tc.walks {
				t.Errorf("%v (again %v): the table's note %q shown %v, want %v:\n%s", tc.flags, again, note, !tc.walks, tc.walks, out)
			}
		}
		if cfg := readJSON(t, filepath.Join(dir, "config.json"))["train"].(map[string]any); cfg["hindsight"] != tc.walks {
			t.Errorf("%v: config.json hindsight %v, want %v", tc.flags, cfg["hindsight"], tc.walks)
		}
	}
}
