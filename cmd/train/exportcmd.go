package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/experiment"
)

// runExport writes a run folder's checkpointed model as an .npz file
// (experiment.Checkpointed.Arrays), atomically.
func runExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export")
	out := fs.String("out", "", "the .npz file to write (default DIR/"+experiment.ExportFile+")")
	dir, err := parseDir(fs, args, stdout)
	if err != nil {
		return err
	}
	c, err := experiment.Open(dir)
	if err != nil {
		return usagef("export: %s: %v", dir, err)
	}
	defer c.Close()
	if *out == "" {
		*out = filepath.Join(dir, experiment.ExportFile)
	}
	arrays := c.Arrays()
	var buf bytes.Buffer
	if err := checkpoints.WriteNPZ(&buf, arrays); err != nil {
		return err
	}
	if err := checkpoints.WriteFileAtomic(*out, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s model at step %d -> %s (%d bytes):\n", dir, c.Kind, c.Step, *out, buf.Len())
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
