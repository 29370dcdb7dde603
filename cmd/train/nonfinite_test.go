package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/experiment"
)

// TestNonFiniteKeepsCheckpoint: a run whose gradient norm (ppo, a KL
// coefficient of 1e300) or objective (grpo, a length penalty of 1e308)
// overflows stops at once, exit 1, with one line naming the step and the
// quantity; its logs hold no infinite value, and its starting state stays
// as its last good checkpoint (before the fix: 50 steps of +Inf logged, then
// a checkpoint that could not be written, and no checkpoint at all).
func TestNonFiniteKeepsCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ppo kl", []string{"-trainer", "ppo", "-kl-coef", "1e300"}, "step 0: grad_norm is +Inf"},
		{"grpo beta", []string{"-trainer", "grpo", "-beta", "1e308"}, "step 0: objective is -Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			args := append([]string{"run", "-W", "3", "-K", "3", "-L", "2", "-steps", "50", "-until", "0", "-out", dir}, tc.args...)
			code, _, errs := runCLI(t, args...)
			if code != 1 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 1 and one line saying %q", code, errs, tc.want)
			}
			for _, f := range []string{"metrics.csv", "metrics.jsonl"} {
				if data, err := os.ReadFile(filepath.Join(dir, f)); err != nil || strings.Contains(string(data), "Inf") {
					t.Errorf("%s: %v; want no infinite value:\n%s", f, err, data)
				}
			}
			ck, err := checkpoints.Load(filepath.Join(dir, experiment.CheckpointFile))
			if err != nil || ck.Step != 0 {
				t.Fatalf("checkpoint: %v; want the starting state (step 0) kept", err)
			}
			if code, _, errs := runCLI(t, "eval", "-checkpoint", dir); code != 0 {
				t.Errorf("eval -checkpoint of the kept checkpoint: exit %d: %s", code, errs)
			}
		})
	}
}
