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

// sessionMarker opens a checked session: in the fenced block after
//
//	<!-- outputs of the $ lines, after: train run -out runs/a; train run -out runs/b -->
//
// each line "$ train ..." is a command and the lines up to the next "$ "
// line what it prints. The commands after "after:" (separated by "; ",
// each starting with "train"; none without ", after:") run first, their
// output unchecked, then the block's commands in order, all in one scratch
// folder, so that an example can read what an earlier run wrote. The
// document must show each of those commands, as "train ..." or "go run
// ./cmd/train ...", so that a reader can make the same folder. With
// ", with FILE the json block above" before ", after:", the folder also
// holds FILE, the last fenced json block before the marker.
var sessionMarker = regexp.MustCompile(`^<!-- outputs of the \$ lines(?:, with (\S+) the json block above)?(?:, after: (train .*))? -->$`)

// docCmd is one command of a checked example and where the document shows
// its output: lines[start:end].
type docCmd struct {
	args       []string
	start, end int
}

// docBlock is one checked example of a document: the commands run first
// (setup, a session's) and those whose output it shows.
type docBlock struct {
	file  string
	line  int // the marker's line, 1-based
	setup [][]string
	file1 string // a file the session's folder holds, and its text
	text  string
	cmds  []docCmd
}

// docBlocks finds the checked examples of a document.
func docBlocks(t *testing.T, file string, lines []string) []docBlock {
	var out []docBlock
	for i, l := range lines {
		l = strings.TrimSpace(l)
		m, s := outputMarker.FindStringSubmatch(l), sessionMarker.FindStringSubmatch(l)
		if m == nil && s == nil {
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
		b := docBlock{file: file, line: i + 1}
		if m != nil {
			b.cmds = []docCmd{{args: strings.Fields(m[1]), start: i + 2, end: end}}
			out = append(out, b)
			continue
		}
		if s[1] != "" {
			b.file1, b.text = s[1], lastJSONBlock(lines[:i])
			if b.text == "" {
				t.Errorf("%s:%d: no json block before the session for %s", file, i+1, s[1])
			}
		}
		if s[2] != "" {
			for _, c := range strings.Split(s[2], "; train ") {
				args := strings.Fields(strings.TrimPrefix(c, "train "))
				if !shownInDoc(lines, args) {
					t.Errorf("%s:%d: the session's command train %s is not shown in the document: show it, so that a reader can make the same folder", file, i+1, strings.Join(args, " "))
				}
				b.setup = append(b.setup, args)
			}
		}
		for j := i + 2; j < end; j++ {
			if c, ok := strings.CutPrefix(lines[j], "$ train "); ok {
				b.cmds = append(b.cmds, docCmd{args: strings.Fields(c), start: j + 1, end: j + 1})
				continue
			}
			if len(b.cmds) == 0 {
				t.Errorf("%s:%d: a session's block must start with a \"$ train ...\" line", file, j+1)
				break
			}
			b.cmds[len(b.cmds)-1].end = j + 1
		}
		if len(b.cmds) == 0 {
			t.Errorf("%s:%d: a session without a \"$ train ...\" line", file, i+1)
			continue
		}
		out = append(out, b)
	}
	return out
}

// lastJSONBlock returns the text of the last fenced json block of lines,
// or "".
func lastJSONBlock(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "```json" {
			continue
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		return strings.Join(lines[i+1:end], "\n") + "\n"
	}
	return ""
}

// shownInDoc reports whether the document shows train with args, as
// "train ..." or "go run ./cmd/train ...", in its own words (spaces aside).
func shownInDoc(lines []string, args []string) bool {
	want := " " + strings.Join(args, " ")
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "<!--") { // the markers are not for readers
			continue
		}
		l = " " + strings.Join(strings.Fields(l), " ") + " "
		for _, p := range []string{" train", " ./cmd/train", "`train"} {
			if strings.Contains(l, p+want+" ") || strings.Contains(l, p+want+"`") {
				return true
			}
		}
	}
	return false
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
// (indented or not) stands for any number of lines of got.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
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
// marked "output of: train ..." (one command) or "outputs of the $ lines"
// (a session of commands in one folder) is what the command prints today,
// durations and rates aside. A change to the code that moves a documented number
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
			outs := runDocBlock(t, repo, b)
			for c := len(b.cmds) - 1; c >= 0; c-- {
				cmd, got := b.cmds[c], outs[c]
				name := fmt.Sprintf("%s:%d", filepath.Base(file), b.line)
				want := lines[cmd.start:cmd.end]
				checked++
				if matchLines(normalizeOutput(strings.Join(want, "\n")), normalizeOutput(got)) {
					continue
				}
				if *update {
					repl := firstAndLastProgress(strings.Split(strings.TrimRight(got, "\n"), "\n"))
					lines = append(lines[:cmd.start], append(repl, lines[cmd.end:]...)...)
					changed = true
					continue
				}
				t.Errorf("%s: train %s prints something else than the document shows (rerun with -update to rewrite it):\n--- document\n%s\n--- today\n%s",
					name, strings.Join(cmd.args, " "), strings.Join(want, "\n"), got)
			}
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

// runDocBlock runs a checked example's commands in a scratch folder holding
// a link to the repository's docs/ (one folder for a session, one a
// command otherwise), and returns what each printed on stdout and stderr.
func runDocBlock(t *testing.T, repo string, b docBlock) []string {
	t.Helper()
	dir := ""
	scratch := func() {
		dir = t.TempDir()
		if err := os.Symlink(filepath.Join(repo, "docs"), filepath.Join(dir, "docs")); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
	}
	session := b.setup != nil || b.file1 != "" || len(b.cmds) > 1
	if session {
		scratch()
	}
	if b.file1 != "" {
		if err := os.WriteFile(filepath.Join(dir, b.file1), []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run1 := func(args []string) string {
		var out bytes.Buffer
		if code := run(args, &out, &out); code != 0 {
			t.Errorf("%s:%d: train %s: exit %d: %s", filepath.Base(b.file), b.line, strings.Join(args, " "), code, out.String())
		}
		return out.String()
	}
	for _, args := range b.setup {
		run1(args)
	}
	var outs []string
	for _, c := range b.cmds {
		if !session {
			scratch()
		}
		outs = append(outs, run1(c.args))
	}
	return outs
}

// TestNormalizeOutput pins what the comparison ignores.
func TestNormalizeOutput(t *testing.T) {
	got := normalizeOutput("step 0/20 h 5 elapsed 0.0s\nstep 5/20 h 4 elapsed 1.2s\nstep 9/20 h 3 elapsed 2.0s\n\nppo, 9 steps in 2.01s, 3.5M tok/s, tokens_per_s 2e+06\n")
	want := []string{"step 0/20 h 5 elapsed <t>", "step 9/20 h 3 elapsed <t>", "", "ppo, 9 steps in <t>, <t>, <t>"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if !matchLines([]string{"a", "...", "d"}, []string{"a", "b", "c", "d"}) || !matchLines([]string{"a", "  ...", "d"}, []string{"a", "  b", "d"}) || matchLines([]string{"a", "...", "e"}, []string{"a", "b"}) {
		t.Error("... must stand for any number of lines, and only that")
	}
}
