package main

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// maxBytesFlag registers -max-bytes on a subcommand that reads a run
// folder: the memory budget train run checks its graphs against.
func maxBytesFlag(fs *flag.FlagSet) *int64 {
	return fs.Int64("max-bytes", 0, "memory budget in bytes, as for train run: work that would not fit is refused before it starts (default: 3/4 of the machine's memory)")
}

// budgetCap lets tests (the fuzz target) bound every memory budget (0: no
// bound).
var budgetCap int64

// resolveBudget is the -max-bytes value of fs in bytes: left out, 3/4 of
// the machine's memory (defaultMaxBytes); 0 given, or a negative value, is
// refused.
func resolveBudget(fs *flag.FlagSet, v int64) (int64, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "max-bytes" })
	switch {
	case v < 0:
		return 0, usagef("%s: -max-bytes %d: want >= 0 (0: 3/4 of the machine's memory)", fs.Name(), v)
	case v == 0 && given:
		return 0, usagef("%s: -max-bytes 0: want a budget in bytes >= 1 (leave it out for 3/4 of the machine's memory)", fs.Name())
	case v == 0:
		v = defaultMaxBytes()
	}
	if budgetCap > 0 {
		v = min(v, budgetCap)
	}
	return v, nil
}

// overBudget refuses work that needs about need bytes besides the graph
// (of about graph bytes, tasks.EstimateBytes) when both exceed budget;
// what names the work.
func overBudget(cmd, what string, need, graph float64, budget int64) error {
	if need+graph <= float64(budget) {
		return nil
	}
	return usagef("%s: %s needs about %s besides the graph's %s, over the memory budget of %s (-max-bytes)",
		cmd, what, tasks.HumanBytes(need), tasks.HumanBytes(graph), tasks.HumanBytes(float64(budget)))
}

// checkOutFile refuses an output file path that cannot be written as one
// file: a folder, or a path whose folder is missing or is not a folder.
func checkOutFile(cmd, flagName, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usagef("%s: -%s %s is a folder: want a file path, e.g. %s", cmd, flagName, path, filepath.Join(path, "model.npz"))
	}
	parent := filepath.Dir(path)
	st, err := os.Stat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("%s: -%s %s: folder %s does not exist: create it first", cmd, flagName, path, parent)
	case err != nil:
		return usagef("%s: -%s %s: %v", cmd, flagName, path, pathless(err))
	case !st.IsDir():
		return usagef("%s: -%s %s: %s is not a folder", cmd, flagName, path, parent)
	}
	return nil
}

// pathless is an error without the path an *fs.PathError names (a
// temporary file's, say): its operation's cause alone.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
