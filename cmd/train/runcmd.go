package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// runArgs is what train run's command line asks for.
type runArgs struct {
	cfg     experiment.Config  // resolved, unless resume is set
	resume  string             // a run folder to resume
	changes experiment.Changes // with resume: a new step cap, a new -until
	force   bool
}

// transformerFlags are the flags that configure -model transformer.
var transformerFlags = []string{"init-mode", "dim", "table-lr", "train-tokens", "table-tokens", "eval-tokens", "heads", "context", "positional", "prompt", "layer-norm", "stride", "windows", "eval-rollouts"}

// parseRun reads train run's flags over the defaults, or over a -config
// file, and resolves the configuration exactly as experiment.Run does.
func parseRun(args []string, stdout io.Writer) (runArgs, error) {
	rc := experiment.DefaultConfig()
	if path := findFlag(args, "config"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return runArgs{}, usagef("run: -config: %v", err)
		}
		if err := experiment.Decode(data, &rc); err != nil {
			return runArgs{}, usagef("run: -config %s: %v", path, err)
		}
		if err := rc.Graph.Validate(); err != nil {
			return runArgs{}, usagef("run: -config %s: graph: %v", path, strings.TrimPrefix(err.Error(), "tasks: "))
		}
	}
	fs := newFlagSet("run")
	var gf graphFlags
	tf := trainers.DefaultTransformerOptions()
	if rc.Transformer != nil {
		tf = *rc.Transformer
	}
	var a runArgs
	registerRun(fs, &rc, &gf, &tf, &a)
	if err := parse(fs, args, stdout); err != nil {
		return a, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["resume"] {
		if a.resume == "" {
			return a, usagef("run: -resume \"\": want a run folder")
		}
		other := ""
		fs.Visit(func(f *flag.Flag) { // lexical order: the message is deterministic
			if other == "" && f.Name != "resume" && f.Name != "steps" && f.Name != "until" {
				other = f.Name
			}
		})
		if other != "" {
			return a, usagef("run: -resume takes only -steps (a new step cap) and -until, not -%s: the run continues with the configuration in its checkpoint", other)
		}
		if set["steps"] {
			a.changes.Steps = rc.Train.Steps
		}
		if set["until"] {
			until := rc.Train.Until
			a.changes.Until = &until
		}
		return a, nil
	}
	g, err := gf.config(fs)
	if err != nil {
		return a, err
	}
	rc.Graph = g
	if rc.Model == trainers.TransformerModel {
		if set["init-mode"] && tf.Init == "identity" && !set["dim"] {
			tf.Dim = 0 // identity's width is the vocabulary: -dim's default 64 is table's
		}
		rc.Transformer = &tf
	} else {
		for _, name := range transformerFlags {
			if set[name] {
				return a, usagef("run: -%s configures the transformer: add -model transformer", name)
			}
		}
	}
	if a.cfg, err = rc.Resolve(); err != nil {
		return a, usagef("run: %v", err)
	}
	return a, nil
}

// registerRun registers the flags of train run on fs with rc's values as
// defaults, so flags the user sets override a -config file read into rc.
func registerRun(fs *flag.FlagSet, rc *experiment.Config, gf *graphFlags, tf *trainers.TransformerOptions, a *runArgs) {
	gf.register(fs, rc.Graph)
	fs.String("config", "", "read the run configuration from this JSON file (same fields as config.json); flags override it")
	fs.StringVar(&a.resume, "resume", "", "resume the run in this folder from its checkpoint (the configuration embedded in the checkpoint is used)")
	fs.BoolVar(&a.force, "force", false, "replace a run folder that holds another run")
	fs.StringVar((*string)(&rc.Model), "model", string(rc.Model), "model: bigram or transformer (initialised to the starting bigram; trainers sft, distill, reinforce, ppo)")
	fs.StringVar(&rc.Init, "init", rc.Init, "start from the bigram checkpointed in this run folder (e.g. an sft run) instead of the pretrained world model")
	fs.StringVar(&tf.Init, "init-mode", tf.Init, "transformer: exact initialisation: table (a per-transition logit table beside a zero unembedding, any width) or identity (the paper's: width = vocabulary)")
	fs.IntVar(&tf.Dim, "dim", tf.Dim, "transformer: width with -init-mode table (a multiple of -heads)")
	fs.Float64Var(&tf.TableLR, "table-lr", tf.TableLR, "transformer: learning rate of the logit table (default: 0.025 for ppo, the bigram's rate for reinforce, -lr otherwise)")
	fs.IntVar(&tf.TrainTokens, "train-tokens", tf.TrainTokens, "transformer: trained positions per update; larger batches train on an unbiased random subset of windows (0: all)")
	fs.IntVar(&tf.TableTokens, "table-tokens", tf.TableTokens, "transformer: tokens per update of the logit table's own pass (sampled RLVR, -init-mode table); larger batches use an unbiased random subset (0: all)")
	fs.IntVar(&tf.Heads, "heads", tf.Heads, "transformer: attention heads")
	fs.IntVar(&tf.Context, "context", tf.Context, "transformer: attention window in tokens")
	fs.StringVar(&tf.Positional, "positional", tf.Positional, "transformer: learned or none")
	fs.BoolVar(&tf.Prompt, "prompt", tf.Prompt, "transformer: put the target's token before s0 -> f, visible to every position")
	fs.BoolVar(&tf.LayerNorm, "layer-norm", tf.LayerNorm, "transformer: layer norm before the unembedding (the initialisation stays exact)")
	fs.IntVar(&tf.Stride, "stride", tf.Stride, "transformer: trained positions per training window")
	fs.IntVar(&tf.Windows, "windows", tf.Windows, "transformer: windows per fill of the graph")
	fs.IntVar(&tf.EvalRollouts, "eval-rollouts", tf.EvalRollouts, "transformer: Monte Carlo rollouts behind each metrics row's hitting time")
	fs.IntVar(&tf.EvalTokens, "eval-tokens", tf.EvalTokens, "transformer: sampled tokens a metrics row's Monte Carlo may take (fewer rollouts while the hitting time is long; 0: no bound)")
	t := &rc.Train
	fs.Var(&t.Trainer, "trainer", "trainer: "+trainers.KindNames(trainers.Kinds))
	fs.StringVar(&t.Optim.Name, "optimizer", t.Optim.Name, "optimizer: sign (the paper's), sgd or adam (default: the trainer's and model's, see the manual)")
	fs.Float64Var(&t.Optim.LR, "lr", t.Optim.LR, "learning rate (default: the trainer's and model's, see the manual)")
	fs.IntVar(&t.Steps, "steps", t.Steps, "step cap")
	fs.StringVar(&t.LRDecay, "lr-decay", t.LRDecay, `learning-rate schedule over the steps: "" (constant) or linear`)
	fs.Float64Var(&t.Until, "until", t.Until, "stop within this relative distance of the limit hitting time (0: run all steps)")
	fs.Uint64Var(&t.Seed, "seed", t.Seed, "seed of every random choice")
	fs.IntVar(&t.MaxTokens, "max-tokens", t.MaxTokens, "sampled trainers: stop once this many tokens have been sampled (0: no cap)")
	fs.IntVar(&t.Patience, "patience", t.Patience, "rlvr-exact: stop when the hitting time has not improved for N steps (0: never)")
	fs.IntVar(&t.LogEvery, "log-every", t.LogEvery, "metrics row every N steps")
	fs.Float64Var(&t.SupervisedBackward, "supervised-backward", t.SupervisedBackward, "sft: fraction of backward states also supervised (Appendix F)")
	fs.IntVar(&t.DistillTraces, "distill-traces", t.DistillTraces, "distill: sampled teacher traces (0: exact teacher distribution)")
	fs.BoolVar(&t.TrainSource, "train-source", t.TrainSource, "train the source row s0 -> f (default: it stays uniform like the fork-incoming rows)")
	fs.IntVar(&t.Rollouts, "rollouts", t.Rollouts, "sampled trainers: rollouts per step (default: the model's, see the manual)")
	fs.Float64Var(&t.Beta, "beta", t.Beta, "sampled trainers: length penalty beta in the reward 1{hit} - beta |y|")
	fs.Float64Var(&t.HorizonFactor, "horizon-factor", t.HorizonFactor, "sampled trainers: rollout horizon as a multiple of the current hitting time (default: the model's, see the manual)")
	fs.IntVar(&t.Epochs, "epochs", t.Epochs, "ppo, grpo, rloo, dr-grpo: passes over each batch")
	fs.IntVar(&t.Minibatches, "minibatches", t.Minibatches, "ppo, grpo, rloo, dr-grpo: minibatches per pass")
	fs.Float64Var(&t.Clip, "clip", t.Clip, "ppo, grpo, rloo, dr-grpo: ratio clip epsilon")
	fs.Float64Var(&t.KLCoef, "kl-coef", t.KLCoef, "ppo: KL penalty to the starting policy; grpo, rloo, dr-grpo: its k3 estimate on the sampled tokens")
	fs.Float64Var(&t.EntropyCoef, "entropy-coef", t.EntropyCoef, "ppo: entropy bonus")
	fs.StringVar(&t.Baseline, "baseline", t.Baseline, "reinforce, ppo: gae, state-target, fork, state or batch (default: the model's, see the manual); grpo, rloo, dr-grpo: group")
	fs.IntVar(&t.GroupSize, "group-size", t.GroupSize, "grpo, rloo, dr-grpo: rollouts per group, one target each (default 8; divides -rollouts)")
	fs.StringVar(&t.LossAgg, "loss-agg", t.LossAgg, "grpo, rloo, dr-grpo: token, sequence or constant aggregation of the per-token loss (default: token; constant for dr-grpo)")
	fs.Float64Var(&t.Lambda, "lambda", t.Lambda, "reinforce, ppo with -baseline gae: GAE lambda")
	fs.Float64Var(&t.CriticRate, "critic-rate", t.CriticRate, "reinforce, ppo with -baseline gae: rate at which the critic follows each batch's returns")
	fs.BoolVar(&t.NormalizeAdvantages, "normalize-advantages", t.NormalizeAdvantages, "reinforce, ppo: divide advantages by their standard deviation")
	fs.StringVar(&rc.Teacher, "teacher", rc.Teacher, "distill: rlvr-limit or a run folder whose checkpoint is the teacher")
	fs.IntVar(&rc.CheckpointEvery, "checkpoint-every", rc.CheckpointEvery, "checkpoint every N steps (0: at the end and on interruption only)")
	fs.BoolVar(&rc.TensorBoard, "tensorboard", rc.TensorBoard, "also write the metrics as TensorBoard event files (events.out.tfevents.*) in the run folder")
	fs.StringVar(&rc.Out, "out", rc.Out, "run folder (default runs/<trainer>-<graph>-seed<seed>); a folder holding another run is refused unless -force")
}

// findFlag returns the value of -name in args without parsing the rest.
func findFlag(args []string, name string) string {
	for i, a := range args {
		for _, p := range []string{"-" + name, "--" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
		}
	}
	return ""
}

func runRun(args []string, stdout, stderr io.Writer) error {
	a, err := parseRun(args, stdout)
	if err != nil {
		return err
	}
	if a.resume != "" {
		return execute(stdout, stderr, func(ctx context.Context, o experiment.Options) (experiment.Summary, error) {
			s, err := experiment.Resume(ctx, a.resume, a.changes, o)
			if experiment.IsInput(err) {
				return s, usagef("run: -resume %s: %v", a.resume, err)
			}
			return s, err
		})
	}
	return execute(stdout, stderr, func(ctx context.Context, o experiment.Options) (experiment.Summary, error) {
		o.Force = a.force
		return experiment.Run(ctx, a.cfg, o)
	})
}

// runDefault runs the paper's headline experiment (Figures 3-4) into
// runs/fig3-4.
func runDefault(stdout, stderr io.Writer) error {
	rc := experiment.DefaultConfig()
	rc.Out = filepath.Join("runs", "fig3-4")
	return execute(stdout, stderr, func(ctx context.Context, o experiment.Options) (experiment.Summary, error) {
		return experiment.Run(ctx, rc, o)
	})
}

// interruptAtStep lets tests deliver a simulated SIGINT after a given step
// (0: never).
var interruptAtStep int

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
// closing table printed.
func execute(stdout, stderr io.Writer, train func(context.Context, experiment.Options) (experiment.Summary, error)) error {
	sig := catchSignals()
	defer sig.stop()
	prog := newProgress(stdout)
	s, err := train(sig.ctx, experiment.Options{Started: prog.start, Progress: prog.update, Warn: warner(stderr), AfterStep: func(step int) {
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
	case s.NothingToDo:
		fmt.Fprintf(stdout, "%s already holds this run, finished: nothing to do (-force in a new run starts over; -resume %s -steps N or -until X continues it)\n", s.Out, s.Out)
	case s.Resumed:
		fmt.Fprintf(stdout, "resumed the unfinished run in %s from its checkpoint (same configuration; -force starts over)\n", s.Out)
	}
	if s.Out != "" {
		printSummary(stdout, s)
	}
	return err
}
