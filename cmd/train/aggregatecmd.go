package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlvr-backtrack/backtrack/sweep"
)

func runAggregate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("aggregate")
	out := fs.String("out", "", "folder for runs.csv, summary.csv, summary.md and the figures (default: DIR/aggregate of the first DIR)")
	allowMissing := fs.Bool("allow-missing", false, "exit 0 even when runs are missing, incomplete, damaged or stalled (they are still named)")
	combine := fs.Bool("combine", false, "aggregate the folders of several sweeps (sweep.json of different names) together; runs.csv then has a sweep column")
	dirs, err := parseMixed(fs, args, stdout) // folders and flags in any order
	if err != nil {
		return err
	}
	if err := refuseEmpty(fs, map[string]string{"out": "a folder (leave it out for DIR/aggregate of the first DIR)"}); err != nil {
		return err
	}
	if len(dirs) == 0 {
		return usagef("aggregate: name the sweep folders: train aggregate DIR... [-out DIR] [-allow-missing] [-combine]")
	}
	if *out == "" {
		*out = filepath.Join(dirs[0], "aggregate")
	}
	c, err := sweep.Collect(dirs)
	if err != nil {
		return usagef("aggregate: %v", err)
	}
	if len(c.Sweeps) > 1 && !*combine {
		var names []string
		for i, s := range c.Sweeps {
			switch {
			case i == 0:
				names = append(names, fmt.Sprintf("%s holds sweep %s", s.Dir, s.Name))
			case s.Label != s.Name:
				names = append(names, fmt.Sprintf("%s another sweep %s (other runs)", s.Dir, s.Name))
			default:
				names = append(names, fmt.Sprintf("%s sweep %s", s.Dir, s.Name))
			}
		}
		return usagef("aggregate: %s, each numbering its runs from 0: give the folders of one sweep, or -combine to aggregate them together (runs.csv then has a sweep column)", strings.Join(names, " and "))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return usagef("aggregate: -out %s: %v", *out, err)
	}
	files, err := c.Write(*out)
	if err != nil {
		return err
	}
	md, err := os.ReadFile(filepath.Join(*out, "summary.md"))
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, string(md))
	fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(files, ", "))
	if p := c.Problems(); len(p) > 0 && !*allowMissing {
		return fmt.Errorf("aggregate: %d of %d runs missing, incomplete, damaged or stalled: %s (run the sweep again to finish the missing and incomplete ones, or -allow-missing)",
			len(p), len(c.Runs), strings.Join(p, "; "))
	}
	return nil
}
