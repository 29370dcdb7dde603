package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeKeepsLinearSchedule: -lr-decay linear takes the rate to 0 at
// the step cap, so a resume (or a run into the same folder) with another
// -steps is refused, exit 2 in one line naming both flags, and config.json
// keeps the run's steps; a plateau schedule resumes with a raised cap.
func TestResumeKeepsLinearSchedule(t *testing.T) {
	base := t.TempDir()
	args := func(decay, out, steps string) []string {
		return []string{"run", "-W", "3", "-K", "3", "-L", "2", "-trainer", "ppo", "-rollouts", "32", "-lr-decay", decay, "-until", "0", "-steps", steps, "-out", out}
	}
	lin, plat := filepath.Join(base, "linear"), filepath.Join(base, "plateau")
	for _, a := range [][]string{args("linear", lin, "6"), args("plateau", plat, "6")} {
		if code, _, errs := runCLI(t, a...); code != 0 {
			t.Fatalf("%q: exit %d: %s", a, code, errs)
		}
	}
	for _, a := range [][]string{{"run", "-resume", lin, "-steps", "12"}, args("linear", lin, "12")} {
		code, _, errs := runCLI(t, a...)
		if code != 2 || !strings.Contains(errs, "-steps 12") || !strings.Contains(errs, "-lr-decay linear") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line naming -steps and -lr-decay linear", a, code, errs)
		}
	}
	if got := readJSON(t, filepath.Join(lin, "config.json"))["train"].(map[string]any)["steps"]; got != 6.0 {
		t.Errorf("config.json steps %v after the refused resumes, want 6", got)
	}
	if code, _, errs := runCLI(t, "run", "-resume", plat, "-steps", "12"); code != 0 {
		t.Errorf("plateau resume with -steps 12: exit %d: %s", code, errs)
	}
}

// TestResumeKeepsInitAndTeacher: a run started from -init s (ppo, whose KL
// term's reference is s) or distilling -teacher s, interrupted, resumed
// from another directory after s was trained further, logs the rows of the
// uninterrupted run: the checkpoint holds s as the run read it (before, the
// resume read s again, relative to the current directory).
func TestResumeKeepsInitAndTeacher(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"init", []string{"-trainer", "ppo", "-rollouts", "32", "-kl-coef", "0.5", "-init", "s"}},
		{"teacher", []string{"-trainer", "distill", "-teacher", "s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			t.Chdir(base)
			if code, _, errs := runCLI(t, "run", "-W", "3", "-K", "3", "-L", "2", "-trainer", "ppo", "-rollouts", "32", "-until", "0", "-steps", "3", "-out", "s"); code != 0 {
				t.Fatalf("s: exit %d: %s", code, errs)
			}
			args := func(out string) []string {
				return append([]string{"run", "-W", "3", "-K", "3", "-L", "2", "-until", "0", "-steps", "8", "-log-every", "1", "-checkpoint-every", "4", "-out", out}, tc.args...)
			}
			if code, _, errs := runCLI(t, args("full")...); code != 0 {
				t.Fatalf("full run: exit %d: %s", code, errs)
			}
			interruptAtStep = 4
			code, _, errs := runCLI(t, args("cut")...)
			interruptAtStep = 0
			if code != 130 {
				t.Fatalf("interrupted run: exit %d: %s", code, errs)
			}
			if code, _, errs := runCLI(t, "run", "-resume", "s", "-steps", "6"); code != 0 {
				t.Fatalf("training s further: exit %d: %s", code, errs)
			}
			os.Mkdir("elsewhere", 0o755)
			t.Chdir(filepath.Join(base, "elsewhere"))
			if code, _, errs := runCLI(t, "run", "-resume", filepath.Join(base, "cut")); code != 0 {
				t.Fatalf("resume: exit %d: %s", code, errs)
			}
			for _, f := range []string{"metrics.csv", "abcd.csv"} {
				a, b := withoutWall(t, filepath.Join(base, "full", f)), withoutWall(t, filepath.Join(base, "cut", f))
				if a != b || len(a) == 0 {
					t.Errorf("%s differs between the uninterrupted and the resumed run", f)
				}
			}
		})
	}
}
