package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeSaysWhatItRebuilt: train run -resume on a folder whose
// metrics.csv was cut to 300 bytes says on stderr, in one line, that it
// rebuilt the file from metrics.jsonl, and summary.json keeps the initial
// hitting time; with both logs cut it exits 2 with one line naming them.
func TestResumeSaysWhatItRebuilt(t *testing.T) {
	base := t.TempDir()
	args := func(out string) []string {
		return []string{"run", "-W", "3", "-K", "2", "-L", "2", "-until", "0", "-steps", "60", "-log-every", "5", "-checkpoint-every", "20", "-out", out}
	}
	for _, tc := range []struct {
		name   string
		cut    []string
		code   int
		stderr string
	}{
		{"metrics.csv cut", []string{"metrics.csv"}, 0, "train: warning: " + "%s lacked 8 of the 8 metrics rows logged before the checkpoint's step 40"},
		{"both cut", []string{"metrics.csv", "metrics.jsonl"}, 2, "train: run: -resume %s: cannot resume %[1]s: metrics.csv and metrics.jsonl both lack the metrics row of step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "-"))
			interruptAtStep = 40
			code, _, _ := runCLI(t, args(out)...)
			interruptAtStep = 0
			if code != 130 {
				t.Fatalf("interrupted run: exit %d, want 130", code)
			}
			for _, f := range tc.cut {
				if err := os.Truncate(filepath.Join(out, f), 300); err != nil {
					t.Fatal(err)
				}
			}
			code, _, errs := runCLI(t, "run", "-resume", out)
			path := out
			if tc.code == 0 {
				path = filepath.Join(out, "metrics.csv")
			}
			if want := strings.ReplaceAll(tc.stderr, "%s", path); code != tc.code || !strings.HasPrefix(errs, strings.ReplaceAll(want, "%[1]s", out)) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want %d and one line starting %q", code, errs, tc.code, want)
			}
			if tc.code == 0 {
				if s := readJSON(t, filepath.Join(out, "summary.json")); s["initial_hitting_time"] == nil {
					t.Errorf("summary.json: initial_hitting_time null after the rebuild")
				}
			}
		})
	}
}
