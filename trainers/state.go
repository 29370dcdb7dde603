package trainers

import "fmt"

// State is what a checkpoint must hold to resume a trainer exactly: the
// step count, every logit, the optimiser state and the random source. The
// training data is rebuilt from the configuration and seed.
type State struct {
	Step   int
	Logits []float64 // one per support entry of the model (frozen rows included)
	Optim  []float64
	RNG    []byte
}

// State snapshots the trainer.
func (t *Trainer) State() (State, error) {
	rng, err := t.pcg.MarshalBinary()
	if err != nil {
		return State{}, fmt.Errorf("trainers: random source: %w", err)
	}
	return State{Step: t.done, Logits: t.model.Logits(), Optim: t.solver.State(), RNG: rng}, nil
}

// Restore puts the trainer back in a snapshotted state. The trainer must
// have been built with the same configuration and graph.
func (t *Trainer) Restore(s State) error {
	if s.Step < 0 || s.Step > t.cfg.Steps {
		return fmt.Errorf("trainers: restore: step %d outside [0, %d]", s.Step, t.cfg.Steps)
	}
	if err := t.model.SetLogits(s.Logits); err != nil {
		return fmt.Errorf("trainers: restore: %w", err)
	}
	if err := t.solver.SetState(s.Optim); err != nil {
		return fmt.Errorf("trainers: restore: %w", err)
	}
	if err := t.pcg.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("trainers: restore: random source: %w", err)
	}
	t.done, t.res = s.Step, nil
	return nil
}
