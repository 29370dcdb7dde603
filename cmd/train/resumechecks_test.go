package main

import (
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
