package trainers

import (
	"fmt"
	"slices"
	"strings"
)

// Choice is what decides which fields of a run's configuration apply: the
// model, the trainer, and the options that switch fields on.
type Choice struct {
	Model     Model
	Trainer   Kind
	Optimizer string // train.optimizer.name
	Baseline  string // train.baseline
	LRDecay   string // train.lr_decay
	Init      string // transformer.init (the transformer only)
}

// String describes the run in the terms the fields' rules use:
// "reinforce on the bigram (optimizer adam, baseline state)".
func (c Choice) String() string {
	s := fmt.Sprintf("%s on the %s", c.Trainer, c.Model)
	var opts []string
	if c.Optimizer != "" {
		opts = append(opts, "optimizer "+c.Optimizer)
	}
	if c.Trainer.Sampled() && c.Baseline != "" {
		opts = append(opts, "baseline "+c.Baseline)
	}
	if c.LRDecay != "" {
		opts = append(opts, "lr_decay "+c.LRDecay)
	}
	if c.Model == TransformerModel && c.Init != "" {
		opts = append(opts, "init "+c.Init)
	}
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	return s
}

// Field is one key of a run's configuration and the runs it applies to.
type Field struct {
	// Key is the field's path in a run's configuration file
	// (experiment.Config's JSON: this package's Config under "train", the
	// TransformerOptions under "transformer", the starting bigram and the
	// teacher of Setup as "init" and "teacher").
	Key string
	// To names the runs it applies to, for messages and the manual.
	To string
	// Applies reports whether the field applies to a run.
	Applies func(Choice) bool
}

// Fields is the applicability table: every key of Config and of
// TransformerOptions, and the run-level keys whose use depends on the
// trainer, in the order of config.json. It is the truth about what the
// code reads: a field that does not apply to a run is never read by it.
// The configuration's resolver refuses such a field when the user gives it
// (even as zero), Validate checks only the fields that apply, and
// config.json records only those (experiment.Config.MarshalJSON).
// Adding a field: the struct, its default (Defaults), and one line here.
var Fields = []Field{
	{"transformer", onTransformer, isTransformer},
	{"transformer.dim", onTransformer, isTransformer},
	{"transformer.heads", onTransformer, isTransformer},
	{"transformer.context", onTransformer, isTransformer},
	{"transformer.positional", onTransformer, isTransformer},
	{"transformer.layer_norm", onTransformer, isTransformer},
	{"transformer.prompt", onTransformer, isTransformer},
	{"transformer.init", onTransformer, isTransformer},
	{"transformer.ops", onTransformer, isTransformer},
	{"transformer.table_lr", "the transformer with init table", func(c Choice) bool { return isTransformer(c) && c.Init == "table" }},
	{"transformer.stride", onTransformer, isTransformer},
	{"transformer.windows", onTransformer, isTransformer},
	{"transformer.eval_rollouts", onTransformer, isTransformer},
	{"transformer.eval_tokens", onTransformer, isTransformer},
	{"transformer.final_rollouts", onTransformer, isTransformer},
	{"transformer.final_tokens", onTransformer, isTransformer},
	{"transformer.train_tokens", onTransformer, isTransformer},
	{"transformer.table_tokens", "the transformer with init table, under " + kinds(Kind.Sampled),
		func(c Choice) bool { return isTransformer(c) && c.Init == "table" && c.Trainer.Sampled() }},
	{"init", kinds(func(k Kind) bool { return !k.Dense() }), func(c Choice) bool { return !c.Trainer.Dense() }},
	{"train.trainer", everyRun, every},
	{"train.optimizer.name", everyRun, every},
	{"train.optimizer.lr", everyRun, every},
	{"train.optimizer.beta1", "optimizer adam", usesAdam},
	{"train.optimizer.beta2", "optimizer adam", usesAdam},
	{"train.optimizer.eps", "optimizer adam", usesAdam},
	{"train.lr_decay", everyRun, every},
	{"train.halvings", "lr_decay plateau", func(c Choice) bool { return c.LRDecay == "plateau" }},
	{"train.steps", everyRun, every},
	{"train.until", everyRun, every},
	{"train.max_tokens", kinds(Kind.Sampled), isSampled},
	{"train.seed", everyRun, every},
	{"train.log_every", everyRun, every},
	{"train.supervised_backward", "sft on the bigram", func(c Choice) bool { return c.Trainer.Supervises() && c.Model == BigramModel }},
	{"train.patience", everyRun, every},
	{"train.rollouts", kinds(Kind.Sampled) + "; on the transformer also sft and distill",
		func(c Choice) bool { return c.Trainer.Sampled() || isTransformer(c) }},
	{"train.step_tokens", kinds(Kind.Sampled), isSampled},
	{"train.hindsight", kinds(ownBaseline), func(c Choice) bool { return ownBaseline(c.Trainer) }},
	{"train.beta", kinds(Kind.Sampled), isSampled},
	{"train.horizon_factor", kinds(Kind.Sampled), isSampled},
	{"train.epochs", kinds(Kind.Clipped), isClipped},
	{"train.minibatches", kinds(Kind.Clipped), isClipped},
	{"train.clip", kinds(Kind.Clipped), isClipped},
	{"train.kl_coef", kinds(Kind.Clipped), isClipped},
	{"train.entropy_coef", kinds(func(k Kind) bool { return k.Clipped() && !k.Grouped() }), func(c Choice) bool { return c.Trainer.Clipped() && !c.Trainer.Grouped() }},
	{"train.group_size", kinds(Kind.Grouped), isGrouped},
	{"train.loss_agg", kinds(Kind.Grouped), isGrouped},
	{"train.baseline", kinds(Kind.Sampled), isSampled},
	{"train.lambda", "baseline gae (" + kinds(ownBaseline) + ")", withGAE},
	{"train.critic_rate", "baseline gae (" + kinds(ownBaseline) + ")", withGAE},
	{"train.normalize_advantages", kinds(ownBaseline), func(c Choice) bool { return ownBaseline(c.Trainer) }},
	{"train.distill_traces", kinds(Kind.UsesTeacher), func(c Choice) bool { return c.Trainer.UsesTeacher() }},
	{"train.train_source", kinds(trainsSource), func(c Choice) bool { return trainsSource(c.Trainer) }},
	{"teacher", kinds(Kind.UsesTeacher), func(c Choice) bool { return c.Trainer.UsesTeacher() }},
}

const (
	everyRun      = "every run"
	onTransformer = "the transformer"
)

func every(Choice) bool           { return true }
func isTransformer(c Choice) bool { return c.Model == TransformerModel }
func usesAdam(c Choice) bool      { return c.Optimizer == "adam" }
func isSampled(c Choice) bool     { return c.Trainer.Sampled() }
func isClipped(c Choice) bool     { return c.Trainer.Clipped() }
func isGrouped(c Choice) bool     { return c.Trainer.Grouped() }
func withGAE(c Choice) bool       { return ownBaseline(c.Trainer) && c.Baseline == "gae" }
func ownBaseline(k Kind) bool     { return k.Sampled() && !k.Grouped() }
func trainsSource(k Kind) bool    { return k.RL() || k.UsesTeacher() }
func kinds(pred func(Kind) bool) string {
	var ks []Kind
	for _, k := range Kinds {
		if pred(k) {
			ks = append(ks, k)
		}
	}
	return KindNames(ks)
}

// LookupField returns the field of the table with the given key.
func LookupField(key string) (Field, bool) {
	i := slices.IndexFunc(Fields, func(f Field) bool { return f.Key == key })
	if i < 0 {
		return Field{}, false
	}
	return Fields[i], true
}

// Applies reports whether the configuration key applies to the run c:
// a key of the table by its rule, any other key (the graph, the model,
// the run folder, ...) always.
func Applies(key string, c Choice) bool {
	f, ok := LookupField(key)
	return !ok || f.Applies(c)
}
