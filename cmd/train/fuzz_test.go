package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// fuzzCommands are the subcommands FuzzCommandLine drives.
var fuzzCommands = []string{"run", "eval", "sample"}

// fuzzFolders makes, in root, run folders an input's working folder
// receives a copy of: bg (a trained bigram), tf (a transformer) and cut (a
// bigram interrupted at step 20, resumable). Inputs name them.
func fuzzFolders(root string) error {
	for name, args := range map[string][]string{
		"bg": {"run", "-W", "2", "-K", "2", "-L", "2", "-steps", "30", "-log-every", "5", "-checkpoint-every", "10"},
		"tf": {"run", "-model", "transformer", "-trainer", "ppo", "-prompt", "-dim", "8", "-W", "2", "-K", "2", "-L", "1", "-rollouts", "8", "-steps", "2", "-eval-rollouts", "200"},
	} {
		var out, errs bytes.Buffer
		if code := run(append(args, "-out", filepath.Join(root, name)), &out, &errs); code != 0 {
			return fmt.Errorf("seed run %s: exit %d: %s", name, code, errs.String())
		}
	}
	interruptAtStep = 20
	defer func() { interruptAtStep = 0 }()
	var out, errs bytes.Buffer
	if code := run([]string{"run", "-W", "2", "-K", "2", "-L", "2", "-until", "0", "-steps", "60", "-log-every", "5", "-checkpoint-every", "10", "-out", filepath.Join(root, "cut")}, &out, &errs); code != 130 {
		return fmt.Errorf("seed run cut: exit %d, want 130: %s", code, errs.String())
	}
	return nil
}

// copyTree copies the folder src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// escapes reports an argument that could name a path outside the input's
// working folder (absolute, or through ..): such inputs are skipped, as
// the fuzzed commands write where they are told.
func escapes(a string) bool {
	return strings.Contains(a, "..") || strings.HasPrefix(a, "/") || strings.Contains(a, "=/") || strings.HasPrefix(a, "~")
}

// FuzzCommandLine runs train run, eval or sample on whole argument lists
// (NUL-separated) in a working folder holding three run folders, every
// memory budget bounded (64 MiB) and every command interrupted after a
// moment as SIGINT would (a run's checkpoint, eval's and sample's
// Monte Carlo stop). Nothing may panic; the exit code is 0, 1, 2 or 130;
// bad input (2) is one line on stderr; and every run folder left is whole
// or clearly incomplete: one with summary.json holds its config, logs,
// checkpoint, vocabulary and plots, and its last metrics row is its last
// step; none holds a lock or temporary file; no empty folder is left.
//
//	go test ./cmd/train -run '^$' -fuzz FuzzCommandLine -fuzztime 5m -fuzzminimizetime 5s
//
// (an input runs for up to a few tenths of a second: the default minute
// of minimising each new input would stall the search)
func FuzzCommandLine(f *testing.F) {
	for _, seed := range []struct {
		cmd  byte
		args string
	}{
		{0, ""},
		{0, "-trainer\x00sft\x00-W\x002\x00-K\x002\x00-L\x002\x00-steps\x0010\x00-out\x00o"},
		{0, "-trainer\x00pretrain\x00-W\x002\x00-K\x002\x00-L\x001\x00-steps\x0010"},
		{0, "-trainer\x00ppo\x00-W\x002\x00-K\x002\x00-L\x002\x00-steps\x003\x00-rollouts\x0016"},
		{0, "-model\x00transformer\x00-trainer\x00reinforce\x00-dim\x008\x00-W\x002\x00-K\x002\x00-L\x001\x00-rollouts\x008\x00-steps\x002\x00-eval-rollouts\x00200"},
		{0, "-branches\x002,1;3\x00-steps\x005\x00-out\x00h"},
		{0, "-resume\x00cut"},
		{0, "-resume\x00bg\x00-steps\x0040"},
		{0, "-W\x002\x00-K\x002\x00-L\x002\x00-steps\x005\x00-out\x00bg"},
		{0, "-config\x00bg/config.json\x00-out\x00c"},
		{0, "-W\x000"},
		{0, "-lr\x00-1"},
		{0, "-trainer\x00distill\x00-teacher\x00bg\x00-W\x002\x00-K\x002\x00-L\x002\x00-steps\x005"},
		{0, "-init\x00tf\x00-W\x002\x00-K\x002\x00-L\x001"},
		{1, ""},
		{1, "-W\x003\x00-K\x002\x00-L\x002\x00-json\x00-probs"},
		{1, "-policy\x00sft-limit\x00-W\x002\x00-K\x00400\x00-L\x005\x00-json"},
		{1, "-W\x003\x00-K\x002\x00-L\x002\x00-mc\x0010000\x00-search-agent"},
		{1, "-checkpoint\x00bg\x00-mc\x00100"},
		{1, "-checkpoint\x00tf\x00-json"},
		{1, "-W\x001000\x00-K\x001000\x00-L\x005"},
		{1, "-branches\x00,,"},
		{2, "bg"},
		{2, "bg\x00-n\x001000000000\x00-json"},
		{2, "tf\x00-probs\x00-n\x003"},
		{2, "bg\x00-golden\x00-target\x002"},
		{2, "cut\x00-horizon\x009223372036854775807"},
		{2, "nothing-here"},
	} {
		f.Add(seed.cmd, seed.args)
	}
	root := f.TempDir()
	if err := fuzzFolders(root); err != nil {
		f.Fatal(err)
	}
	defer func(cap int64, after time.Duration) { budgetCap, interruptAfter = cap, after }(budgetCap, interruptAfter)
	budgetCap, interruptAfter = 64<<20, 100*time.Millisecond
	f.Fuzz(func(t *testing.T, cmd byte, list string) {
		args := []string{fuzzCommands[int(cmd)%len(fuzzCommands)]}
		if list != "" {
			args = append(args, strings.Split(list, "\x00")...)
		}
		for _, a := range args {
			if escapes(a) {
				t.Skip("an argument that may name a path outside the working folder")
			}
		}
		work := t.TempDir()
		if err := copyTree(root, work); err != nil {
			t.Fatal(err)
		}
		t.Chdir(work)
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		switch code {
		case 0, 1, 130:
		case 2:
			if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
				t.Errorf("%q: exit 2 with stderr %q: want one line", args, msg)
			}
		default:
			t.Errorf("%q: exit %d: want 0, 1, 2 or 130", args, code)
		}
		checkFolders(t, args, work)
	})
}

// checkFolders walks the working folder: every run folder is whole
// (summary.json and all it summarises) or has no summary.json; no lock or
// temporary file, no empty folder.
func checkFolders(t *testing.T, args []string, work string) {
	t.Helper()
	filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Errorf("%q: %v", args, err)
			return nil
		}
		name := d.Name()
		switch {
		case !d.IsDir() && (name == ".lock" || strings.Contains(name, ".tmp")):
			t.Errorf("%q: left %s", args, path)
		case d.IsDir():
			if entries, _ := os.ReadDir(path); len(entries) == 0 {
				t.Errorf("%q: left the empty folder %s", args, path)
			}
			if _, err := os.Stat(filepath.Join(path, experiment.SummaryFile)); err == nil {
				checkWhole(t, args, path)
			}
		}
		return nil
	})
}

// checkWhole checks a run folder with summary.json: its files are there,
// and the summary, the checkpoint and the last metrics row agree on the
// step.
func checkWhole(t *testing.T, args []string, dir string) {
	t.Helper()
	var s experiment.Summary
	data, _ := os.ReadFile(filepath.Join(dir, experiment.SummaryFile))
	if err := json.Unmarshal(data, &s); err != nil {
		t.Errorf("%q: %s: summary.json: %v", args, dir, err)
		return
	}
	plot := "hitting_time.png"
	if s.Trainer.Dense() {
		plot = "invalid_mass.png"
	}
	for _, f := range []string{experiment.ConfigFile, "metrics.csv", experiment.JSONLFile, experiment.CheckpointFile, "vocab.txt", plot} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%q: %s has summary.json but no %s", args, dir, f)
		}
	}
	m, err := experiment.ReadMetrics(dir)
	if err != nil || len(m.Rows) == 0 {
		t.Errorf("%q: %s: metrics.csv: %v, %d rows", args, dir, err, len(m.Rows))
		return
	}
	if steps := m.Column("step"); steps[0] != 0 || int(steps[len(steps)-1]) != s.Steps {
		t.Errorf("%q: %s: metrics.csv from step %v to %v, summary.json %d steps", args, dir, steps[0], steps[len(steps)-1], s.Steps)
	}
	c, err := experiment.Open(dir, 0)
	if err != nil {
		t.Errorf("%q: %s: checkpoint: %v", args, dir, err)
		return
	}
	defer c.Close()
	if c.Step != s.Steps {
		t.Errorf("%q: %s: checkpoint at step %d, summary.json %d steps", args, dir, c.Step, s.Steps)
	}
}

// TestErrorsAreOneLine: an error naming input that holds a line break (a
// flag's name, a run folder, a config file) is printed on one line, the
// break escaped (FuzzCommandLine found "run -\n" printed on two).
func TestErrorsAreOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"run", "-\n"},
		{"sample", "no\nfolder"},
		{"eval", "-checkpoint", "no\rfolder\u2028"},
		{"run", "-config", "a\nb.json"},
	} {
		code, _, errs := runCLI(t, args...)
		if code != 2 || strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "\n") || strings.ContainsAny(errs, "\r\u2028") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line", args, code, errs)
		}
	}
}
