package reproduce

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestResultsAccumulate: two calls of train reproduce into one folder
// leave both entries' rows in results.md, in the paper's order whichever
// ran first; running an entry again replaces its row.
func TestResultsAccumulate(t *testing.T) {
	out := t.TempDir()
	for _, names := range [][]string{{"corollary-search"}, {"thm4-separation"}, {"thm4-separation"}} {
		if _, err := Run(context.Background(), names, Options{Out: out}); err != nil {
			t.Fatalf("%v: %v", names, err)
		}
	}
	rows, err := readResults(filepath.Join(out, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Entry)
	}
	if want := []string{"thm4-separation", "corollary-search"}; !reflect.DeepEqual(got, want) {
		t.Errorf("results.md rows %v, want %v", got, want)
	}
}

// TestResultsRoundTrip: results.md reads back as the rows written, a
// cell's own '|' included; rows of both sizes are each marked; the
// documentation's results.md reads back, and its table writes out
// byte for byte as it was.
func TestResultsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), ResultsFile)
	rows := []Result{
		{Entry: "fig3-4", Claim: "a claim", Paper: "x | y", Measured: "899.9", Agrees: "yes", Seconds: 1.5},
		{Entry: "thm1-pretrain", Claim: "c", Paper: "p", Measured: "m", Agrees: "no", Seconds: 0.1, Quick: true},
		{Entry: "an-entry-of-an-older-version", Claim: "c", Paper: "p", Measured: "m", Agrees: "yes", Seconds: 2},
	}
	for _, tc := range []struct {
		name  string
		rows  []Result
		sizes string
	}{
		{"mixed", rows, mixedSizes},
		{"full", rows[:1], paperSizes},
		{"quick", rows[1:2], quickSizes},
	} {
		if err := writeResults(path, tc.rows); err != nil {
			t.Fatal(err)
		}
		got, err := readResults(path)
		if err != nil || !reflect.DeepEqual(got, tc.rows) {
			t.Errorf("%s: read back %+v, %v; want %+v", tc.name, got, err, tc.rows)
		}
		data, _ := os.ReadFile(path)
		if !strings.Contains(string(data), tc.sizes) || strings.Contains(string(data), "thm1-pretrain "+quickMark) != (tc.name == "mixed") {
			t.Errorf("%s:\n%s", tc.name, data)
		}
	}
	docs, err := os.ReadFile("../docs/results.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err = readResults("../docs/results.md")
	if err != nil || len(rows) != len(Names()) {
		t.Fatalf("docs/results.md: %d rows, %v; want one per entry of the paper", len(rows), err)
	}
	if err := writeResults(path, rows); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if a, b := table(string(docs)), table(string(again)); a != b {
		t.Errorf("docs/results.md's table does not write back as it was:\n%s\nwant\n%s", b, a)
	}
}

// table is a Markdown file's table lines.
func table(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "|") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestResultsRefusesWhatItCannotRead: a results.md whose table has a row
// of another shape, or that is not train reproduce's, is refused before
// any entry runs, naming the file and line; nothing is written.
func TestResultsRefusesWhatItCannotRead(t *testing.T) {
	for name, text := range map[string]string{
		"a row of 5 cells": "# Results\n\n" + tableHead + "\n| --- | --- | --- | --- | --- | --- |\n| fig3-4 | c | p | m | 1.0 |\n",
		"another file":     "my notes\n",
	} {
		out := t.TempDir()
		path := filepath.Join(out, ResultsFile)
		os.WriteFile(path, []byte(text), 0o644)
		_, err := Run(context.Background(), []string{"thm4-separation"}, Options{Out: out})
		if err == nil || !strings.Contains(err.Error(), path) || CheckResults(out) == nil {
			t.Errorf("%s: %v, want an error naming %s", name, err, path)
		}
		if data, _ := os.ReadFile(path); string(data) != text {
			t.Errorf("%s: results.md rewritten", name)
		}
		if _, err := os.Stat(filepath.Join(out, "thm4-separation")); err == nil {
			t.Errorf("%s: the entry ran", name)
		}
	}
}
