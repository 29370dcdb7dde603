package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// valueKind is how a flag's text becomes a JSON value.
type valueKind int

const (
	intValue    valueKind = iota // a decimal integer
	uintValue                    // a decimal integer >= 0
	floatValue                   // a decimal number
	boolValue                    // true or false
	stringValue                  // any text
)

// argName names the kind's argument in -h, as the flag package names its
// own types'.
func (k valueKind) argName() string {
	switch k {
	case intValue, uintValue:
		return "int"
	case floatValue:
		return "float"
	case boolValue:
		return ""
	}
	return "string"
}

// runFlag is a flag of train run that sets one field of the
// configuration: the field's path in config.json, how its text is read,
// and its usage line.
type runFlag struct {
	name, path string
	kind       valueKind
	usage      string
}

// runFlags are train run's configuration flags, in the order of -h. Each
// sets its path on the -config file's object (experiment.Given), and the
// result is resolved in one place (experiment.Given.Resolve): a flag that
// does not apply to the run is refused there, by its path.
var runFlags = []runFlag{
	{"W", "graph.W", intValue, "number of branches W (>= 1)"},
	{"K", "graph.K", intValue, "diamonds per branch K (>= 1)"},
	{"L", "graph.L", intValue, "multiedges per diamond L (>= 1)"},
	{"branches", "graph.branches", stringValue, `heterogeneous graph, e.g. "2,2,3;5,1": ';' between branches, ',' between the diamonds' multiedge counts (instead of -W -K -L)`},
	{"max-bytes", "graph.max_bytes", intValue, "memory budget in bytes: larger graphs are refused up front (default: 3/4 of the machine's memory)"},
	{"model", "model", stringValue, "model: bigram (default) or transformer (initialised to the starting bigram; trainers sft, distill, reinforce, ppo, grpo, rloo, dr-grpo)"},
	{"init", "init", stringValue, "start from the bigram checkpointed in this run folder (e.g. an sft run) instead of the pretrained world model"},
	{"init-mode", "transformer.init", stringValue, "transformer: exact initialisation: table (a per-transition logit table beside a zero unembedding, any width) or identity (the paper's: width = vocabulary)"},
	{"ops", "transformer.ops", stringValue, "transformer: fused (custom ops with hand-written backwards, fast) or stock (gorgonia's stock ops only, every derivative by its autodiff; slow)"},
	{"dim", "transformer.dim", intValue, "transformer: width with -init-mode table, a multiple of -heads (-init-mode identity: 0, the vocabulary)"},
	{"table-lr", "transformer.table_lr", floatValue, "transformer, -init-mode table: learning rate of the logit table (default: 0.025 for ppo, the bigram's rate for the other sampled trainers, -lr otherwise)"},
	{"train-tokens", "transformer.train_tokens", intValue, "transformer: trained positions per update; larger batches train on an unbiased random subset of windows (0: all)"},
	{"table-tokens", "transformer.table_tokens", intValue, "transformer, -init-mode table, sampled trainers: tokens per update of the logit table's own pass; larger batches use an unbiased random subset (0: all)"},
	{"heads", "transformer.heads", intValue, "transformer: attention heads"},
	{"context", "transformer.context", intValue, "transformer: attention window in tokens"},
	{"positional", "transformer.positional", stringValue, "transformer: learned or none"},
	{"prompt", "transformer.prompt", boolValue, "transformer: put the target's token before s0 -> f, visible to every position"},
	{"layer-norm", "transformer.layer_norm", boolValue, "transformer: layer norm before the unembedding (the initialisation stays exact)"},
	{"stride", "transformer.stride", intValue, "transformer: trained positions per training window"},
	{"windows", "transformer.windows", intValue, "transformer: windows per fill of the graph"},
	{"eval-rollouts", "transformer.eval_rollouts", intValue, "transformer: Monte Carlo rollouts behind each metrics row's hitting time"},
	{"eval-tokens", "transformer.eval_tokens", intValue, "transformer: sampled tokens a metrics row's Monte Carlo may take (fewer rollouts while the hitting time is long; 0: no bound)"},
	{"final-rollouts", "transformer.final_rollouts", intValue, "transformer: Monte Carlo rollouts of a stop decision and of the final value, each on rollouts of its own"},
	{"final-tokens", "transformer.final_tokens", intValue, "transformer: sampled tokens a stop decision's or the final value's Monte Carlo may take (0: no bound)"},
	{"trainer", "train.trainer", stringValue, "trainer: " + trainers.KindNames(trainers.Kinds) + " (default " + string(trainers.RLVRExact) + ")"},
	{"optimizer", "train.optimizer.name", stringValue, "optimizer: sign (the paper's), sgd or adam (default: the trainer's and model's, see the manual)"},
	{"lr", "train.optimizer.lr", floatValue, "learning rate (default: the trainer's and model's, see the manual)"},
	{"steps", "train.steps", intValue, "step cap"},
	{"lr-decay", "train.lr_decay", stringValue, `learning-rate schedule: "" (constant), linear (over the steps) or plateau (halved after -patience steps without progress) (default: the trainer's and model's, see the manual)`},
	{"halvings", "train.halvings", intValue, "-lr-decay plateau: halvings of the rate before a run without progress stops"},
	{"until", "train.until", floatValue, "stop within this relative distance of the limit hitting time (default: the trainer's and model's, see the manual; 0: no such stop; the step cap, -max-tokens, -patience (stop_reason optimum at the exact optimum, else stationary, stall or plateau) and the memory budget still end a run)"},
	{"seed", "train.seed", uintValue, "seed of every random choice"},
	{"max-tokens", "train.max_tokens", intValue, "sampled trainers: stop once this many tokens have been sampled (0: no cap)"},
	{"patience", "train.patience", intValue, "steps without a new best hitting time before the run halves its rate (-lr-decay plateau) or stops (default: the trainer's and model's, see the manual; 0: never)"},
	{"log-every", "train.log_every", intValue, "metrics row every N steps"},
	{"supervised-backward", "train.supervised_backward", floatValue, "sft on the bigram: fraction of backward states also supervised (Appendix F)"},
	{"distill-traces", "train.distill_traces", intValue, "distill: sampled teacher traces (0: exact teacher distribution)"},
	{"train-source", "train.train_source", boolValue, "RL trainers and distill: train the source row s0 -> f (default: it stays uniform like the fork-incoming rows)"},
	{"rollouts", "train.rollouts", intValue, "sampled trainers, and the transformer's sft and distill: rollouts (sequences) per step (default: the model's, see the manual)"},
	{"hindsight", "train.hindsight", boolValue, "reinforce, ppo: draw a step's rollouts as walks until every leaf is reached, each holding a rollout toward every target (the policy must not see its target: no -prompt; default on for the transformer without -prompt, off for the bigram; -hindsight=false: independent rollouts)"},
	{"step-tokens", "train.step_tokens", intValue, "sampled trainers: while the hitting time H is long, draw about N/H rollouts a step, at most -rollouts (0: always -rollouts)"},
	{"beta", "train.beta", floatValue, "sampled trainers: length penalty beta in the reward 1{hit} - beta |y|"},
	{"horizon-factor", "train.horizon_factor", floatValue, "sampled trainers: rollout horizon as a multiple of the current hitting time (default: the model's, see the manual)"},
	{"epochs", "train.epochs", intValue, "ppo, grpo, rloo, dr-grpo: passes over each batch"},
	{"minibatches", "train.minibatches", intValue, "ppo, grpo, rloo, dr-grpo: minibatches per pass"},
	{"clip", "train.clip", floatValue, "ppo, grpo, rloo, dr-grpo: ratio clip epsilon"},
	{"kl-coef", "train.kl_coef", floatValue, "ppo: KL penalty to the starting policy; grpo, rloo, dr-grpo: its k3 estimate on the sampled tokens"},
	{"entropy-coef", "train.entropy_coef", floatValue, "ppo: entropy bonus"},
	{"baseline", "train.baseline", stringValue, "reinforce, ppo: gae, exact, state-target, fork, state or batch (default: the model's, see the manual); grpo, rloo, dr-grpo: group"},
	{"group-size", "train.group_size", intValue, "grpo, rloo, dr-grpo: rollouts per group, one target each (divides -rollouts)"},
	{"loss-agg", "train.loss_agg", stringValue, "grpo, rloo, dr-grpo: token, sequence or constant aggregation of the per-token loss (default: token; constant for dr-grpo)"},
	{"lambda", "train.lambda", floatValue, "reinforce, ppo with -baseline gae: GAE lambda"},
	{"critic-rate", "train.critic_rate", floatValue, "reinforce, ppo with -baseline gae: rate at which the critic follows each batch's returns"},
	{"normalize-advantages", "train.normalize_advantages", boolValue, "reinforce, ppo: divide advantages by their standard deviation"},
	{"teacher", "teacher", stringValue, "distill: rlvr-limit or a run folder whose checkpoint is the teacher"},
	{"checkpoint-every", "checkpoint_every", intValue, "checkpoint every N steps (0: at the end and on interruption only)"},
	{"tensorboard", "tensorboard", boolValue, "also write the metrics as TensorBoard event files (events.out.tfevents.*) in the run folder"},
	{"out", "out", stringValue, "run folder (default runs/<trainer>-<graph>-seed<seed>); a folder holding another run is refused unless -force"},
}

// Integers and numbers on the command line are decimal: 010 is ten, as
// in -branches, and 0x10, 1_000, inf and nan are refused.
var (
	decimalInt   = regexp.MustCompile(`^[+-]?[0-9]+$`)
	decimalFloat = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
)

// parse reads a flag's text as a JSON value.
func (k valueKind) parse(s string) (json.RawMessage, error) {
	switch k {
	case intValue, uintValue:
		if !decimalInt.MatchString(s) || k == uintValue && strings.HasPrefix(s, "-") {
			return nil, errors.New(map[valueKind]string{intValue: "want a decimal integer", uintValue: "want a decimal integer >= 0"}[k])
		}
		if k == uintValue {
			n, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("want a decimal integer in [0, %d]", uint64(math.MaxUint64))
			}
			return json.RawMessage(strconv.FormatUint(n, 10)), nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a decimal integer in [%d, %d]", math.MinInt64, math.MaxInt64)
		}
		return json.RawMessage(strconv.FormatInt(n, 10)), nil
	case floatValue:
		if !decimalFloat.MatchString(s) {
			return nil, errors.New("want a decimal number")
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("out of range: want a decimal number of magnitude within [%g, %g] (or 0)", math.SmallestNonzeroFloat64, math.MaxFloat64)
		}
		return json.RawMessage(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case boolValue:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, errors.New("want true or false")
		}
		return json.RawMessage(strconv.FormatBool(b)), nil
	}
	return json.Marshal(s)
}

// pathValue is a runFlag's flag.Value: its text and JSON value.
type pathValue struct {
	kind  valueKind
	text  string
	value json.RawMessage
}

func (v *pathValue) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

func (v *pathValue) Set(s string) error {
	j, err := v.kind.parse(s)
	if err != nil {
		return err
	}
	v.text, v.value = s, j
	return nil
}

func (v *pathValue) IsBoolFlag() bool { return v.kind == boolValue }

// registerRunFlags registers runFlags on fs and returns their values by
// name. A flag's default, shown by -h, is the one it has on every run it
// applies to, when they agree (the others say where the manual gives
// them).
func registerRunFlags(fs *flag.FlagSet) map[string]*pathValue {
	values := map[string]*pathValue{}
	for _, f := range runFlags {
		v := &pathValue{kind: f.kind}
		values[f.name] = v
		fs.Var(v, f.name, f.usage)
		if d := flagDefaults()[f.path]; d != "0" && d != "false" {
			fs.Lookup(f.name).DefValue = d // -h shows a default that is not the zero value
		}
	}
	return values
}

// flagDefaults are the defaults -h shows, by path: a field's default when
// every run it applies to has the same (none when they differ).
var flagDefaults = sync.OnceValue(func() map[string]string {
	type run struct {
		ch   trainers.Choice
		tree any
	}
	var runs []run
	for _, c := range defaultRuns() {
		runs = append(runs, run{c.Choice(), tree(c)})
	}
	out := map[string]string{}
	for _, f := range runFlags {
		seen, set, same := "", false, true
		for _, r := range runs {
			if !trainers.Applies(f.path, r.ch) {
				continue
			}
			v, ok := lookup(r.tree, f.path)
			same = same && ok && (!set || v == seen) // "" is a value too: lr_decay's constant rate
			seen, set = v, true
		}
		if same && f.path != "graph.max_bytes" { // the machine's: not the same everywhere
			out[f.path] = seen
		}
	}
	return out
})

// defaultRuns are the runs -h reads its defaults from: every trainer on
// every model with its defaults, and again with baseline gae where the
// run takes it (reinforce and ppo on the bigram), since GAE's lambda and
// critic rate apply to no default run.
func defaultRuns() []experiment.Config {
	var runs []experiment.Config
	for _, m := range trainers.Models() {
		for _, k := range m.Kinds() {
			c := experiment.Defaults(m, k)
			runs = append(runs, c)
			gae := c
			gae.Train.Baseline = "gae"
			if _, err := gae.Resolve(); err == nil && trainers.Applies("train.lambda", gae.Choice()) {
				runs = append(runs, gae)
			}
		}
	}
	return runs
}

// valueAt is the value at path of c's config.json, as a flag would show it.
func valueAt(c experiment.Config, path string) (string, bool) { return lookup(tree(c), path) }

// lookup is the value at path of a config.json tree, as a flag would show
// it (numbers as written).
func lookup(v any, path string) (string, bool) {
	for _, seg := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[seg]; !ok {
			return "", false
		}
	}
	switch x := v.(type) {
	case string:
		return x, true
	case map[string]any, []any:
		return "", false
	}
	return fmt.Sprint(v), true
}

// tree is c's config.json as a tree, numbers as written.
func tree(c experiment.Config) any {
	data, err := json.Marshal(c)
	if err != nil {
		panic(err) // a Config always marshals
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(err)
	}
	return v
}

// flagFor is the run flag that sets path ("" when none does).
func flagFor(path string) string {
	for _, f := range runFlags {
		if f.path == path {
			return f.name
		}
	}
	return ""
}
