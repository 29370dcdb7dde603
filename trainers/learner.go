package trainers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn/solvers"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
)

// Model names the policy a trainer trains.
type Model string

// The models of this package. Each registers itself (register) from its own
// file: what it trains, its defaults and its constructor; the loop, the
// solver and the stop rules know nothing else of it.
const (
	// BigramModel is the paper's linear-softmax bigram over the graph's
	// valid transitions (a dense one over every pair of states for
	// pretraining): bigram.go, dense.go.
	BigramModel Model = "bigram"
	// TransformerModel is a one-layer transformer initialised to the
	// starting bigram (Appendix F, the transformer figure): transformer*.go.
	TransformerModel Model = "transformer"
)

// Models lists the registered models, sorted.
func Models() []Model {
	var out []Model
	for m := range models {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// Setup is what a trainer is built from besides its Config and graph.
type Setup struct {
	Model Model
	// Transformer configures the transformer model (defaults:
	// DefaultTransformerOptions).
	Transformer TransformerOptions
	// Init holds the starting bigram's logits, one per valid transition of
	// the graph in CSR order (nil: the pretrained uniform world model).
	// Pretraining ignores it and starts from zero logits.
	Init []float64
	// Teacher is the distillation teacher's transition table (distill).
	Teacher []float64
}

// modelSpec is what a model registers.
type modelSpec struct {
	kinds    []Kind                                     // the trainers it supports
	why      string                                     // why it supports no others
	defaults func(k Kind, d *Config)                    // its defaults for trainer k over the package's (nil: none)
	validate func(cfg Config, s Setup) error            // model-specific checks (nil: none)
	build    func(t *Trainer, s Setup) (learner, error) // builds the learner on t (t.cfg, t.g, t.rng set)
}

var models = map[Model]modelSpec{}

// register adds a model; called from the model's own file.
func register(m Model, s modelSpec) { models[m] = s }

// Check validates the model and whether it supports the config's trainer.
func (m Model) Check(cfg Config, s Setup) error {
	spec, ok := models[m]
	if !ok {
		var names []string
		for _, x := range Models() {
			names = append(names, string(x))
		}
		return fmt.Errorf("trainers: model %q: want %s", m, strings.Join(names, " or "))
	}
	if !slices.Contains(spec.kinds, cfg.Trainer) {
		return fmt.Errorf("trainers: model %s trains with %s, not %s (%s)", m, KindNames(spec.kinds), cfg.Trainer, spec.why)
	}
	if spec.validate != nil {
		return spec.validate(cfg, s)
	}
	return nil
}

// Kinds lists the trainers model m supports.
func (m Model) Kinds() []Kind { return models[m].kinds }

// learner is what the training loop needs of every model's learner (one
// implementation per model, and one for the dense bigram of
// pretraining): it measures its policy and its state is checkpointed.
// What a trainer does with it is a role of its own, each implemented only
// by the learners that take it: crossEntropyStepper, exactStepper,
// sampledUpdater; and, optionally, agentMaker, abcdReporter, stateful and
// certifier. New refuses a learner without the role its trainer needs.
type learner interface {
	measurer
	checkpointed
	// vocab is the model's token vocabulary (which ids are its rows).
	vocab() *tokenizer.Vocab
	close() error
}

// measurer measures the current policy.
type measurer interface {
	// measure fills row with the metrics of the current policy (the exact
	// or Monte Carlo hitting time, the cross-entropy's value, Theorem 1's
	// quantities) at step t.done.
	// A canceled ctx stops a long measurement with ctx's error.
	measure(ctx context.Context, row *Row) error
}

// checkpointed is what a checkpoint holds of a learner besides its own
// state (stateful).
type checkpointed interface {
	// solver is the optimiser (its state is checkpointed, its rate
	// scheduled).
	solver() solvers.Solver
	// layout names the parameter layout in checkpoints; tensors are the
	// parameters, named, and setTensors restores them.
	layout() string
	tensors() []checkpoints.Tensor
	setTensors(ck *checkpoints.Checkpoint) error
}

// tensorCopier is a learner that copies its tensors into the memory of
// dst (the result of its previous call) without an intermediate copy.
type tensorCopier interface {
	copyTensors(dst []checkpoints.Tensor) []checkpoints.Tensor
}

// stateful is a learner with resumable state of its own.
type stateful interface {
	// state is a pointer to a struct that a checkpoint encodes and
	// Restore decodes into.
	state() any
}

// crossEntropyStepper takes the steps of the cross-entropy trainers (sft,
// distill, pretrain).
type crossEntropyStepper interface {
	crossEntropyStep(ctx context.Context) error
}

// exactStepper takes exact RLVR steps (a Markov policy with the exact
// analysis of eval).
type exactStepper interface {
	exactStep() error
}

// sampledUpdater samples rollouts of its policy and updates from them
// (reinforce, ppo and the group-relative trainers).
type sampledUpdater interface {
	// estimate is the latest measured hitting time, the horizon's unit
	// (a Monte Carlo lower bound when some rollouts missed).
	estimate(ctx context.Context) (float64, error)
	// rollouts samples n rollouts of the current policy with the
	// log-probability of each transition; a canceled ctx stops it with
	// ctx's error and changes nothing.
	// Rollout i goes toward targets[i] (nil: a uniform target each).
	rollouts(ctx context.Context, n, horizon int, seed uint64, targets []int) (*eval.AgentBatch, error)
	// walks samples n walks with hindsight targets (Config.Hindsight,
	// eval.Buffers.Walks): n W rollouts, W a walk.
	walks(ctx context.Context, n, horizon int, seed uint64) (*eval.AgentBatch, error)
	// transitionBytes is about the memory one sampled transition takes in
	// a batch, with the trainer's per-token arrays (Trainer.batchBytes).
	transitionBytes() float64
	// update takes the optimiser steps (REINFORCE's one, the clipped
	// objective's epochs over minibatches) on a batch with per-token
	// advantages adv, rollout i's terms of the loss divided by
	// div.rollout[i] (lossDivisors), and returns the ratio statistics
	// after them.
	update(b *eval.AgentBatch, states []int32, adv *advantages, div *lossDivs) (ratioStats, error)
	// entropy is the policy's entropy (nats) at the batch's tokens in
	// trained rows, averaged over them (BatchStats.Entropy), for the
	// policy that sampled the batch.
	// It returns a function that computes it later, valid until the
	// next batch.
	entropy(b *eval.AgentBatch, states []int32) func() float64
}

// agentMaker is a learner whose model is a policy of the graph.
type agentMaker interface {
	// newAgent makes agents sampling the current policy, one per worker.
	newAgent() func() (eval.Agent, error)
}

// abcdReporter is a learner with the exact a, b, c, d of its policy.
type abcdReporter interface {
	// abcd adds the per-depth a, b, c, d to a row about to be written.
	abcd(row *Row)
}

// The learners and their roles.
var (
	_ learner             = (*bigram)(nil)
	_ crossEntropyStepper = (*bigram)(nil)
	_ exactStepper        = (*bigram)(nil)
	_ sampledUpdater      = (*bigram)(nil)
	_ agentMaker          = (*bigram)(nil)
	_ abcdReporter        = (*bigram)(nil)
	_ certifier           = (*bigram)(nil)

	_ learner             = (*dense)(nil)
	_ crossEntropyStepper = (*dense)(nil)
	_ stateful            = (*dense)(nil)

	_ learner             = (*transformer)(nil)
	_ crossEntropyStepper = (*transformer)(nil)
	_ sampledUpdater      = (*transformer)(nil)
	_ agentMaker          = (*transformer)(nil)
	_ stateful            = (*transformer)(nil)
)

// checkRoles refuses a learner without the role trainer k needs.
func checkRoles(l learner, k Kind) error {
	var ok bool
	switch {
	case k.Sampled():
		_, ok = l.(sampledUpdater)
	case k.Exact():
		_, ok = l.(exactStepper)
	default:
		_, ok = l.(crossEntropyStepper)
	}
	if !ok {
		return fmt.Errorf("trainers: the %s learner does not train with %s", l.layout(), k)
	}
	return nil
}

// sampled is the learner's sampling role (New checked it has it).
func (t *Trainer) sampled() sampledUpdater { return t.l.(sampledUpdater) }

// decodeStrict decodes data into v refusing unknown fields and requiring
// every field v's type marshals (a checkpoint written by another build).
func decodeStrict(data []byte, v any) error {
	var got map[string]json.RawMessage
	if err := json.Unmarshal(data, &got); err != nil {
		return err
	}
	zero, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(zero, &want); err != nil {
		return err
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			return fmt.Errorf("missing field %q", k)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
