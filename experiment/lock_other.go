//go:build !unix

package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// lockFolder takes the run folder's exclusive lock, creating the folder: a
// lock file created with O_EXCL holding the holder's pid, removed when the
// run ends (a crash leaves it: remove it by hand once no run uses the
// folder).
func lockFolder(dir string) (unlock func(), err error) {
	created := firstMissing(dir) // "" when dir exists
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, inputf("out %s: %v", dir, err)
	}
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		holder, _ := os.ReadFile(path)
		return nil, &InputError{inUse{fmt.Sprintf("out %s is in use by another run (lock file %s, pid %s): one writer per run folder", dir, path, string(holder))}}
	}
	f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	f.Close()
	return func() {
		os.Remove(path)
		if created != "" {
			removeEmpty(dir, created) // refused before writing anything: leave no folder behind
		}
	}, nil
}
