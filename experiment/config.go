package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// Config is everything a training run needs: what config.json records
// (the fields that apply to the run: MarshalJSON) and what every
// checkpoint embeds. A user's configuration (a config file, flags, a
// sweep's run) becomes one through Given.Resolve; Go callers start from
// Defaults (and set Train.Hindsight false with Transformer.Prompt, which
// Given.Resolve does for a prompt given without hindsight).
type Config struct {
	Graph tasks.Config   `json:"graph"`
	Model trainers.Model `json:"model"` // bigram or transformer
	// Transformer configures the transformer model (nil for the bigram).
	Transformer *trainers.TransformerOptions `json:"transformer,omitempty"`
	// Init is a run folder whose bigram checkpoint is the starting policy
	// (e.g. an SFT-trained bigram); empty: the pretrained world model.
	Init  string          `json:"init,omitempty"`
	Train trainers.Config `json:"train"`
	// Teacher (distill) is "rlvr-limit" or a run folder whose checkpoint is
	// the teacher.
	Teacher string `json:"teacher,omitempty"`
	// CheckpointEvery writes a checkpoint every N steps (0: only at the end
	// and on interruption).
	CheckpointEvery int `json:"checkpoint_every"`
	// TensorBoard also writes the metrics rows as TensorBoard event files
	// (events.out.tfevents.*) in the run folder.
	TensorBoard bool `json:"tensorboard,omitempty"`
	// Out is the run folder (empty: runs/<Name()>).
	Out string `json:"out"`
}

// Defaults is the configuration of trainer k on model m with every
// default: the paper's graph (W=K=15, L=5), the trainer's defaults on the
// model (trainers.Defaults), the transformer's options
// (trainers.DefaultTransformerOptions) and a checkpoint every 100 steps.
func Defaults(m trainers.Model, k trainers.Kind) Config {
	c := Config{Graph: tasks.DefaultConfig(), Model: m, Train: trainers.Defaults(k, m), CheckpointEvery: 100}
	if m == trainers.TransformerModel {
		o := trainers.DefaultTransformerOptions(k)
		c.Transformer = &o
	}
	return c
}

// DefaultConfig is the paper's headline experiment (Figures 3-4): exact
// RLVR with sign descent at lr 0.01 on W=K=15, L=5 from the pretrained
// bigram.
func DefaultConfig() Config { return Defaults(trainers.BigramModel, trainers.RLVRExact) }

// Choice is what decides which of the configuration's fields apply to the
// run (trainers.Fields).
func (c Config) Choice() trainers.Choice {
	ch := trainers.Choice{Model: c.Model, Trainer: c.Train.Trainer, Optimizer: c.Train.Optim.Name, Baseline: c.Train.Baseline, LRDecay: c.Train.LRDecay}
	if c.Transformer != nil {
		ch.Init = c.Transformer.Init
	}
	return ch
}

// MarshalJSON writes the fields that apply to the run (trainers.Fields),
// in the struct's order: config.json and the checkpoints record nothing
// the run does not use.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // without this method
	data, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	ch := c.Choice()
	return dropKeys(data, "", func(path string) bool { return !trainers.Applies(path, ch) })
}

// pruned is c with every field that does not apply to the run zeroed, as
// config.json reads back.
func (c Config) pruned() (Config, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return c, err
	}
	var out Config
	return out, json.Unmarshal(data, &out)
}

// InputError marks an error caused by a run's input (its configuration, its
// folder, a checkpoint or teacher it names) rather than by training: the
// command reports it in one line and exits 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// inputf makes an InputError.
func inputf(format string, args ...any) error { return &InputError{fmt.Errorf(format, args...)} }

// ErrInUse is what taking a run folder's lock fails with (errors.Is) when
// another run holds it.
var ErrInUse = errors.New("run folder in use by another run")

// inUse is the lock's refusal: its message, and errors.Is(err, ErrInUse).
type inUse struct{ msg string }

func (e inUse) Error() string        { return e.msg }
func (e inUse) Is(target error) bool { return target == ErrInUse }

// IsInput reports whether err is (or wraps) an InputError.
func IsInput(err error) bool { return errors.As(err, new(*InputError)) }

// decodeOver reads one JSON object over c, strictly: an empty file, null, a
// non-object, unknown or duplicate keys, trailing data and type errors are
// refused with a message naming the field. A "graph" given replaces c's
// graph entirely (W, K, L or branches, not a mix with c's); the fields of
// a "transformer" given override c's options (the defaults when c has
// none).
func decodeOver(data []byte, c *Config) error {
	if err := checkObject(data); err != nil {
		return &InputError{err}
	}
	var keys struct {
		Graph       json.RawMessage `json:"graph"`
		Transformer json.RawMessage `json:"transformer"`
	}
	if err := json.Unmarshal(data, &keys); err == nil {
		if keys.Graph != nil {
			c.Graph = tasks.Config{}
		}
		if keys.Transformer != nil && c.Transformer == nil {
			o := trainers.DefaultTransformerOptions(c.Train.Trainer)
			c.Transformer = &o
		}
	}
	if err := CheckKeyCase(data, c); err != nil {
		return &InputError{err}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return &InputError{jsonError(err)}
	}
	if dec.More() {
		return inputf("more than one JSON object")
	}
	return nil
}

// Resolve checks a configuration built in Go (from Defaults) and names its
// run folder: the fields that do not apply to the run are dropped (they
// are never read), every other one is validated as it is, and an empty
// Out becomes runs/<Name()>. Errors are InputErrors naming the field and
// what is allowed. A user's configuration goes through Given.Resolve,
// which also refuses the fields that do not apply.
func (c Config) Resolve() (Config, error) {
	if c.Model == trainers.TransformerModel && c.Transformer == nil {
		return c, inputf("model transformer without its options (experiment.Defaults gives them)")
	}
	c, err := c.pruned()
	if err != nil {
		return c, &InputError{err}
	}
	if err := c.Graph.Validate(); err != nil {
		return c, inputf("%v", strings.TrimPrefix(err.Error(), "tasks: "))
	}
	if err := c.Train.Validate(c.Model); err != nil {
		return c, &InputError{err}
	}
	if err := c.Model.Check(c.Train, c.setup()); err != nil {
		return c, &InputError{err}
	}
	if c.CheckpointEvery < 0 {
		return c, inputf("checkpoint_every %d: want >= 0 (0: only at the end)", c.CheckpointEvery)
	}
	if c.Train.Trainer.UsesTeacher() && c.Teacher == "" {
		return c, inputf("distill needs a teacher (-teacher): rlvr-limit or a run folder with a checkpoint")
	}
	if c.Out == "" {
		c.Out = filepath.Join("runs", c.Name())
	}
	switch strings.ToLower(filepath.Ext(c.Out)) {
	case ".txt", ".json", ".csv", ".png", ".bin", ".md", ".log", ".npz":
		return c, inputf("out %s: a run folder, not a file (its name ends in %s)", c.Out, filepath.Ext(c.Out))
	}
	return c, nil
}

// setup is the trainers.Setup of the configuration, without the starting
// and teacher policies (loaded from their run folders by Run).
func (c Config) setup() trainers.Setup {
	s := trainers.Setup{Model: c.Model}
	if c.Transformer != nil {
		s.Transformer = *c.Transformer
	}
	return s
}

// Name names a run folder after its model, trainer, graph and seed.
func (c Config) Name() string {
	shape := fmt.Sprintf("W%dK%dL%d", c.Graph.W, c.Graph.K, c.Graph.L)
	if len(c.Graph.Branches) > 0 {
		shape = "branches-" + strings.NewReplacer(";", "_", ",", ".").Replace(tasks.FormatBranches(c.Graph.Branches))
	}
	name := string(c.Train.Trainer)
	if c.Model != trainers.BigramModel {
		name = string(c.Model) + "-" + name
		if c.Transformer != nil && c.Transformer.Prompt {
			name += "-prompt"
		}
	}
	if c.Train.TrainSource {
		name += "-source"
	}
	if c.Train.Hindsight {
		name += "-hindsight"
	}
	if c.Train.SupervisedBackward > 0 {
		name += fmt.Sprintf("-p%g", c.Train.SupervisedBackward)
	}
	if c.Train.Trainer.UsesTeacher() && c.Train.DistillTraces > 0 {
		name += fmt.Sprintf("-traces%d", c.Train.DistillTraces)
	}
	return fmt.Sprintf("%s-%s-seed%d", name, shape, c.Train.Seed)
}
