//go:build unix

package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFolder takes the run folder's exclusive lock, creating the folder: an
// advisory flock on dir/.lock, released when the process ends however it
// ends (no stale locks). The lock file holds the holder's pid, for the
// message a second writer gets, and is removed when the run lets go of it:
// a finished run leaves no lock file. A lock file removed between this
// process's open and its flock is another file than the one at the path
// now: it is opened again.
func lockFolder(dir string) (unlock func(), err error) {
	created := firstMissing(dir) // "" when dir exists
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, inputf("out %s: %v", dir, err)
	}
	path := filepath.Join(dir, lockFile)
	var f *os.File
	for {
		if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
			return nil, inputf("out %s: lock: %v", dir, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder, _ := os.ReadFile(path)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &InputError{inUse{fmt.Sprintf("out %s is in use by another run (pid %s): one writer per run folder; wait for it or choose another -out", dir, strings.TrimSpace(string(holder)))}}
			}
			return nil, inputf("out %s: lock: %v", dir, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			break
		}
		f.Close() // the holder before us removed it: lock the path's file
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		os.Remove(path) // still held: a process that opened it before sees another file at the path and retries
		if created != "" {
			removeEmpty(dir, created) // refused before writing anything: leave no folder behind
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
