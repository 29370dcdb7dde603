package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// smallRun trains a bigram of W=3, K=2, L=2 for 20 steps into a temporary
// folder and returns it.
func smallRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bg")
	if code, _, errs := runCLI(t, "run", "-W", "3", "-K", "2", "-L", "2", "-steps", "20", "-out", dir); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	return dir
}

// TestExportRefusesBadOut: an -out that cannot be one file (a folder, a
// missing folder, a folder that is a file) and a memory budget the export
// would exceed are refused before anything is written: exit 2, one line
// naming -out or the budget, no temporary file's name, nothing left behind.
func TestExportRefusesBadOut(t *testing.T) {
	dir := smallRun(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nonexistent", "dir", "x.npz")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing folder", []string{"-out", missing}, "train: export: -out " + missing + ": folder " + filepath.Dir(missing) + " does not exist"},
		{"a folder", []string{"-out", dir}, "train: export: -out " + dir + " is a folder: want a file path"},
		{"under a file", []string{"-out", filepath.Join(file, "x.npz")}, "train: export: -out " + filepath.Join(file, "x.npz") + ": " + file + " is not a folder"},
		{"over the budget", []string{"-max-bytes", "40000"}, "train: export: writing the arrays needs about"},
		{"negative budget", []string{"-max-bytes", "-1"}, "train: export: -max-bytes -1: want >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshotNames(t, dir)
			code, out, errs := runCLI(t, append([]string{"export", dir}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 || strings.Contains(errs, ".tmp") || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing on stdout, one line with %q", code, out, errs, tc.want)
			}
			if after := snapshotNames(t, dir); after != before {
				t.Errorf("the run folder changed: %s, was %s", after, before)
			}
		})
	}
	if code, _, errs := runCLI(t, "export", dir); code != 0 {
		t.Errorf("export within the budget: exit %d: %s", code, errs)
	}
}

// snapshotNames lists a folder's entries.
func snapshotNames(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// TestLookInsideChecksTheBudget: sample, eval -checkpoint and export refuse
// a budget the checkpoint or the graph would exceed, and sample a horizon
// whose one rollout would, before any rollout, with one line naming
// -max-bytes (exit 2).
func TestLookInsideChecksTheBudget(t *testing.T) {
	dir := smallRun(t)
	for _, args := range [][]string{
		{"sample", dir, "-max-bytes", "1000"},
		{"sample", dir, "-max-bytes", "100000", "-horizon", "1000000"},
		{"sample", dir, "-horizon", "1000000000000000"},
		{"eval", "-checkpoint", dir, "-max-bytes", "1000"},
		{"export", dir, "-max-bytes", "1000"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != 2 || !budgetNamed.MatchString(errs) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing printed, one line naming -max-bytes", args, code, out, errs)
		}
	}
}

// budgetNamed matches a refusal naming the memory budget: the flag, or the
// config key of a graph's.
var budgetNamed = regexp.MustCompile(`over the (memory )?budget of .*\(-?max[-_]bytes\)\n$`)

// failAfter is a writer that fails once it has taken n bytes.
type failAfter struct {
	n   int
	got bytes.Buffer
}

var errFull = errors.New("writer full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.got.Len()+len(p) > f.n {
		return 0, errFull
	}
	return f.got.Write(p)
}

// TestSampleStreams: train sample prints each rollout as it is drawn, so
// -n 2^40 (a sample that kept its rollouts would run for days and take
// terabytes) stops at the first write its output refuses; its JSON is the
// one indented object of the whole report, byte for byte.
func TestSampleStreams(t *testing.T) {
	dir := smallRun(t)
	for _, asJSON := range []bool{false, true} {
		args := []string{"sample", dir, "-n", "1099511627776"}
		if asJSON {
			args = append(args, "-json")
		}
		w := &failAfter{n: 4096}
		code := run(args, w, new(bytes.Buffer))
		if code != 1 || w.got.Len() == 0 {
			t.Errorf("json %v: exit %d after %d bytes, want 1 after some rollouts", asJSON, code, w.got.Len())
		}
	}
	code, out, errs := runCLI(t, "sample", dir, "-json", "-probs", "-n", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep sampleReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Rollouts) != 3 {
		t.Fatalf("not one report of 3 rollouts: %v\n%s", err, out)
	}
	var whole bytes.Buffer
	if err := writeIndented(&whole, rep); err != nil {
		t.Fatal(err)
	}
	if whole.String() != out {
		t.Errorf("streamed JSON differs from the whole report's:\n%s\nwant\n%s", out, whole.String())
	}
}

// TestSampleInterrupted: a sample stopped by SIGINT exits 130 with one
// line saying how many rollouts it printed, and what it printed stays
// whole: with -json one object holding those rollouts.
func TestSampleInterrupted(t *testing.T) {
	dir := smallRun(t)
	interruptAfter = 50 * time.Millisecond
	defer func() { interruptAfter = 0 }()
	code, out, errs := runCLI(t, "sample", dir, "-json", "-n", "1099511627776")
	var rep sampleReport
	if err := json.Unmarshal([]byte(out), &rep); code != 130 || err != nil {
		t.Fatalf("exit %d, %v; want 130 and one JSON object", code, err)
	}
	want := fmt.Sprintf("train: sample: interrupted by interrupt after %d of 1099511627776 rollouts, each printed whole\n", len(rep.Rollouts))
	if errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}
