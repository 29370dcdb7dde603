package trainers

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
)

// counters is what a checkpoint holds of a trainer besides its tensors:
// the sampled trainers' totals and latest batch statistics, the run's
// progress (its best row, patience and halvings), and the learner's own
// state (a transformer's latest Monte Carlo measurement).
// Restore decodes it strictly: an unknown or missing field is refused.
type counters struct {
	Tokens   int             `json:"tokens"`
	Rollouts int             `json:"rollouts"`
	Trained  int             `json:"trained_tokens"`
	Batch    BatchStats      `json:"batch"`
	Progress progress        `json:"progress"`
	Learner  json.RawMessage `json:"learner"`
}

// Checkpoint snapshots the trainer: its kind names the learner's parameter
// layout, config is the run's resolved configuration (stored as given, for
// the caller), and the tensors hold the parameters, the optimiser state and
// the critic. The training data is rebuilt from the configuration and seed.
func (t *Trainer) Checkpoint(config json.RawMessage) (*checkpoints.Checkpoint, error) {
	rng, err := t.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("trainers: random source: %w", err)
	}
	c := counters{Progress: t.prog, Learner: json.RawMessage("null")}
	if t.smp != nil {
		if err := t.smp.resolveBatch(nil); err != nil {
			return nil, err
		}
		if err := checkBatch(t.done, &t.smp.batch); err != nil {
			return nil, err
		}
		c.Tokens, c.Rollouts, c.Trained, c.Batch = t.smp.tokens, t.smp.rollouts, t.smp.trained, t.smp.batch
	}
	if st, ok := t.l.(stateful); ok {
		if c.Learner, err = json.Marshal(st.state()); err != nil {
			return nil, fmt.Errorf("trainers: learner state: %w", err)
		}
	}
	state, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("trainers: counters: %w", err)
	}
	ts := append(t.l.tensors(), checkpoints.Tensor{Name: "optimizer", Data: t.l.solver().State()})
	for _, b := range t.best {
		ts = append(ts, checkpoints.Tensor{Name: bestPrefix + b.Name, Shape: b.Shape, Data: b.Data})
	}
	if t.smp != nil && t.smp.critic != nil {
		ts = append(ts, checkpoints.Tensor{Name: "critic", Data: append([]float64(nil), t.smp.critic.v...)})
	}
	return &checkpoints.Checkpoint{Kind: t.l.layout(), Config: config, Step: t.done, RNG: rng, State: state, Tensors: ts}, nil
}

// Restore puts the trainer back in a checkpointed state. The trainer must
// have been built with the configuration and graph the checkpoint was
// written with; a checkpoint of another model, graph or build is refused
// with a message saying which.
func (t *Trainer) Restore(ck *checkpoints.Checkpoint) error {
	if ck.Kind != t.l.layout() {
		return fmt.Errorf("trainers: restore: checkpoint is a %s model, this run trains a %s", ck.Kind, t.l.layout())
	}
	if ck.Step < 0 || ck.Step > t.cfg.Steps {
		return fmt.Errorf("trainers: restore: step %d outside [0, %d]", ck.Step, t.cfg.Steps)
	}
	if err := t.l.setTensors(ck); err != nil {
		return fmt.Errorf("trainers: restore: %w", err)
	}
	opt, err := ck.Tensor("optimizer", -1)
	if err != nil {
		return fmt.Errorf("trainers: restore: %w", err)
	}
	if err := t.l.solver().SetState(opt); err != nil {
		return fmt.Errorf("trainers: restore: %w", err)
	}
	if err := t.pcg.UnmarshalBinary(ck.RNG); err != nil {
		return fmt.Errorf("trainers: restore: random source: %w", err)
	}
	var c counters
	if err := decodeStrict(ck.State, &c); err != nil {
		return fmt.Errorf("trainers: restore: counters: %w", err)
	}
	t.prog, t.best = c.Progress, t.best[:0]
	if t.prog.Measured && t.cfg.Patience > 0 {
		for _, x := range t.l.tensors() {
			d, err := ck.Tensor(bestPrefix+x.Name, len(x.Data))
			if err != nil {
				return fmt.Errorf("trainers: restore: the best parameters: %w", err)
			}
			t.best = append(t.best, checkpoints.Tensor{Name: x.Name, Shape: x.Shape, Data: append([]float64(nil), d...)})
		}
	}
	if t.smp != nil {
		t.smp.tokens, t.smp.rollouts, t.smp.trained, t.smp.batch = c.Tokens, c.Rollouts, c.Trained, c.Batch
		if cr := t.smp.critic; cr != nil {
			v, err := ck.Tensor("critic", len(cr.v))
			if err != nil {
				return fmt.Errorf("trainers: restore: %w", err)
			}
			copy(cr.v, v)
		}
	}
	if st, ok := t.l.(stateful); ok {
		if err := decodeStrict(c.Learner, st.state()); err != nil {
			return fmt.Errorf("trainers: restore: %s state: %w", t.l.layout(), err)
		}
	}
	t.done = ck.Step
	return nil
}

// SetupPrefix begins the names of the tensors a caller keeps in a
// checkpoint beside the trainer's, what the run was set up with (Setup):
// Restore ignores them.
const SetupPrefix = "setup."

// IsParameter reports whether a checkpoint's tensor of this name is one of
// the model's parameters, not the trainer's state (the optimiser's
// moments, the critic, the best row's parameters) nor its setup
// (SetupPrefix).
func IsParameter(name string) bool {
	return name != "optimizer" && name != "critic" && !strings.HasPrefix(name, bestPrefix) && !strings.HasPrefix(name, SetupPrefix)
}
