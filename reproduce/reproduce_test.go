package reproduce

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestEveryEntryHasItsDocFigures: -docs copies a figure for every entry.
func TestEveryEntryHasItsDocFigures(t *testing.T) {
	for _, n := range Names() {
		if len(docFigures[n]) == 0 {
			t.Errorf("entry %s has no figure for the docs", n)
		}
	}
	if len(docFigures) != len(Names())+len(studies) {
		t.Errorf("%d entries with doc figures, %d entries and %d studies", len(docFigures), len(Names()), len(studies))
	}
	for _, n := range studies {
		if len(docFigures[n]) == 0 || studyTables[n] == "" {
			t.Errorf("study %s has no figures or table for the docs", n)
		}
	}
}

// TestRanPaper: results.md goes to the docs only after every entry of the
// paper ran (all, with or without the studies), not after some of them,
// and with the paper's rows alone (a study's row stays in the out folder).
func TestRanPaper(t *testing.T) {
	rows := func(names ...string) (r []Result) {
		for _, n := range names {
			r = append(r, Result{Entry: n})
		}
		return r
	}
	all := Names()
	for _, tc := range []struct {
		name string
		rows []Result
		want bool
	}{
		{"all", rows(all...), true},
		{"all and the studies", rows(append(append([]string{}, all...), studies...)...), true},
		{"all but the last", rows(all[:len(all)-1]...), false},
		{"the studies alone", rows(studies...), false},
		{"none", nil, false},
	} {
		if got := ranPaper(tc.rows); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		var want []string
		for _, r := range tc.rows {
			if slices.Contains(all, r.Entry) {
				want = append(want, r.Entry)
			}
		}
		var got []string
		for _, r := range paperRows(tc.rows) {
			got = append(got, r.Entry)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the docs' rows %v, want the paper's %v (TestResultsRoundTrip reads them)", tc.name, got, want)
		}
	}
}

// TestStudyPage: with -docs a study's figures, one per graph, go to docs/
// under its name, with a page holding its claim, measurement, table and
// those figures; an entry of the paper gets no page, and a study whose
// figures are missing is an error.
func TestStudyPage(t *testing.T) {
	t.Run("stamp", testStamp)
	dir, docs := t.TempDir(), t.TempDir()
	files := map[string]string{"summary.md": "# Sweep aggregate\n\n| model | trainer |\n| --- | --- |\n| bigram | ppo |\n",
		"hitting_time-W3K3L2.png": "png 1", "hitting_time-W15K15L5.png": "png 2", "runs.csv": "not a figure"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	row := Result{Entry: compareLearners, Claim: "a claim", Measured: "a measurement", Agrees: "yes", Seconds: 12,
		Code: map[string]int{"0123456789ab": 3, "": 1, "0123456789ab then ba9876543210": 1}}
	if err := copyFigures(dir, docs, row.Entry); err != nil {
		t.Fatal(err)
	}
	stamp := Stamp("train reproduce compare-learners -docs docs", docs)
	if err := writeStudyPage(dir, docs, row, stamp); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"compare-learners-W3K3L2.png": "png 1", "compare-learners-W15K15L5.png": "png 2"} {
		if got, err := os.ReadFile(filepath.Join(docs, name)); err != nil || string(got) != want {
			t.Errorf("docs/%s: %q, %v; want %q", name, got, err, want)
		}
	}
	page, err := os.ReadFile(filepath.Join(docs, "compare-learners.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "# Sweep aggregate") {
		t.Errorf("the page keeps the table's own title:\n%s", page)
	}
	for _, want := range []string{"# compare-learners", stamp + " Its 5 runs: made 3 at commit 0123456789ab, 1 at no recorded commit (a binary built without VCS stamping), " +
		"1 at commit 0123456789ab then ba9876543210.\n", "Measured: a measurement. Agreement: yes.", strings.TrimPrefix(files["summary.md"], "# Sweep aggregate\n\n"),
		"![compare-learners-W3K3L2](compare-learners-W3K3L2.png)", "![compare-learners-W15K15L5](compare-learners-W15K15L5.png)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	entries, _ := os.ReadDir(docs)
	if len(entries) != 3 {
		t.Errorf("docs holds %d files, want the page and two figures", len(entries))
	}
	if err := writeStudyPage(dir, docs, Result{Entry: "fig6-ppo"}, stamp); err != nil {
		t.Errorf("an entry of the paper: %v", err)
	}
	if _, err := os.Stat(filepath.Join(docs, "fig6-ppo.md")); err == nil {
		t.Error("an entry of the paper got a page")
	}
	if err := copyFigures(t.TempDir(), docs, rlvrAlgorithms); err == nil {
		t.Error("a study without its figures: no error")
	}
}

// TestRunsMade: the sentence after a page's stamp names the code of its
// runs, one commit or a count per commit, and nothing for a page without
// runs.
func TestRunsMade(t *testing.T) {
	for _, tc := range []struct {
		code map[string]int
		want string
	}{
		{nil, ""},
		{map[string]int{"0123456789ab": 1}, " Its 1 run: made at commit 0123456789ab."},
		{map[string]int{"0123456789ab": 201}, " Its 201 runs: made at commit 0123456789ab."},
		{map[string]int{"aaaaaaaaaaaa": 2, "bbbbbbbbbbbb": 2, "cccccccccccc+dirty": 7}, " Its 11 runs: made 7 at commit cccccccccccc+dirty, 2 at commit aaaaaaaaaaaa, 2 at commit bbbbbbbbbbbb."},
	} {
		if got := runsMade(tc.code); got != tc.want {
			t.Errorf("runsMade(%v) = %q, want %q", tc.code, got, tc.want)
		}
	}
	if got := codeKey([]string{"aaaaaaaaaaaa", ""}); got != "" {
		t.Errorf("a run resumed by a binary without its commit: %q, want unknown", got)
	}
}

// testStamp: a page's stamp names the command, the commit (this test runs
// inside the repository's git checkout when there is one) and the machine.
func testStamp(t *testing.T) {
	s := Stamp("train reproduce fig3-4 -docs docs", ".")
	for _, want := range []string{"Generated by `train reproduce fig3-4 -docs docs` at commit ", runtime.GOOS + "/" + runtime.GOARCH, runtime.Version()} {
		if !strings.Contains(s, want) {
			t.Errorf("stamp %q lacks %q", s, want)
		}
	}
	if _, err := exec.LookPath("git"); err == nil && strings.Contains(s, "commit unknown") {
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			t.Errorf("stamp %q: the commit is unknown, git says %s", s, out)
		}
	}
}
