package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rlvr-backtrack/backtrack/reproduce"
)

func runReproduce(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reproduce")
	out := fs.String("out", filepath.Join("runs", "reproduce"), "folder for every entry's data, figures and results.md")
	quick := fs.Bool("quick", false, "run every entry at a reduced size (a smoke test: about a minute)")
	docs := fs.String("docs", "", "also copy the figures (and, after all, results.md) into this documentation folder, e.g. docs (not with -quick)")
	// Entry names and flags in any order: train reproduce fig3-4 -quick thm2-sft.
	names, err := parseMixed(fs, args, stdout)
	if err != nil {
		return err
	}
	err = refuseEmpty(fs, map[string]string{
		"out":  "a folder (leave it out for " + filepath.Join("runs", "reproduce") + ")",
		"docs": "an existing documentation folder, e.g. docs (leave it out to copy nothing)",
	})
	if err != nil {
		return err
	}
	names, err = reproduce.Check(names)
	if err != nil {
		return usagef("reproduce: %v", err)
	}
	if *docs != "" && *quick {
		return usagef("reproduce: -docs with -quick: the documentation shows the paper's sizes")
	}
	if st, err := os.Stat(*docs); *docs != "" && (err != nil || !st.IsDir()) {
		return usagef("reproduce: -docs %s: want an existing folder", *docs)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return usagef("reproduce: -out %s: %v", *out, err)
	}
	if err := reproduce.CheckResults(*out); err != nil { // its rows are merged with this call's
		return usagef("reproduce: %v", err)
	}
	var bar *progressbar.ProgressBar // over the whole suite, on a terminal
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(names), progressbar.OptionSetWriter(stdout), progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
	}
	start := time.Now()
	opts := reproduce.Options{Out: *out, Quick: *quick, Docs: *docs, Log: stdout, Command: "train reproduce " + strings.Join(args, " "),
		Started: func(i, n int, name string) {
			if bar != nil {
				bar.ChangeMax(n)
				bar.Describe(name)
			} else {
				fmt.Fprintf(stdout, "[%d/%d] %s ...\n", i+1, n, name)
			}
		},
		Finished: func(i, n int, r reproduce.Result) {
			if bar != nil {
				bar.Clear() // the entry's line goes above the bar
			}
			fmt.Fprintf(stdout, "[%d/%d] %s: %s (%s, %.1fs)\n", i, n, r.Entry, r.Agrees, r.Measured, r.Seconds)
			if bar != nil {
				bar.Add(1)
			}
		},
	}
	sig := catchSignals()
	defer sig.stop()
	if _, err := reproduce.Run(sig.ctx, names, opts); err != nil {
		if sig.ctx.Err() != nil {
			caught := sig.caught()
			return signalled{caught, fmt.Sprintf("interrupted by %v: the entry in progress stopped and results.md was not written; run the same command again (entries start over)", caught)}
		}
		return err
	}
	fmt.Fprintf(stdout, "results: %s (%.1fs)\n", filepath.Join(*out, "results.md"), time.Since(start).Seconds())
	return nil
}
