package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/sweep"
)

// signalled reports a command stopped by SIGINT or SIGTERM after its runs
// wrote their checkpoints; main exits 128+signal.
type signalled struct {
	sig syscall.Signal
	msg string
}

func (e signalled) Error() string { return e.msg }

// sweepArgs is what train sweep's command line asks for.
type sweepArgs struct {
	spec, out, shard, print string
	jobs                    int
	dryRun                  bool
	cluster                 sweep.Cluster
}

func runSweep(args []string, stdout, stderr io.Writer) error {
	var a sweepArgs
	fs := newFlagSet("sweep")
	fs.StringVar(&a.out, "out", "", "the sweep's folder (default: the spec's out, else runs/sweeps/<spec name>)")
	fs.IntVar(&a.jobs, "jobs", 0, "runs trained at once (default: the number of cores; see the manual)")
	fs.StringVar(&a.shard, "shard", "", "train shard i/n only: the runs whose index is i modulo n (default: from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX, else all)")
	fs.BoolVar(&a.dryRun, "dry-run", false, "list the runs (index, state, folder, settings) and train nothing")
	fs.StringVar(&a.print, "print", "", "print a submission script instead of training: slurm (an sbatch job array) or k8s (an Indexed Job)")
	c := &a.cluster
	fs.StringVar(&c.Binary, "binary", "", "-print: the train binary the tasks run (default: this binary; k8s: train)")
	fs.IntVar(&c.Tasks, "tasks", 0, "-print: array tasks, each a shard of the runs (default: one per run)")
	fs.IntVar(&c.CPUs, "cpus", 1, "-print: cores per task (each task trains that many runs at once)")
	fs.StringVar(&c.Mem, "mem", "", "-print: memory per task (slurm: e.g. 4G; k8s: e.g. 4Gi; default: the engine's)")
	fs.StringVar(&c.Time, "time", "", "-print slurm: time limit per task, e.g. 02:00:00 (default: the partition's)")
	fs.StringVar(&c.Partition, "partition", "", "-print slurm: partition (default: the cluster's)")
	fs.IntVar(&c.Parallel, "parallel", 0, "-print: tasks running at once (default: no cap)")
	fs.StringVar(&c.Image, "image", defaultImage, "-print k8s: container image holding the train binary")
	fs.StringVar(&c.Claim, "claim", "sweep", "-print k8s: persistent volume claim holding the spec and the run folders")
	fs.StringVar(&c.Mount, "mount", "/sweep", "-print k8s: where the claim is mounted")
	pos, err := parseMixed(fs, args, stdout) // the spec and flags in any order
	if err != nil {
		return err
	}
	err = refuseEmpty(fs, map[string]string{
		"out":       "a folder (leave it out for the spec's out, else runs/sweeps/<spec name>)",
		"shard":     "i/n, e.g. 0/4 (leave it out for the job array's shard, else all)",
		"print":     "slurm or k8s (leave it out to train)",
		"binary":    "the train binary's path (leave it out for this binary; k8s: train)",
		"mem":       "memory per task, e.g. 4G (slurm) or 4Gi (k8s) (leave it out for the engine's)",
		"time":      "a time limit, e.g. 02:00:00 (leave it out for the partition's)",
		"partition": "a partition (leave it out for the cluster's)",
		"image":     "a container image (leave it out for " + defaultImage + ")",
		"claim":     "a persistent volume claim (leave it out for sweep)",
		"mount":     "the claim's mount path (leave it out for /sweep)",
	})
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usagef("sweep: name the spec file: train sweep SPEC.json [flags]")
	case len(pos) > 1:
		return usagef("sweep: one spec file, got %d arguments (%s)", len(pos), strings.Join(pos, " "))
	}
	a.spec = pos[0]
	p, err := loadPlan("sweep", a.spec, a.out)
	if err != nil {
		return err
	}
	if a.print != "" && a.print != "slurm" && a.print != "k8s" {
		return usagef("sweep: -print %q: want slurm or k8s", a.print)
	}
	if err := checkPrintFlags(fs, a.print); err != nil {
		return err
	}
	if a.print != "" {
		return printCluster(stdout, p, a)
	}
	if a.jobs < 0 {
		return usagef("sweep: -jobs %d: want >= 1 (0: the number of cores)", a.jobs)
	}
	shard, source, err := chooseShard(a.shard, os.Getenv)
	if err != nil {
		return err
	}
	if !a.dryRun {
		// The sweep's folder first: one that cannot be made is refused
		// before anything is said about the runs.
		if err := os.MkdirAll(p.Out, 0o755); err != nil {
			return usagef("sweep: out %s: %v", p.Out, pathless(err))
		}
	}
	states, err := p.Check(shard)
	if err != nil {
		return usagef("sweep: %v", err)
	}
	todo := p.Shard(shard)
	fmt.Fprintf(stdout, "sweep %s: %d runs in %s%s: %s\n", p.Spec.Name, len(p.Runs), p.Out, shardNote(shard, source, len(todo)), countStates(states))
	if a.dryRun {
		for i, r := range todo {
			fmt.Fprintf(stdout, "%4d  %-9s  %s  %s\n", r.Index, states[i], r.Dir, r.Describe())
		}
		return nil
	}
	return executeSweep(stdout, p, sweep.Options{Jobs: a.jobs, Shard: shard, Run: experiment.Options{Warn: warner(stderr)}})
}

// loadPlan reads and expands a spec; every error is bad input.
func loadPlan(cmd, specPath, out string) (*sweep.Plan, error) {
	data, err := os.ReadFile(specPath)
	if err != nil {
		return nil, usagef("%s: %v", cmd, err)
	}
	name := strings.TrimSuffix(filepath.Base(specPath), filepath.Ext(specPath))
	s, err := sweep.ParseSpec(data, name)
	if err != nil {
		return nil, usagef("%s: %s: %v", cmd, specPath, err)
	}
	p, err := s.Expand(out)
	if err != nil {
		return nil, usagef("%s: %s: %v", cmd, specPath, err)
	}
	return p, nil
}

// chooseShard takes -shard or the job array's environment, not both.
func chooseShard(flagValue string, getenv func(string) string) (sweep.Shard, string, error) {
	env, source, inArray, err := sweep.ShardFromEnv(getenv)
	if flagValue != "" {
		if inArray {
			if source == "" {
				source = "a job-array variable"
			}
			return sweep.Shard{}, "", usagef("sweep: -shard %s and %s are both given: give one (inside a job array the shard comes from the environment)", flagValue, source)
		}
		s, err := sweep.ParseShard(flagValue)
		if err != nil {
			return s, "", usagef("sweep: -%v", err)
		}
		return s, "-shard", nil
	}
	if err != nil {
		return env, "", usagef("sweep: %v", err)
	}
	return env, source, nil
}

func shardNote(s sweep.Shard, source string, n int) string {
	if s == sweep.All {
		return ""
	}
	return fmt.Sprintf(", shard %s (%s) of %d runs", s, source, n)
}

func countStates(states []sweep.State) string {
	counts := map[sweep.State]int{}
	for _, st := range states {
		counts[st]++
	}
	var parts []string
	for _, st := range []sweep.State{sweep.Done, sweep.Stalled, sweep.Resumable, sweep.New} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	if len(parts) == 0 {
		return "no runs"
	}
	return strings.Join(parts, ", ")
}

// executeSweep trains the plan with SIGINT and SIGTERM turned into
// checkpoints and an exit code, one line (or a bar step) per finished run.
func executeSweep(stdout io.Writer, p *sweep.Plan, opts sweep.Options) error {
	sig := catchSignals()
	defer sig.stop()
	var bar *progressbar.ProgressBar
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(p.Shard(opts.Shard)), progressbar.OptionSetWriter(stdout), progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
	start := time.Now()
	opts.Finished = func(done, total int, res sweep.Result) {
		if bar != nil {
			bar.Clear() // the run's line goes above the bar
		}
		fmt.Fprintf(stdout, "[%d/%d] run %d %s: %s\n", done, total, res.Run.Index, res.Run.Name, resultLine(res))
		if bar != nil {
			bar.Add(1)
		}
	}
	rep, err := sweep.Execute(sig.ctx, p, opts)
	if bar != nil {
		bar.Finish()
	}
	if rep.Results == nil && err != nil { // refused before any run: no counts to give
		if experiment.IsInput(err) {
			return usagef("sweep: %v", err)
		}
		return fmt.Errorf("sweep: %w", err)
	}
	skipped, trained, interrupted, failed := rep.Counts()
	fmt.Fprintf(stdout, "sweep %s: %d trained, %d already done, %d interrupted, %d failed in %.1fs; runs in %s\n",
		p.Spec.Name, trained, skipped, interrupted, failed, time.Since(start).Seconds(), p.Out)
	switch {
	case errors.Is(err, sweep.ErrInterrupted):
		caught := sig.caught()
		return signalled{caught, fmt.Sprintf("interrupted by %v: %d running runs wrote their checkpoints; run the same command again to resume", caught, interrupted)}
	case experiment.IsInput(err):
		return usagef("sweep: %v", err)
	}
	return err
}

// resultLine says what became of a run.
func resultLine(res sweep.Result) string {
	var in *experiment.Interrupted
	switch {
	case errors.As(res.Err, &in):
		return fmt.Sprintf("interrupted at step %d, checkpoint written", in.Step)
	case res.Err != nil:
		return fmt.Sprintf("failed: %v", res.Err)
	case res.Summary.Out == "":
		return "not started"
	}
	s := res.Summary
	verb := "done"
	switch {
	case res.Before == sweep.Stalled:
		verb = "stalled before, skipped"
	case res.Skipped():
		verb = "done before, skipped"
	case res.Before == sweep.Resumable:
		verb = "resumed, done"
	}
	h := experiment.FormatNumber(experiment.Value(s.FinalHittingTime))
	if s.FinalCI95 != nil {
		h += fmt.Sprintf(" ± %.3g", *s.FinalCI95)
	}
	return fmt.Sprintf("%s: hitting time %s (limit %s) after %d steps (stop: %s), %.1fs", verb, h, experiment.FormatNumber(experiment.Value(s.LimitHittingTime)), s.Steps, s.StopReason, s.WallSeconds)
}

// printCluster prints a submission script for the plan and writes its
// index into the sweep's folder (where the tasks' logs go).
func printCluster(stdout io.Writer, p *sweep.Plan, a sweepArgs) error {
	c := a.cluster
	if c.CPUs < 1 || c.Tasks < 0 || c.Parallel < 0 {
		return usagef("sweep: -cpus %d, -tasks %d, -parallel %d: want -cpus >= 1, the others >= 0", c.CPUs, c.Tasks, c.Parallel)
	}
	switch a.print {
	case "slurm":
		var err error
		if c.Binary == "" {
			if c.Binary, err = os.Executable(); err != nil {
				return err
			}
			if strings.Contains(c.Binary, "go-build") {
				return usagef("sweep: -print slurm: this binary (%s) is go run's temporary build: build one (go build -o train ./cmd/train) or give -binary", c.Binary)
			}
		}
		if c.Binary, err = filepath.Abs(c.Binary); err != nil {
			return err
		}
		if c.Spec, err = filepath.Abs(a.spec); err != nil {
			return err
		}
		if c.Dir, err = os.Getwd(); err != nil {
			return err
		}
		if p.Out, err = filepath.Abs(p.Out); err != nil {
			return err
		}
		script, err := sweep.SlurmScript(p, c)
		if err != nil {
			return usagef("sweep: -print slurm: %v", err)
		}
		if err := p.WriteIndex(); err != nil {
			return usagef("sweep: %v", err)
		}
		fmt.Fprint(stdout, script)
	case "k8s":
		if c.Binary == "" {
			c.Binary = "train"
		}
		c.Spec = a.spec
		manifest, err := sweep.KubernetesJob(p, c)
		if err != nil {
			return usagef("sweep: -print k8s: %v", err)
		}
		fmt.Fprint(stdout, manifest)
	}
	return nil
}

// defaultImage is the container image a printed Kubernetes job names
// unless -image: the repository's Dockerfile builds it.
const defaultImage = "backtrack-train:latest"

// clusterFlags are the flags of -print, by the engines they apply to.
var clusterFlags = map[string][]string{
	"binary": {"slurm", "k8s"}, "tasks": {"slurm", "k8s"}, "cpus": {"slurm", "k8s"}, "mem": {"slurm", "k8s"}, "parallel": {"slurm", "k8s"},
	"time": {"slurm"}, "partition": {"slurm"}, "image": {"k8s"}, "claim": {"k8s"}, "mount": {"k8s"},
}

// checkPrintFlags refuses -print's flags without -print, and one engine's
// flags with the other's -print: a flag given is used, never ignored.
func checkPrintFlags(fs *flag.FlagSet, print string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		engines, ok := clusterFlags[f.Name]
		switch {
		case !ok || err != nil:
		case print == "":
			err = usagef("sweep: -%s applies to -print (slurm or k8s) only: add -print, or drop -%s", f.Name, f.Name)
		case !slices.Contains(engines, print):
			err = usagef("sweep: -%s applies to -print %s only, not -print %s", f.Name, engines[0], print)
		}
	})
	return err
}
