package trainers

import (
	"fmt"

	"github.com/rlvr-backtrack/backtrack/eval"
)

// State is what a checkpoint must hold to resume a trainer exactly: the
// step count, every logit, the optimiser state and the random source. The
// training data is rebuilt from the configuration and seed.
type State struct {
	Step   int
	Logits []float64 // bigram: one per support entry of the model (frozen rows included)
	// Params is a transformer's parameters, in Learnables order, flat.
	Params []float64
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
	st := State{Step: t.done, Optim: t.solver.State(), RNG: rng}
	if t.tf != nil {
		for _, p := range t.tf.tr.ParamValues() {
			st.Params = append(st.Params, p...)
		}
	} else {
		st.Logits = t.model.Logits()
	}
	if t.smp != nil {
		if t.smp.critic != nil {
			st.Critic = append([]float64(nil), t.smp.critic.v...)
		}
		b := t.smp.batch
		st.Counters = map[string]float64{"tokens": float64(t.smp.tokens), "rollouts": float64(t.smp.rollouts),
			"batch_horizon": float64(b.Horizon), "batch_success_rate": b.SuccessRate, "batch_mean_length": b.MeanLength,
			"batch_approx_kl": b.ApproxKL, "batch_clip_frac": b.ClipFrac}
	}
	if l := t.tf; l != nil {
		if st.Counters == nil {
			st.Counters = map[string]float64{}
		}
		st.Counters["mc_step"], st.Counters["next_trace"] = float64(l.mcStep), float64(l.nextData)
		st.Counters["loss"] = l.loss
		mc := l.mc
		st.Counters["mc_n"], st.Counters["mc_hits"], st.Counters["mc_hitting_time"] = float64(mc.N), float64(mc.Hits), mc.HittingTime
		st.Counters["mc_ci95"], st.Counters["mc_success_rate"], st.Counters["mc_mean_length"] = mc.CI95, mc.SuccessRate, mc.MeanLength
	}
	return st, nil
}

// Restore puts the trainer back in a snapshotted state. The trainer must
// have been built with the same configuration and graph.
func (t *Trainer) Restore(s State) error {
	if s.Step < 0 || s.Step > t.cfg.Steps {
		return fmt.Errorf("trainers: restore: step %d outside [0, %d]", s.Step, t.cfg.Steps)
	}
	if t.tf != nil {
		if err := t.tf.setParams(s.Params); err != nil {
			return fmt.Errorf("trainers: restore: %w", err)
		}
	} else if err := t.model.SetLogits(s.Logits); err != nil {
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
	if l := t.tf; l != nil {
		c := s.Counters
		for _, k := range []string{"mc_step", "mc_hitting_time", "mc_n"} {
			if _, ok := c[k]; !ok {
				return fmt.Errorf("trainers: restore: a transformer checkpoint must hold %s", k)
			}
		}
		l.mcStep, l.nextData, l.loss = int(c["mc_step"]), int(c["next_trace"]), c["loss"]
		l.mc = eval.MCResult{N: int(c["mc_n"]), Hits: int(c["mc_hits"]), HittingTime: c["mc_hitting_time"], CI95: c["mc_ci95"],
			SuccessRate: c["mc_success_rate"], MeanLength: c["mc_mean_length"]}
		if l.traces != nil && (l.nextData < 0 || l.nextData >= len(l.traces)) {
			return fmt.Errorf("trainers: restore: next trace %d outside [0, %d)", l.nextData, len(l.traces))
		}
	}
	t.done, t.res = s.Step, nil
	return nil
}
