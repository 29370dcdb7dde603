package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// interrupted reports a run stopped by a signal after its checkpoint was
// written; main exits 128+signal.
type interrupted struct {
	sig  syscall.Signal
	step int
	dir  string
}

func (e interrupted) Error() string {
	return fmt.Sprintf("interrupted by %v at step %d; checkpoint written; resume with: train run -resume %s", e.sig, e.step, e.dir)
}

func runRun(args []string, stdout, stderr io.Writer) error {
	rc := defaultRunConfig()
	if path := findFlag(args, "config"); path != "" {
		if err := loadRunConfig(path, &rc); err != nil {
			return err
		}
	}
	fs := newFlagSet("run")
	var gf graphFlags
	tf := trainers.DefaultTransformerOptions()
	if rc.Transformer != nil {
		tf = *rc.Transformer
	}
	resume := runFlags(fs, &rc, &gf, &tf)
	force := fs.Bool("force", false, "replace a run folder that holds another run")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *resume != "" {
		other := ""
		fs.Visit(func(f *flag.Flag) { // lexical order: the message is deterministic
			if other == "" && f.Name != "resume" && f.Name != "steps" {
				other = f.Name
			}
		})
		if other != "" {
			return usagef("run: -resume takes only -steps (a new step cap), not -%s: the run continues with the configuration in its checkpoint", other)
		}
		steps := 0
		if set["steps"] {
			steps = rc.Train.Steps
		}
		return resumeRun(*resume, steps, stdout, stderr)
	}
	if !set["config"] {
		// Sampled RLVR's tuned optimiser and batch unless asked otherwise.
		d := trainers.SampledDefaults(rc.Train, rc.Train.Trainer)
		if rc.Model == "transformer" {
			d = trainers.TransformerRLVRDefaults(rc.Train, rc.Train.Trainer)
		}
		if !set["optimizer"] && !set["lr"] {
			rc.Train.Optim = d.Optim
		}
		if !set["rollouts"] {
			rc.Train.Rollouts = d.Rollouts
		}
		if !set["baseline"] {
			rc.Train.Baseline = d.Baseline
		}
	}
	g, err := gf.config(fs)
	if err != nil {
		return err
	}
	rc.Graph = g
	if rc.Model == "transformer" {
		rc.Transformer = &tf
	} else {
		for _, name := range transformerFlags {
			if set[name] {
				return usagef("run: -%s configures the transformer: add -model transformer", name)
			}
		}
	}
	if err := rc.validate(); err != nil {
		return err
	}
	_, err = train(rc, nil, *force, stdout, stderr)
	return err
}

// runDefault runs the paper's headline experiment (Figures 3-4) into
// runs/fig3-4.
func runDefault(stdout, stderr io.Writer) error {
	rc := defaultRunConfig()
	rc.Out = filepath.Join("runs", "fig3-4")
	if err := rc.validate(); err != nil {
		return err
	}
	_, err := train(rc, nil, false, stdout, stderr)
	return err
}

// resumeRun continues the run in dir from its checkpoint, with a new step
// cap when steps > 0.
func resumeRun(dir string, steps int, stdout, stderr io.Writer) error {
	ck, err := checkpoints.Load(filepath.Join(dir, checkpointFile))
	if err != nil {
		return usagef("run: -resume %s: %v", dir, err)
	}
	var rc runConfig
	if err := json.Unmarshal(ck.Config, &rc); err != nil {
		return usagef("run: -resume %s: checkpoint config: %v", dir, err)
	}
	rc.Out = dir
	if steps > 0 {
		if steps < ck.Step {
			return usagef("run: -steps %d: the checkpoint in %s is already at step %d", steps, dir, ck.Step)
		}
		rc.Train.Steps = steps
	}
	if err := rc.validate(); err != nil {
		return err
	}
	_, err = train(rc, ck, false, stdout, stderr)
	return err
}

const checkpointFile = "checkpoint.bin"

// interruptAtStep lets tests deliver a simulated SIGINT after a given step
// (0: never).
var interruptAtStep int

// train runs one configured training into its folder, from scratch or from
// a checkpoint, and returns its summary.
func train(rc runConfig, ck *checkpoints.Checkpoint, force bool, stdout, stderr io.Writer) (s summary, err error) {
	start := time.Now()
	var before float64 // wall seconds spent before a resume
	if ck != nil {
		before = ck.Meta["wall_seconds"]
	}
	wall := func() float64 { return before + time.Since(start).Seconds() }
	g, err := tasks.New(rc.Graph)
	if err != nil {
		return summary{}, usagef("run: %v", err)
	}
	var teacher []float64
	if rc.Train.Trainer == "distill" {
		if teacher, err = loadTeacher(rc.Teacher, g); err != nil {
			return summary{}, err
		}
	}
	var init []float64
	if rc.Init != "" {
		var probs []float64
		if _, probs, err = bigramFromRun(rc.Init, g); err != nil {
			return summary{}, usagef("run: -init %s: %v", rc.Init, err)
		}
		init = logitsOf(probs)
	}
	var tr *trainers.Trainer
	if rc.Model == "transformer" {
		tr, err = trainers.NewTransformer(rc.Train, *rc.Transformer, g, init, teacher)
	} else {
		tr, err = trainers.New(rc.Train, g, init, teacher)
	}
	if err != nil {
		return summary{}, usagef("run: %v", err) // the configuration cannot be trained
	}
	defer tr.Close()
	cfgJSON, _ := json.MarshalIndent(rc, "", "  ")
	if ck != nil {
		if err := restore(tr, ck, cfgJSON); err != nil {
			return summary{}, err
		}
	}
	out, err := openRunDir(rc.Out, cfgJSON, ck, force, rc.Train.Trainer == "reinforce" || rc.Train.Trainer == "ppo")
	if err != nil {
		return summary{}, err
	}
	defer out.close()
	out.wall = wall
	if err := writeVocab(rc.Out, g); err != nil {
		return summary{}, err
	}
	save := func() error {
		st, err := tr.State()
		if err != nil {
			return err
		}
		return saveCheckpoint(filepath.Join(rc.Out, checkpointFile), cfgJSON, st, wall())
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var got os.Signal
	go func() {
		select {
		case got = <-sigs:
			stop()
		case <-ctx.Done():
		}
	}()

	prog := newProgress(stdout, rc.Train.Steps, tr.Steps())
	last, err := tr.Run(ctx, trainers.Hooks{
		Row: func(r trainers.Row) error {
			prog.update(r)
			return out.write(r)
		},
		Step: func(step int) error {
			if step == interruptAtStep { // tests: a signal arriving after this step
				got = syscall.SIGINT
				stop()
			}
			if rc.CheckpointEvery > 0 && step%rc.CheckpointEvery == 0 {
				return save()
			}
			return nil
		},
	})
	prog.finish()
	if errors.Is(err, context.Canceled) && got != nil {
		if err := save(); err != nil {
			return summary{}, err
		}
		return summary{}, interrupted{sig: got.(syscall.Signal), step: tr.Steps(), dir: rc.Out}
	}
	stalled := errors.Is(err, trainers.ErrStalled)
	if err != nil && !stalled {
		return summary{}, err
	}
	if err := save(); err != nil {
		return summary{}, err
	}
	sum := summary{
		Stalled: stalled, Model: rc.Model, Trainer: rc.Train.Trainer, Graph: g.Config.Name(),
		InitialHittingTime: finite(out.initialHitting), FinalHittingTime: finite(last.HittingTime),
		LimitHittingTime: finite(tr.Limit()), Steps: tr.Steps(), WallSeconds: wall(), Theory: eval.Predict(g),
		Converged: tr.Converged(last),
	}
	if rc.Train.Trainer == "pretrain" {
		sum.LimitHittingTime = nil
		sum.InvalidMass, sum.BoundRatio = finite(last.InvalidMass), finite(out.maxColumn("bound_ratio"))
	} else if rc.Model == "transformer" {
		sum.FinalCI95, sum.FinalSuccessRate = finite(last.HittingTimeCI95), &last.MCSuccessRate
		att, err := tr.Attention(200, rc.Train.Seed)
		if err != nil {
			return summary{}, err
		}
		sum.Attention = &att
	} else {
		sum.FinalABCD = &[4]float64{last.A, last.B, last.C, last.D}
	}
	if err := out.finish(sum); err != nil {
		return summary{}, err
	}
	printSummary(stdout, rc, sum)
	if stalled {
		return sum, fmt.Errorf("run stopped at step %d: %w", tr.Steps(), err)
	}
	return sum, nil
}
