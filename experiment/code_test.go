package experiment_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/experiment"
)

// TestRunRecordsItsCode: summary.json names the code that trained the run
// (go test, like go run, stamps no commit into its binary: the commit is
// git's HEAD here), and a run resumed by other code lists both, in order,
// so a page built from runs can say which code made them (the W=K=5
// defaults study's page named the commit that aggregated it while most
// of its runs were 12 hours older).
func TestRunRecordsItsCode(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): the code is unknown here", err)
	}
	code := experiment.Code()
	if want := strings.TrimSpace(string(head))[:12]; strings.TrimSuffix(code, "+dirty") != want {
		t.Fatalf("Code() = %q, want the checkout's %s (+dirty with uncommitted changes)", code, want)
	}
	dir := filepath.Join(t.TempDir(), "run")
	interruptAt(t, resumeConfig(dir), 40)
	path := filepath.Join(dir, experiment.CheckpointFile)
	ck, err := checkpoints.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ck.Code, []string{code}) {
		t.Fatalf("checkpoint code %q, want [%s]", ck.Code, code)
	}
	ck.Code = []string{"0123456789ab"} // as if an older commit trained the first 40 steps
	if err := checkpoints.Save(path, ck); err != nil {
		t.Fatal(err)
	}
	s, err := experiment.Resume(context.Background(), dir, experiment.Changes{}, experiment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0123456789ab", code}; !slices.Equal(s.Code, want) {
		t.Errorf("resumed run's code %q, want %q", s.Code, want)
	}
	fresh, err := experiment.Run(context.Background(), resumeConfig(filepath.Join(t.TempDir(), "fresh")), experiment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fresh.Code, []string{code}) {
		t.Errorf("uninterrupted run's code %q, want [%s]", fresh.Code, code)
	}
}
