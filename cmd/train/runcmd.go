package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// runArgs is what train run's command line asks for.
type runArgs struct {
	cfg     experiment.Config  // resolved, unless resume is set
	resume  string             // a run folder to resume
	changes experiment.Changes // with resume: a new step cap, a new -until
	force   bool
}

// parseRun reads train run's command line: the -config file's object
// with each flag given set on top at its path (runFlags), resolved in one
// place (experiment.Given.Resolve), as a sweep's runs are.
func parseRun(args []string, stdout io.Writer) (runArgs, error) {
	fs := newFlagSet("run")
	var a runArgs
	config := fs.String("config", "", "read the run configuration from this JSON file (same fields as config.json); flags override it")
	fs.StringVar(&a.resume, "resume", "", "resume the run in this folder from its checkpoint (the configuration embedded in the checkpoint is used); takes -steps and -until")
	fs.BoolVar(&a.force, "force", false, "replace a run folder that holds another run")
	values := registerRunFlags(fs)
	if err := parse(fs, args, stdout); err != nil {
		return a, err
	}
	if err := refuseEmpty(fs, map[string]string{"config": "a JSON file of the run's configuration"}); err != nil {
		return a, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["resume"] {
		return a, parseResume(fs, &a, set, values)
	}
	given := experiment.NewGiven()
	if set["config"] {
		data, err := os.ReadFile(*config)
		if err != nil {
			return a, usagef("run: -config: %v", err)
		}
		if given, err = experiment.ParseGiven(data); err != nil {
			return a, usagef("run: -config %s: %v", *config, err)
		}
		if err := given.Check(); err != nil {
			return a, usagef("run: -config %s: %v", *config, err)
		}
	}
	if err := setGraphFlags(given, set, values); err != nil {
		return a, err
	}
	for _, f := range runFlags {
		if set[f.name] && !strings.HasPrefix(f.path, "graph.") {
			if err := given.Set(f.path, values[f.name].value); err != nil {
				return a, usagef("run: -%s: %v", f.name, err)
			}
		}
	}
	cfg, err := given.Resolve()
	if err != nil {
		var na *experiment.NotApplicable
		if errors.As(err, &na) {
			if name := flagFor(na.Path); set[name] {
				na.Path = "-" + name
			} else if set["config"] {
				na.Path += " (in -config " + *config + ")"
			}
			return a, usagef("run: %v", na)
		}
		var empty *experiment.Empty
		if errors.As(err, &empty) {
			if name := flagFor(empty.Path); set[name] {
				empty.Path = "-" + name
			} else if set["config"] {
				return a, usagef("run: -config %s: %v", *config, empty)
			}
			return a, usagef("run: %v", empty)
		}
		return a, usagef("run: %v", err)
	}
	a.cfg = cfg
	return a, nil
}

// parseResume reads -resume DIR and the changes it takes: a new step cap
// (-steps) and stop distance (-until), checked against the checkpoint's
// configuration when the run is resumed.
func parseResume(fs *flag.FlagSet, a *runArgs, set map[string]bool, values map[string]*pathValue) error {
	if a.resume == "" {
		return usagef("run: -resume \"\": want a run folder")
	}
	other := ""
	fs.Visit(func(f *flag.Flag) { // lexical order: the message is deterministic
		if other == "" && f.Name != "resume" && f.Name != "steps" && f.Name != "until" {
			other = f.Name
		}
	})
	if other != "" {
		return usagef("run: -resume takes only -steps (a new step cap) and -until, not -%s: the run continues with the configuration in its checkpoint", other)
	}
	if set["steps"] {
		json.Unmarshal(values["steps"].value, &a.changes.Steps)
		if a.changes.Steps < 1 {
			return usagef("run: -steps %d: want >= 1", a.changes.Steps)
		}
	}
	if set["until"] {
		a.changes.Until = new(float64)
		json.Unmarshal(values["until"].value, a.changes.Until)
	}
	return nil
}

// setGraphFlags sets the graph flags given on the configuration: -W, -K,
// -L and -max-bytes at their paths (over the -config file's graph, or the
// default one), -branches as a new graph (keeping a given budget), and
// the machine's budget (3/4 of its memory) when none is given.
func setGraphFlags(given *experiment.Given, set map[string]bool, values map[string]*pathValue) error {
	if set["max-bytes"] {
		if n, _ := strconv.ParseInt(string(values["max-bytes"].value), 10, 64); n < 1 {
			return usagef("run: -max-bytes %d: want a budget in bytes >= 1 (leave it out for 3/4 of the machine's memory)", n)
		}
	}
	if set["branches"] {
		if set["W"] || set["K"] || set["L"] {
			return usagef("run: -branches and -W/-K/-L are exclusive: give one shape")
		}
		spec := values["branches"].text
		if spec == "" {
			return usagef(`run: -branches "": want a branch spec such as "2,2,3;5,1"`)
		}
		b, err := tasks.ParseBranches(spec)
		if err != nil {
			return usagef("run: -branches: %v", strings.TrimPrefix(err.Error(), "tasks: "))
		}
		g := map[string]any{"branches": b}
		var old struct {
			Graph struct {
				MaxBytes json.RawMessage `json:"max_bytes"`
			} `json:"graph"`
		}
		if json.Unmarshal(given.JSON(), &old) == nil && old.Graph.MaxBytes != nil {
			g["max_bytes"] = old.Graph.MaxBytes
		}
		data, _ := json.Marshal(g)
		if err := given.Set("graph", data); err != nil {
			return usagef("run: -branches: %v", err)
		}
	}
	for _, f := range runFlags {
		if set[f.name] && f.name != "branches" && strings.HasPrefix(f.path, "graph.") {
			if err := given.Set(f.path, values[f.name].value); err != nil {
				return usagef("run: -%s: %v", f.name, err)
			}
		}
	}
	if !given.Has("graph.max_bytes") {
		if err := given.Set("graph.max_bytes", json.RawMessage(strconv.FormatInt(defaultMaxBytes(), 10))); err != nil {
			return usagef("run: -max-bytes: %v", err)
		}
	}
	return nil
}

func runRun(args []string, stdout, stderr io.Writer) error {
	a, err := parseRun(args, stdout)
	if err != nil {
		return err
	}
	if a.resume != "" {
		return execute(stdout, stderr, &a.changes, func(ctx context.Context, o experiment.Options) (experiment.Summary, error) {
			s, err := experiment.Resume(ctx, a.resume, a.changes, o)
			if experiment.IsInput(err) {
				return s, usagef("run: -resume %s: %v", a.resume, err)
			}
			return s, err
		})
	}
	if g := &a.cfg.Graph; budgetCap > 0 && (g.MaxBytes == 0 || g.MaxBytes > budgetCap) {
		g.MaxBytes = budgetCap // tests: the fuzz target's bound on every budget
	}
	return execute(stdout, stderr, nil, func(ctx context.Context, o experiment.Options) (experiment.Summary, error) {
		o.Force = a.force
		return experiment.Run(ctx, a.cfg, o)
	})
}

// continueHint says why a finished run has nothing left to do under the
// resume's changes ch (nil: none), and the command that trains it on when
// there is one.
func continueHint(s experiment.Summary, ch *experiment.Changes) string {
	steps := 2 * s.Steps
	if ch != nil && ch.Steps > s.Steps {
		steps = ch.Steps
	}
	switch s.StopReason {
	case trainers.StopUntil:
		why := fmt.Sprintf("it stopped at step %d within its -until of the limit", s.Steps)
		switch {
		case ch != nil && ch.Until != nil:
			why = fmt.Sprintf("at step %d it is within -until %g of the limit", s.Steps, *ch.Until)
		case ch != nil && ch.Steps > 0:
			why += fmt.Sprintf(", which -steps %d does not change", ch.Steps)
		}
		return fmt.Sprintf("%s; to train on, lower -until (0: to the step cap): train run -resume %s -until 0 -steps %d", why, s.Out, steps)
	case trainers.StopSteps:
		return fmt.Sprintf("it reached its step cap at step %d; to train on, raise it: train run -resume %s -steps %d", s.Steps, s.Out, steps)
	case trainers.StopTokens:
		return "it spent its sampled-token budget (-max-tokens), which a resume does not change; -force starts a new run"
	case trainers.StopOptimum:
		return "it stopped at the exact optimum of its setting: there is nothing left to learn"
	case trainers.StopStationary, trainers.StopStall:
		return "it stopped making progress (-patience); -force starts a new run (another -lr or -optimizer)"
	case trainers.StopMemory:
		return "its next batch would not fit the memory budget; -force starts a new run (a larger -max-bytes, fewer -rollouts)"
	}
	return "-force starts a new run"
}

// runDefault runs the paper's headline experiment (Figures 3-4) into
// runs/fig3-4.
func runDefault(stdout, stderr io.Writer) error {
	rc := experiment.DefaultConfig()
	rc.Out = filepath.Join("runs", "fig3-4")
	return execute(stdout, stderr, nil, func(ctx context.Context, o experiment.Options) (experiment.Summary, error) {
		return experiment.Run(ctx, rc, o)
	})
}

// interruptAtStep lets tests deliver a simulated SIGINT after a given step
// (0: never); interruptAtStart, once the run is set up and its folder
// written, before its first measurement.
var (
	interruptAtStep  int
	interruptAtStart bool
)

// interrupted reports a run stopped by a signal after its checkpoint was
// written; main exits 128+signal.
type interrupted struct {
	sig syscall.Signal
	in  *experiment.Interrupted
}

func (e interrupted) Error() string {
	return fmt.Sprintf("interrupted by %v at step %d; checkpoint written; resume with: train run -resume %s", e.sig, e.in.Step, e.in.Dir)
}

// execute runs a training with SIGINT and SIGTERM turned into a checkpoint
// and an exit code, progress shown on stdout, warnings on stderr, and the
// closing table printed. ch are the changes a resume asked for (nil: not a
// resume).
func execute(stdout, stderr io.Writer, ch *experiment.Changes, train func(context.Context, experiment.Options) (experiment.Summary, error)) error {
	sig := catchSignals()
	defer sig.stop()
	prog := newProgress(stdout)
	started := func(cfg experiment.Config, step int, limit float64) {
		prog.start(cfg, step, limit)
		if interruptAtStart { // tests: a signal arriving before the first step
			sig.interrupt(syscall.SIGINT)
		}
	}
	s, err := train(sig.ctx, experiment.Options{Started: started, Progress: prog.update, Warn: warner(stderr), AfterStep: func(step int) {
		if step == interruptAtStep { // tests: a signal arriving after this step
			sig.interrupt(syscall.SIGINT)
		}
	}})
	prog.finish(err == nil)
	var in *experiment.Interrupted
	if errors.As(err, &in) {
		return interrupted{sig: sig.caught(), in: in}
	}
	if experiment.IsInput(err) && !errors.As(err, new(usageError)) {
		return usagef("run: %v", err)
	}
	switch {
	case s.NothingToDo && ch == nil:
		fmt.Fprintf(stdout, "%s already holds this run, finished: nothing to do: %s\n", s.Out, continueHint(s, ch))
	case s.NothingToDo:
		fmt.Fprintf(stdout, "%s: nothing to do: %s\n", s.Out, continueHint(s, ch))
	case s.Resumed:
		fmt.Fprintf(stdout, "resumed the unfinished run in %s from its checkpoint (same configuration; -force starts over)\n", s.Out)
	}
	if s.Out != "" {
		printSummary(stdout, s)
	}
	return err
}
