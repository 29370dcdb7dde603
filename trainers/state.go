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
	// Critic is the sampled trainers' value table (baseline "gae").
	Critic []float64
	// Counters holds the sampled trainers' totals ("tokens", "rollouts")
	// and their latest batch's statistics ("batch_*").
	Counters map[string]float64
}

// State snapshots the trainer.
func (t *Trainer) State() (State, error) {
	rng, err := t.pcg.MarshalBinary()
	if err != nil {
		return State{}, fmt.Errorf("trainers: random source: %w", err)
	}
	st := State{Step: t.done, Logits: t.model.Logits(), Optim: t.solver.State(), RNG: rng}
	if t.smp != nil {
		if t.smp.critic != nil {
			st.Critic = append([]float64(nil), t.smp.critic.v...)
		}
		b := t.smp.batch
		st.Counters = map[string]float64{"tokens": float64(t.smp.tokens), "rollouts": float64(t.smp.rollouts),
			"batch_horizon": float64(b.Horizon), "batch_success_rate": b.SuccessRate, "batch_mean_length": b.MeanLength,
			"batch_approx_kl": b.ApproxKL, "batch_clip_frac": b.ClipFrac}
	}
	return st, nil
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
	if t.smp != nil {
		tok, ok1 := s.Counters["tokens"]
		ro, ok2 := s.Counters["rollouts"]
		if !ok1 || !ok2 {
			return fmt.Errorf("trainers: restore: a %s checkpoint must count tokens and rollouts", t.cfg.Trainer)
		}
		t.smp.tokens, t.smp.rollouts = int(tok), int(ro)
		if t.smp.critic != nil {
			if len(s.Critic) != len(t.smp.critic.v) {
				return fmt.Errorf("trainers: restore: critic has %d values, want %d", len(s.Critic), len(t.smp.critic.v))
			}
			copy(t.smp.critic.v, s.Critic)
		}
		c := s.Counters
		t.smp.batch = BatchStats{Horizon: int(c["batch_horizon"]), SuccessRate: c["batch_success_rate"],
			MeanLength: c["batch_mean_length"], ApproxKL: c["batch_approx_kl"], ClipFrac: c["batch_clip_frac"]}
	}
	t.done, t.res = s.Step, nil
	return nil
}
