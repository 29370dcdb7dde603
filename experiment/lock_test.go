package experiment_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
)

// TestRunLeavesNoLock: a finished run, an interrupted one and a rerun that
// finds its run finished leave no .lock file in the run folder; while a run
// holds the folder a second one is refused.
func TestRunLeavesNoLock(t *testing.T) {
	base := t.TempDir()
	lock := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, ".lock"))
		return err == nil
	}
	done := filepath.Join(base, "done")
	if _, err := experiment.Run(context.Background(), resumeConfig(done), experiment.Options{}); err != nil {
		t.Fatal(err)
	}
	if lock(done) {
		t.Error("a finished run left its .lock")
	}
	if s, err := experiment.Run(context.Background(), resumeConfig(done), experiment.Options{}); err != nil || !s.NothingToDo || lock(done) {
		t.Errorf("rerun of a finished run: nothing to do %v, %v, .lock left %v; want nothing to do, no error, no .lock", s.NothingToDo, err, lock(done))
	}
	cut := filepath.Join(base, "cut")
	held := false
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := experiment.Run(ctx, resumeConfig(cut), experiment.Options{AfterStep: func(s int) {
		if s == 10 {
			_, err := experiment.Run(context.Background(), resumeConfig(cut), experiment.Options{})
			held = lock(cut) && err != nil
			cancel()
		}
	}})
	if err == nil || lock(cut) {
		t.Errorf("interrupted run: %v, .lock left %v; want interrupted, no .lock", err, lock(cut))
	}
	if !held {
		t.Error("while the run held its folder, a second run was not refused (or the lock file was not there)")
	}
}
