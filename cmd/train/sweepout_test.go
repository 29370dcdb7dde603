package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepIntoFolderItCannotMake: a sweep whose -out (or the spec's out)
// cannot be created is refused in one line naming it, exit 2, before any
// line about its runs (no "0 trained, 0 already done, ...").
func TestSweepIntoFolderItCannotMake(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(file, "sweep")
	spec := writeSpec(t, smallSweep)
	code, stdout, errs := runCLI(t, "sweep", spec, "-out", out)
	if code != 2 || stdout != "" || !strings.HasPrefix(errs, "train: sweep: out "+out+": ") || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing on stdout, one line naming %s", code, stdout, errs, out)
	}
}
