package trainers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
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

// learner is what the training loop needs of a model: one implementation
// per model (and one for the dense bigram of pretraining).
type learner interface {
	// measure fills row with the metrics of the current policy (the exact
	// or Monte Carlo hitting time, the cross-entropy's value, Theorem 1's
	// quantities) at step t.done.
	// A canceled ctx stops a long measurement with ctx's error.
	measure(ctx context.Context, row *Row) error
	// abcd adds the per-depth a, b, c, d to a row about to be written (a
	// no-op when the model has no exact analysis).
	abcd(row *Row)
	// estimate is the latest measured hitting time, the horizon's unit for
	// the sampled trainers (a Monte Carlo lower bound when some rollouts
	// missed).
	estimate(ctx context.Context) (float64, error)
	// crossEntropyStep takes one optimiser step of a cross-entropy trainer
	// (sft, distill, pretrain).
	crossEntropyStep(ctx context.Context) error
	// rollouts samples n rollouts of the current policy with the
	// log-probability of each transition; a canceled ctx stops it with
	// ctx's error and changes nothing.
	// Rollout i goes toward targets[i] (nil: a uniform target each).
	rollouts(ctx context.Context, n, horizon int, seed uint64, targets []int) (*eval.AgentBatch, error)
	// transitionBytes is about the memory one sampled transition takes in
	// a batch, with the trainer's per-token arrays (Trainer.batchBytes).
	transitionBytes() float64
	// update takes a sampled trainer's optimiser steps (REINFORCE's one,
	// the clipped objective's epochs over minibatches) on a batch with
	// per-token advantages adv, token t's term of the loss divided by
	// div[t] (lossDivisors), and returns the ratio statistics after them.
	update(b *eval.AgentBatch, states []int32, adv, div []float64) (ratioStats, error)
	// entropy is the policy's entropy (nats) at the batch's tokens in
	// trained rows, averaged over them (BatchStats.Entropy), for the
	// policy that sampled the batch.
	entropy(b *eval.AgentBatch, states []int32) float64
	// vocab is the model's token vocabulary (which ids are its rows).
	vocab() *tokenizer.Vocab
	// newAgent makes agents sampling the current policy, one per worker.
	newAgent() func() (eval.Agent, error)
	// solver is the optimiser (its state is checkpointed, its rate
	// scheduled).
	solver() nn.Solver
	// layout names the parameter layout in checkpoints; tensors are the
	// parameters, named, and setTensors restores them.
	layout() string
	tensors() []checkpoints.Tensor
	setTensors(ck *checkpoints.Checkpoint) error
	// state is the learner's own resumable state (nil: none), as a
	// pointer to a struct that restoreState decodes into.
	state() any
	close() error
}

// exactStepper is a learner that can take exact RLVR steps (a Markov
// policy with the exact analysis of eval).
type exactStepper interface {
	exactStep() error
}

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
