package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// runExport writes a run folder's checkpointed model as an .npz file
// (experiment.Checkpointed.Arrays), atomically. The output path and the
// memory it takes are checked before anything is read or written; every
// refusal is one line, exit 2.
func runExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export")
	out := fs.String("out", "", "the .npz file to write (default DIR/"+experiment.ExportFile+")")
	maxBytes := maxBytesFlag(fs)
	dir, err := parseDir(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := refuseEmpty(fs, map[string]string{"out": "an .npz file (leave it out for DIR/" + experiment.ExportFile + ")"}); err != nil {
		return err
	}
	budget, err := resolveBudget(fs, *maxBytes)
	if err != nil {
		return err
	}
	if *out == "" { // the file goes into the run folder: name the folder given
		if fi, err := os.Stat(dir); os.IsNotExist(err) {
			return usagef("export: run folder %s does not exist", dir)
		} else if err != nil {
			return usagef("export: run folder %s: %v", dir, pathless(err))
		} else if !fi.IsDir() {
			return usagef("export: run folder %s is not a folder", dir)
		}
		*out = filepath.Join(dir, experiment.ExportFile)
	}
	if err := checkOutFile("export", "out", *out); err != nil {
		return err
	}
	c, err := experiment.Open(dir, budget)
	if err != nil {
		return usagef("export: %s: %v", dir, err)
	}
	defer c.Close()
	if err := overBudget("export", "writing the arrays", c.ArraysBytes(), tasks.EstimateBytes(c.Graph.Config.Size()), budget); err != nil {
		return err
	}
	arrays := c.Arrays()
	counted := &countingWriter{}
	err = checkpoints.WriteAtomic(*out, func(w io.Writer) error {
		counted.w = w
		return checkpoints.WriteNPZ(counted, arrays)
	})
	if err != nil {
		return usagef("export: -out %s: %v", *out, pathless(err))
	}
	fmt.Fprintf(stdout, "%s: %s model at step %d -> %s (%d bytes):\n", dir, c.Kind, c.Step, *out, counted.n)
	for _, a := range arrays {
		kind := map[bool]string{true: "float64"}[a.Float != nil]
		if a.Int != nil {
			kind = "int64"
		} else if a.Text != nil {
			kind = "str"
		}
		fmt.Fprintf(stdout, "  %-12s %-7s %v\n", a.Name, kind, a.Shape)
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
