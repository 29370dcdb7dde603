package reproduce

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitIgnoresTheDocsFolder: the stamp's commit says "with uncommitted
// changes" when code outside the documentation folder differs from the
// commit, and not when only the documentation folder does (a -docs run
// writes its pages there before it stamps them). go test records no
// commit in its binary, so commit reads git, in a repository of its own.
func TestCommitIgnoresTheDocsFolder(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("main.go", "package main\n")
	write("docs/results.md", "# Results\n")
	git("add", ".")
	git("commit", "-q", "-m", "x")
	docs := filepath.Join(repo, "docs")
	if c := commit(docs); c == "unknown" || strings.Contains(c, "uncommitted") {
		t.Fatalf("clean repository: commit %q", c)
	}
	write("docs/results.md", "# Results, again\n")
	if c := commit(docs); strings.Contains(c, "uncommitted") {
		t.Errorf("only docs/ changed: commit %q, want no uncommitted changes", c)
	}
	write("main.go", "package main // changed\n")
	if c := commit(docs); !strings.Contains(c, "uncommitted") {
		t.Errorf("main.go changed: commit %q, want uncommitted changes", c)
	}
}
