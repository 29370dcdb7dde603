package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// runConfig is everything a training run needs; it is what -config reads,
// what config.json holds and what every checkpoint embeds.
type runConfig struct {
	Graph tasks.Config `json:"graph"`
	Model string       `json:"model"` // bigram or transformer
	// Transformer configures -model transformer (defaults filled in).
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
	CheckpointEvery int    `json:"checkpoint_every"`
	Out             string `json:"out"`
}

// defaultRunConfig is the paper's headline experiment (Figures 3-4).
func defaultRunConfig() runConfig {
	return runConfig{Graph: tasks.DefaultConfig(), Model: "bigram", Train: trainers.DefaultConfig(), CheckpointEvery: 100}
}

func (rc *runConfig) validate() error {
	if err := rc.Graph.Validate(); err != nil {
		return usagef("run: %v", strings.TrimPrefix(err.Error(), "tasks: "))
	}
	if err := rc.Train.Validate(); err != nil {
		return usagef("run: %v", err)
	}
	switch rc.Model {
	case "bigram":
		if rc.Transformer != nil {
			return usagef("run: transformer options given for model bigram: use -model transformer")
		}
	case "transformer":
		if rc.Transformer == nil {
			o := trainers.DefaultTransformerOptions()
			rc.Transformer = &o
		}
		if err := rc.Transformer.Validate(); err != nil {
			return usagef("run: %v", err)
		}
		if !slices.Contains(trainers.TransformerTrainers, rc.Train.Trainer) {
			return usagef("run: model transformer trains with %s, not %s (the exact trainers need a Markov policy; the transformer starts from a bigram)",
				strings.Join(trainers.TransformerTrainers, ", "), rc.Train.Trainer)
		}
	default:
		return usagef("run: model %q: want bigram or transformer", rc.Model)
	}
	if rc.Init != "" && rc.Train.Trainer == "pretrain" {
		return usagef("run: -init %s: pretraining starts from zero logits", rc.Init)
	}
	if rc.CheckpointEvery < 0 {
		return usagef("run: checkpoint_every %d: want >= 0 (0: only at the end)", rc.CheckpointEvery)
	}
	if rc.Train.Trainer == "distill" && rc.Teacher == "" {
		return usagef("run: distill needs -teacher: rlvr-limit or a run folder with a checkpoint")
	}
	if rc.Train.Trainer != "distill" && rc.Teacher != "" {
		return usagef("run: -teacher %q: only the distill trainer has a teacher", rc.Teacher)
	}
	if rc.Out == "" {
		rc.Out = filepath.Join("runs", defaultName(*rc))
	}
	return nil
}

// defaultName names a run folder after its trainer, graph and seed.
func defaultName(rc runConfig) string {
	shape := fmt.Sprintf("W%dK%dL%d", rc.Graph.W, rc.Graph.K, rc.Graph.L)
	if len(rc.Graph.Branches) > 0 {
		shape = "branches-" + strings.NewReplacer(";", "_", ",", ".").Replace(tasks.FormatBranches(rc.Graph.Branches))
	}
	name := rc.Train.Trainer
	if rc.Model == "transformer" {
		name = "transformer-" + name
		if rc.Transformer != nil && rc.Transformer.Prompt {
			name += "-prompt"
		}
	}
	if rc.Train.SupervisedBackward > 0 {
		name += fmt.Sprintf("-p%g", rc.Train.SupervisedBackward)
	}
	if rc.Train.Trainer == "distill" && rc.Train.DistillTraces > 0 {
		name += fmt.Sprintf("-traces%d", rc.Train.DistillTraces)
	}
	return fmt.Sprintf("%s-%s-seed%d", name, shape, rc.Train.Seed)
}

// loadRunConfig reads a JSON config file strictly into rc.
func loadRunConfig(path string, rc *runConfig) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return usagef("run: -config: %v", err)
	}
	if err := decodeRunConfig(data, rc); err != nil {
		return usagef("run: -config %s: %v", path, err)
	}
	return nil
}

// decodeRunConfig decodes one JSON object over rc; unknown keys and
// trailing data are errors.
func decodeRunConfig(data []byte, rc *runConfig) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(rc); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON object")
	}
	return nil
}

// runFlags registers the flags of train run on fs with rc's values as
// defaults, so flags the user sets override a -config file read into rc.
func runFlags(fs *flag.FlagSet, rc *runConfig, gf *graphFlags, tf *trainers.TransformerOptions) (resume *string) {
	gf.register(fs, rc.Graph)
	fs.String("config", "", "read the run configuration from this JSON file (same fields as config.json); flags override it")
	resume = fs.String("resume", "", "resume the run in this folder from its checkpoint (the configuration embedded in the checkpoint is used)")
	fs.StringVar(&rc.Model, "model", rc.Model, "model: bigram or transformer (initialised to the starting bigram; trainers sft, distill, reinforce, ppo)")
	fs.StringVar(&rc.Init, "init", rc.Init, "start from the bigram checkpointed in this run folder (e.g. an sft run) instead of the pretrained world model")
	fs.IntVar(&tf.Heads, "heads", tf.Heads, "transformer: attention heads")
	fs.IntVar(&tf.Context, "context", tf.Context, "transformer: attention window in tokens")
	fs.StringVar(&tf.Positional, "positional", tf.Positional, "transformer: learned or none")
	fs.BoolVar(&tf.Prompt, "prompt", tf.Prompt, "transformer: put the target's token before s0 -> f, visible to every position")
	fs.BoolVar(&tf.LayerNorm, "layer-norm", tf.LayerNorm, "transformer: layer norm before the unembedding (the initialisation stays exact)")
	fs.IntVar(&tf.Stride, "stride", tf.Stride, "transformer: trained positions per training window")
	fs.IntVar(&tf.Windows, "windows", tf.Windows, "transformer: windows per fill of the graph")
	fs.IntVar(&tf.EvalRollouts, "eval-rollouts", tf.EvalRollouts, "transformer: Monte Carlo rollouts behind each metrics row's hitting time")
	fs.StringVar(&rc.Train.Trainer, "trainer", rc.Train.Trainer, "trainer: "+strings.Join(trainers.Names, ", "))
	fs.StringVar(&rc.Train.Optim.Name, "optimizer", rc.Train.Optim.Name, "optimizer: sign (the paper's), sgd or adam")
	fs.Float64Var(&rc.Train.Optim.LR, "lr", rc.Train.Optim.LR, "learning rate")
	fs.IntVar(&rc.Train.Steps, "steps", rc.Train.Steps, "step cap")
	fs.StringVar(&rc.Train.LRDecay, "lr-decay", rc.Train.LRDecay, `learning-rate schedule over the steps: "" (constant) or linear`)
	fs.Float64Var(&rc.Train.Until, "until", rc.Train.Until, "stop within this relative distance of the limit hitting time (0: run all steps)")
	fs.Uint64Var(&rc.Train.Seed, "seed", rc.Train.Seed, "seed of every random choice")
	fs.IntVar(&rc.Train.Patience, "patience", rc.Train.Patience, "rlvr-exact: stop when the hitting time has not improved for N steps (0: never)")
	fs.IntVar(&rc.Train.LogEvery, "log-every", rc.Train.LogEvery, "metrics row every N steps")
	fs.Float64Var(&rc.Train.SupervisedBackward, "supervised-backward", rc.Train.SupervisedBackward, "sft: fraction of backward states also supervised (Appendix F)")
	fs.IntVar(&rc.Train.DistillTraces, "distill-traces", rc.Train.DistillTraces, "distill: sampled teacher traces (0: exact teacher distribution)")
	fs.IntVar(&rc.Train.Rollouts, "rollouts", rc.Train.Rollouts, "reinforce, ppo: rollouts per step")
	fs.Float64Var(&rc.Train.Beta, "beta", rc.Train.Beta, "reinforce, ppo: length penalty beta in the reward 1{hit} - beta |y|")
	fs.Float64Var(&rc.Train.HorizonFactor, "horizon-factor", rc.Train.HorizonFactor, "reinforce, ppo: rollout horizon as a multiple of the current hitting time")
	fs.IntVar(&rc.Train.Epochs, "epochs", rc.Train.Epochs, "ppo: passes over each batch")
	fs.IntVar(&rc.Train.Minibatches, "minibatches", rc.Train.Minibatches, "ppo: minibatches per pass")
	fs.Float64Var(&rc.Train.Clip, "clip", rc.Train.Clip, "ppo: ratio clip epsilon")
	fs.Float64Var(&rc.Train.KLCoef, "kl-coef", rc.Train.KLCoef, "ppo: KL penalty to the starting policy")
	fs.Float64Var(&rc.Train.EntropyCoef, "entropy-coef", rc.Train.EntropyCoef, "ppo: entropy bonus")
	fs.StringVar(&rc.Train.Baseline, "baseline", rc.Train.Baseline, "reinforce, ppo: gae (tabular critic of state and target), state-target (mean return from the state given the rollout's target), fork (state-target on returns bootstrapped at the fork), state or batch")
	fs.Float64Var(&rc.Train.Lambda, "lambda", rc.Train.Lambda, "reinforce, ppo with -baseline gae: GAE lambda")
	fs.Float64Var(&rc.Train.CriticRate, "critic-rate", rc.Train.CriticRate, "reinforce, ppo with -baseline gae: rate at which the critic follows each batch's returns")
	fs.BoolVar(&rc.Train.NormalizeAdvantages, "normalize-advantages", rc.Train.NormalizeAdvantages, "reinforce, ppo: divide advantages by their standard deviation")
	fs.StringVar(&rc.Teacher, "teacher", rc.Teacher, "distill: rlvr-limit or a run folder whose checkpoint is the teacher")
	fs.IntVar(&rc.CheckpointEvery, "checkpoint-every", rc.CheckpointEvery, "checkpoint every N steps (0: at the end and on interruption only)")
	fs.StringVar(&rc.Out, "out", rc.Out, "run folder (default runs/<trainer>-<graph>-seed<seed>); a folder holding another run is refused unless -force")
	return resume
}

// transformerFlags are the flags that configure -model transformer.
var transformerFlags = []string{"heads", "context", "positional", "prompt", "layer-norm", "stride", "windows", "eval-rollouts"}

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
