package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The documents whose example outputs TestDocOutputs checks: the README and
// the pages under docs/.
var docFiles = []string{"../../README.md", "../../docs/*.md"}

// outputMarker opens a checked example: the fenced block after
//
//	<!-- output of: train eval -policy sft-limit -->
//
// is what that command prints (see normalizeOutput). The command runs in a
// scratch folder where docs/ is the repository's.
var outputMarker = regexp.MustCompile(`^<!-- output of: train((?: [^>]*)?) -->$`)

// docBlock is one checked example of a document.
type docBlock struct {
	file       string
	line       int // the marker's line, 1-based
	args       []string
	start, end int // the block's lines, without its fences: lines[start:end]
}

// docBlocks finds the checked examples of a document.
func docBlocks(t *testing.T, file string, lines []string) []docBlock {
	var out []docBlock
	for i, l := range lines {
		m := outputMarker.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Errorf("%s:%d: an output marker must be followed by a fenced block", file, i+1)
			continue
		}
		end := i + 2
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		if end == len(lines) {
			t.Errorf("%s:%d: the fenced block never closes", file, i+1)
			continue
		}
		out = append(out, docBlock{file: file, line: i + 1, args: strings.Fields(m[1]), start: i + 2, end: end})
	}
	return out
}

var (
	// durations and rates: what a machine and its load decide
	timed = regexp.MustCompile(`\b\d+(\.\d+)?(e[+-]?\d+)?(ns|µs|ms|s)\b|\b(tokens_per_s|tok/s) \S+|\S+ tok/s|\d+(\.\d+)?(e[+-]?\d+)?[kMG]? tok/s`)
	// a progress line of a run (cmd/train/progress.go)
	progressLine = regexp.MustCompile(`^step \d+/\d+ `)
)

// firstAndLastProgress drops the progress lines between a run's first and
// last: how many there are depends on the machine (one a second).
func firstAndLastProgress(lines []string) []string {
	var out []string
	for i, l := range lines {
		if progressLine.MatchString(l) && i > 0 && progressLine.MatchString(lines[i-1]) && i+1 < len(lines) && progressLine.MatchString(lines[i+1]) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// normalizeOutput is what a checked example compares: the lines of the
// output with durations and rates masked, and of a run's progress lines
// (one a second) only the first and the last.
func normalizeOutput(text string) []string {
	var out []string
	for _, l := range firstAndLastProgress(strings.Split(strings.TrimRight(text, "\n"), "\n")) {
		out = append(out, timed.ReplaceAllString(strings.TrimRight(l, " "), "<t>"))
	}
	return out
}

// matchLines reports whether got matches want, where a line "..." in want
// stands for any number of lines of got.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if matchLines(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && matchLines(want[1:], got[1:])
}

// TestDocOutputs: every example output of the README and the docs pages
// marked "output of: train ..." is what the command prints today, durations
// and rates aside. A change to the code that moves a documented number
// fails here until the documents are regenerated in the same commit:
// go test ./cmd/train -run TestDocOutputs -update rewrites every block
// (keeping its "..." lines where they still match).
func TestDocOutputs(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range docFiles {
		m, err := filepath.Glob(filepath.Join(repo, strings.TrimPrefix(p, "../../")))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		blocks := docBlocks(t, file, lines)
		changed := false
		for k := len(blocks) - 1; k >= 0; k-- { // from the end: rewriting keeps earlier lines in place
			b := blocks[k]
			name := fmt.Sprintf("%s:%d", filepath.Base(file), b.line)
			got := runDocCommand(t, repo, b.args)
			want := lines[b.start:b.end]
			checked++
			if matchLines(normalizeOutput(strings.Join(want, "\n")), normalizeOutput(got)) {
				continue
			}
			if *update {
				repl := firstAndLastProgress(strings.Split(strings.TrimRight(got, "\n"), "\n"))
				lines = append(lines[:b.start], append(repl, lines[b.end:]...)...)
				changed = true
				continue
			}
			t.Errorf("%s: train %s prints something else than the document shows (rerun with -update to rewrite it):\n--- document\n%s\n--- today\n%s",
				name, strings.Join(b.args, " "), strings.Join(want, "\n"), got)
		}
		if changed {
			if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no checked example in the README or docs/: the markers are gone?")
	}
}

// runDocCommand runs train with args in a scratch folder holding a link to
// the repository's docs/, and returns what it printed on stdout and
// stderr.
func runDocCommand(t *testing.T, repo string, args []string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "docs"), filepath.Join(dir, "docs")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var out bytes.Buffer
	if code := run(args, &out, &out); code != 0 {
		t.Errorf("train %s: exit %d: %s", strings.Join(args, " "), code, out.String())
	}
	return out.String()
}

// TestNormalizeOutput pins what the comparison ignores.
func TestNormalizeOutput(t *testing.T) {
	got := normalizeOutput("step 0/20 h 5 elapsed 0.0s\nstep 5/20 h 4 elapsed 1.2s\nstep 9/20 h 3 elapsed 2.0s\n\nppo, 9 steps in 2.01s, 3.5M tok/s, tokens_per_s 2e+06\n")
	want := []string{"step 0/20 h 5 elapsed <t>", "step 9/20 h 3 elapsed <t>", "", "ppo, 9 steps in <t>, <t>, <t>"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if !matchLines([]string{"a", "...", "d"}, []string{"a", "b", "c", "d"}) || matchLines([]string{"a", "...", "e"}, []string{"a", "b"}) {
		t.Error("... must stand for any number of lines, and only that")
	}
}
