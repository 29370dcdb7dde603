package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// Options are how a run is carried out, not what it trains.
type Options struct {
	// Force replaces a run folder that holds another run.
	Force bool
	// Started is called once the run is set up, before its first
	// measurement, with its resolved configuration, the step it starts
	// from and the hitting time it converges to (the -until rule's
	// reference; 0: none) (nil: none).
	Started func(cfg Config, step int, limit float64)
	// Progress is called with every metrics row (nil: none).
	Progress func(trainers.Row)
	// AfterStep is called after each optimiser step with the steps taken
	// (nil: none); tests use it to cancel a run at a given step.
	AfterStep func(steps int)
	// Warn is told, in one line, what a resume repaired in the run folder
	// (a metrics log rebuilt from the other; checkLogs). Nil: such a resume
	// is refused instead.
	Warn func(msg string)
}

// Interrupted reports a run stopped by the cancellation of its context
// after its checkpoint was written; it wraps the context's error.
type Interrupted struct {
	Step int
	Dir  string
	Err  error
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("interrupted at step %d; checkpoint written; resume with: train run -resume %s", e.Step, e.Dir)
}
func (e *Interrupted) Unwrap() error { return e.Err }

// Run trains the configuration into its run folder (cfg.Out) and returns
// its summary. The configuration is resolved first (Config.Resolve), and
// the folder locked: one writer per run folder. A folder that already
// holds this configuration is not restarted: a finished run is returned as
// it is (Summary.NothingToDo), an unfinished one is resumed from its
// checkpoint (Summary.Resumed). A folder whose run differs only in the
// stop rules a resume may change (its steps and until, changed by train
// run -resume) is resumed with this configuration's (Changes), so that it
// is returned as it is when it meets them. opts.Force starts over instead.
// A canceled ctx stops the run after its current step with a checkpoint
// and an *Interrupted error; a stalled run writes everything and returns
// its summary with an error wrapping trainers.ErrStalled.
func Run(ctx context.Context, cfg Config, opts Options) (Summary, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return Summary{}, err
	}
	unlock, err := lockFolder(cfg.Out)
	if err != nil {
		return Summary{}, err
	}
	defer unlock()
	if !opts.Force {
		cfgJSON, _ := json.MarshalIndent(cfg, "", "  ")
		old, err := os.ReadFile(filepath.Join(cfg.Out, ConfigFile))
		_, noCheckpoint := os.Stat(filepath.Join(cfg.Out, CheckpointFile))
		switch {
		case err != nil:
		case sameRun(old, cfgJSON):
			if s, err := readSummary(cfg.Out, cfg); err == nil {
				s.NothingToDo = true
				return s, nil
			}
			if noCheckpoint == nil {
				s, err := resume(ctx, cfg.Out, Changes{}, opts)
				s.Resumed = true
				return s, err
			}
		case noCheckpoint == nil && sameRun(withoutStops(old), withoutStops(cfgJSON)):
			var was Config
			json.Unmarshal(old, &was)
			until := cfg.Train.Until
			s, err := resume(ctx, cfg.Out, Changes{Steps: cfg.Train.Steps, Until: &until}, opts)
			if errors.As(err, new(pastSteps)) {
				return s, inputf("-out %s holds this run continued by a resume past -steps %d (its config.json says steps %d, until %g): continue it with train run -resume %s, or -force to start over",
					cfg.Out, cfg.Train.Steps, was.Train.Steps, was.Train.Until, cfg.Out)
			}
			s.Resumed = !s.NothingToDo
			return s, err
		}
	}
	return train(ctx, cfg, nil, opts)
}

// sameRun reports whether two config.json texts hold the same run: the
// same fields that apply to it (one written before config.json left out
// the others holds them too), whatever the layout. Out is left aside: both
// texts are of the folder at hand, whichever spelling names it (-out
// ./orig, orig/ or its absolute path) and wherever it was copied, while
// its config.json records the spelling that trained it.
func sameRun(a, b []byte) bool {
	var ca, cb Config
	if json.Unmarshal(a, &ca) != nil || json.Unmarshal(b, &cb) != nil {
		return false
	}
	ca.Out, cb.Out = "", ""
	ja, err1 := json.Marshal(ca)
	jb, err2 := json.Marshal(cb)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// withoutStops is a config.json text with the stop rules a resume may
// change (Changes) cleared.
func withoutStops(data []byte) []byte {
	var c Config
	if json.Unmarshal(data, &c) != nil {
		return data
	}
	c.Train.Steps, c.Train.Until = 0, 0
	out, _ := json.Marshal(c)
	return out
}

// Changes are what resuming a run may change.
type Changes struct {
	Steps int      // > 0: a new step cap (at least the checkpoint's step)
	Until *float64 // non-nil: a new stop distance (trainers.Config.Until)
}

// Resume continues the run in dir from its checkpoint, with its embedded
// configuration and the given changes. A run that has nothing left to do
// (finished, and its stop rule or step cap already met) is left as it is
// and returned with Summary.NothingToDo. A config.json that differs from
// the checkpoint's configuration (edited by hand) is refused: the run
// continues with the checkpoint's.
func Resume(ctx context.Context, dir string, ch Changes, opts Options) (Summary, error) {
	unlock, err := lockFolder(dir)
	if err != nil {
		return Summary{}, err
	}
	defer unlock()
	return resume(ctx, dir, ch, opts)
}

// resume is Resume with the folder locked.
func resume(ctx context.Context, dir string, ch Changes, opts Options) (Summary, error) {
	ck, err := checkpoints.Load(filepath.Join(dir, CheckpointFile))
	if err != nil {
		return Summary{}, &InputError{err}
	}
	var cfg Config
	if err := json.Unmarshal(ck.Config, &cfg); err != nil {
		return Summary{}, inputf("checkpoint config: %v", err)
	}
	if onDisk, err := os.ReadFile(filepath.Join(dir, ConfigFile)); err == nil && !sameRun(onDisk, ck.Config) {
		return Summary{}, inputf("%s differs from the configuration in the checkpoint (edited by hand, or a checkpoint copied from another run?): a resumed run keeps the checkpoint's; restore %s or the run's own %s, or start a new run with -config", filepath.Join(dir, ConfigFile), ConfigFile, CheckpointFile)
	}
	cfg.Out = dir
	if ch.Steps > 0 {
		if ch.Steps < ck.Step {
			return Summary{}, &InputError{pastSteps{ch.Steps, ck.Step, dir}}
		}
		if cfg.Train.LRDecay == "linear" && ch.Steps != cfg.Train.Steps {
			return Summary{}, inputf("-steps %d: the run in %s has -lr-decay linear, which takes its rate to 0 at its step cap, %d: a resume cannot change -steps (a new run with -steps %d: another -out, or -force)",
				ch.Steps, dir, cfg.Train.Steps, ch.Steps)
		}
		cfg.Train.Steps = ch.Steps
	}
	if ch.Until != nil {
		cfg.Train.Until = *ch.Until
	}
	if cfg, err = cfg.Resolve(); err != nil {
		return Summary{}, err
	}
	if s, err := readSummary(dir, cfg); err == nil && ch.Steps == 0 && ch.Until == nil {
		s.NothingToDo = true // finished, and nothing asked to change
		return s, nil
	}
	return train(ctx, cfg, ck, opts)
}

// pastSteps refuses a resume's step cap below its checkpoint's step.
type pastSteps struct {
	steps, at int
	dir       string
}

func (e pastSteps) Error() string {
	return fmt.Sprintf("steps %d: the checkpoint in %s is already at step %d", e.steps, e.dir, e.at)
}

// readSummary reads a finished run's summary.json, of the run cfg.
func readSummary(dir string, cfg Config) (Summary, error) {
	var s Summary
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %v", SummaryFile, err)
	}
	s.Out, s.Hindsight = dir, cfg.Train.Hindsight
	return s, nil
}

// train runs one resolved configuration into its folder, from scratch or
// from a checkpoint.
func train(ctx context.Context, cfg Config, ck *checkpoints.Checkpoint, opts Options) (Summary, error) {
	start := time.Now()
	var before float64 // wall seconds spent before a resume
	var codes []string // the code that trained the run before
	if ck != nil {
		before, codes = ck.WallSeconds, ck.Code
	}
	codes = withCode(codes, Code())
	wall := func() float64 { return before + time.Since(start).Seconds() }
	g, err := tasks.New(cfg.Graph)
	if err != nil {
		return Summary{}, &InputError{err}
	}
	tr, setup, err := newTrainer(cfg, g, ck)
	if err != nil {
		return Summary{}, err
	}
	defer tr.Close()
	cfgJSON, _ := json.MarshalIndent(cfg, "", "  ")
	resumeStep := -1
	if ck != nil {
		if err := tr.Restore(ck); err != nil {
			return Summary{}, &InputError{fmt.Errorf("checkpoint: %w", err)}
		}
		resumeStep = ck.Step
		if err := checkVocab(cfg.Out, tr.Vocab()); err != nil {
			return Summary{}, err
		}
		// A finished run whose stop rule or step cap is already met has
		// nothing to do: it is left as it is.
		if s, err := readSummary(cfg.Out, cfg); err == nil {
			if done, err := tr.Done(ctx); err != nil {
				return Summary{}, err
			} else if done {
				s.NothingToDo = true
				return s, nil
			}
		}
		if err := checkLogs(cfg.Out, ck.Step, cfg.Train.LogEvery, opts.Warn); err != nil {
			return Summary{}, err
		}
	}
	out, err := openFolder(cfg.Out, cfgJSON, resumeStep, opts.Force, appliesTo(cfg.Train), cfg.TensorBoard)
	if err != nil {
		return Summary{}, err
	}
	defer out.close()
	out.wall = wall
	if err := writeVocab(cfg.Out, tr.Vocab()); err != nil {
		return Summary{}, err
	}
	if opts.Started != nil {
		opts.Started(cfg, tr.Steps(), tr.Limit())
	}
	saved := resumeStep // the step of the checkpoint in the folder (-1: none)
	write := func(ck *checkpoints.Checkpoint) error {
		ck.WallSeconds, ck.Code = wall(), codes
		if err := checkpoints.Save(filepath.Join(cfg.Out, CheckpointFile), ck); err != nil {
			return err
		}
		saved = ck.Step
		return nil
	}
	save := func() error {
		ck, err := tr.Checkpoint(cfgJSON)
		if err != nil {
			return err
		}
		ck.Tensors = append(ck.Tensors, setup...)
		return write(ck)
	}
	// A new run keeps its starting state, to write it as its last good
	// checkpoint if a quantity turns NaN or infinite before its first
	// checkpoint (trainers.NonFinite).
	var first *checkpoints.Checkpoint
	if ck == nil {
		if first, err = tr.Checkpoint(cfgJSON); err != nil {
			return Summary{}, err
		}
		first.Tensors = append(first.Tensors, setup...)
	}
	last, err := tr.Run(ctx, trainers.Hooks{
		Row: func(r trainers.Row) error {
			if opts.Progress != nil {
				opts.Progress(r)
			}
			return out.write(r)
		},
		Step: func(step int) error {
			if opts.AfterStep != nil {
				opts.AfterStep(step)
			}
			if cfg.CheckpointEvery > 0 && step%cfg.CheckpointEvery == 0 {
				return save()
			}
			return nil
		},
	})
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		if err := save(); err != nil {
			return Summary{}, err
		}
		return Summary{}, &Interrupted{Step: tr.Steps(), Dir: cfg.Out, Err: err}
	}
	if nf := new(trainers.NonFinite); errors.As(err, &nf) {
		return Summary{}, keepGood(err, saved, first, write, cfg.Out)
	}
	stalled := errors.Is(err, trainers.ErrStalled)
	if err != nil && !stalled {
		return Summary{}, err
	}
	if err := save(); err != nil {
		return Summary{}, err
	}
	// The checkpoint holds the whole run from here: a signal during the
	// final measurement or the summary leaves them to a resume.
	final, err := tr.Final(ctx)
	if ctx.Err() != nil {
		return Summary{}, &Interrupted{Step: tr.Steps(), Dir: cfg.Out, Err: ctx.Err()}
	}
	if err != nil {
		return Summary{}, err
	}
	sum, err := summarize(cfg, tr, g, last, final, out, wall())
	sum.Stalled, sum.Code = stalled, codes
	if err != nil {
		return Summary{}, err
	}
	if ctx.Err() != nil { // before the figures and summary.json: after them the run is finished
		return Summary{}, &Interrupted{Step: tr.Steps(), Dir: cfg.Out, Err: ctx.Err()}
	}
	if err := out.finish(sum); err != nil {
		return Summary{}, err
	}
	if stalled {
		return sum, fmt.Errorf("run stopped at step %d: %w", tr.Steps(), err)
	}
	return sum, nil
}

// keepGood is a run's error when a quantity turned NaN or infinite
// (trainers.NonFinite): the checkpoint in the folder, written at step
// saved before it did, stays; with none yet (-1), the run's starting state
// first is written as it.
func keepGood(err error, saved int, first *checkpoints.Checkpoint, write func(*checkpoints.Checkpoint) error, dir string) error {
	if saved < 0 && first != nil {
		if werr := write(first); werr != nil {
			return fmt.Errorf("%w; writing the starting state as the last good checkpoint: %v", err, werr)
		}
		saved = first.Step
	}
	if saved < 0 {
		return err
	}
	return fmt.Errorf("%w; training stopped, the last good checkpoint (step %d) stays in %s", err, saved, dir)
}

// The tensors a run's checkpoint holds beside the trainer's: the logits of
// its starting bigram (-init) and its teacher's transition table
// (-teacher), as the run read them at its start.
const (
	initTensor    = trainers.SetupPrefix + "init"
	teacherTensor = trainers.SetupPrefix + "teacher"
)

// newTrainer builds the trainer of a resolved configuration on graph g,
// reading the distillation teacher and the starting bigram (-init) from
// their run folders, or, from a checkpoint ck that holds them, as the run
// read them at its start: a resumed run keeps its reference policy and
// teacher whatever became of their folders. It returns them as the tensors
// every checkpoint of the run holds.
func newTrainer(cfg Config, g *tasks.Graph, ck *checkpoints.Checkpoint) (*trainers.Trainer, []checkpoints.Tensor, error) {
	s := cfg.setup()
	var setup []checkpoints.Tensor
	var err error
	if cfg.Train.Trainer.UsesTeacher() {
		if s.Teacher, err = setupTensor(ck, teacherTensor, len(g.Next)); err != nil {
			return nil, nil, err
		}
		if s.Teacher == nil {
			if s.Teacher, err = loadTeacher(cfg.Teacher, g); err != nil {
				return nil, nil, err
			}
		}
		setup = append(setup, checkpoints.Tensor{Name: teacherTensor, Data: s.Teacher})
	}
	if cfg.Init != "" {
		if s.Init, err = setupTensor(ck, initTensor, len(g.Next)); err != nil {
			return nil, nil, err
		}
		if s.Init == nil {
			b, err := LoadBigram(cfg.Init, g)
			if err != nil {
				return nil, nil, inputf("init (-init) %s: %v", cfg.Init, err)
			}
			s.Init = logitsOf(b.Probs)
		}
		setup = append(setup, checkpoints.Tensor{Name: initTensor, Data: s.Init})
	}
	tr, err := trainers.New(cfg.Train, g, s)
	if err != nil {
		return nil, nil, &InputError{err} // the configuration cannot be trained
	}
	return tr, setup, nil
}

// setupTensor is the tensor name of checkpoint ck (nil: none, or a
// checkpoint written before runs kept it), of n values.
func setupTensor(ck *checkpoints.Checkpoint, name string, n int) ([]float64, error) {
	if ck == nil || !slices.ContainsFunc(ck.Tensors, func(t checkpoints.Tensor) bool { return t.Name == name }) {
		return nil, nil
	}
	d, err := ck.Tensor(name, n)
	if err != nil {
		return nil, inputf("checkpoint: %v", err)
	}
	return append([]float64(nil), d...), nil
}

// summarize builds summary.json from the last row and the final
// measurement.
func summarize(cfg Config, tr *trainers.Trainer, g *tasks.Graph, last trainers.Row, final trainers.Final, out *folder, wall float64) (Summary, error) {
	bestStep, best, bestCI := tr.Best()
	sum := Summary{
		Model: cfg.Model, Trainer: cfg.Train.Trainer, Graph: g.Config.Name(), Out: cfg.Out, Hindsight: cfg.Train.Hindsight,
		InitialHittingTime: finite(out.initialHitting), FinalHittingTime: finite(final.HittingTime), FinalStep: final.Step,
		BestHittingTime: finite(best), BestStep: bestStep,
		LimitHittingTime: finite(tr.Limit()), Steps: tr.Steps(), WallSeconds: wall, Theory: tr.Predictions(),
		Converged: tr.Converged(last), StopReason: tr.Stop(), SampledTokens: last.Tokens, TrainedTokens: last.TrainedTokens,
	}
	switch {
	case cfg.Train.Trainer.Dense():
		sum.LimitHittingTime = nil
		sum.InvalidMass, sum.BoundRatio = finite(last.InvalidMass), finite(last.MaxBoundRatio)
	case final.Estimated:
		sum.FinalCI95, sum.FinalSuccessRate, sum.FinalRollouts = finite(final.CI95), &final.SuccessRate, final.Rollouts
		sum.StopHittingTime, sum.StopCI95, sum.BestCI95 = finite(last.HittingTime), finite(last.HittingTimeCI95), finite(bestCI)
		sum.BestSource = tr.BestSource()
	default:
		sum.FinalABCD = &[4]*float64{finite(last.A), finite(last.B), finite(last.C), finite(last.D)}
		c := last.Copies
		sum.FinalABCDPerCopy = &[4]*float64{finite(c.A), finite(c.B), finite(c.C), finite(c.D)}
	}
	att, err := tr.Attention(200, cfg.Train.Seed)
	switch {
	case err == nil:
		sum.Attention = &att
	case !errors.Is(err, trainers.ErrNoAttention):
		return sum, err
	}
	return sum, nil
}
