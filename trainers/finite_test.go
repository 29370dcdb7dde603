package trainers

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestNonFiniteStops: a KL coefficient whose gradient overflows and a
// length penalty whose objective does stop the run at the step that made
// them, naming the quantity, before a row holding them is logged or a
// checkpoint written (the Step hook is where the run checkpoints), and
// the trainer then refuses to checkpoint.
func TestNonFiniteStops(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 3, L: 2})
	for _, tc := range []struct {
		name     string
		kind     Kind
		set      func(*Config)
		quantity string
		step     int
	}{
		{"ppo kl_coef 1e300", PPO, func(c *Config) { c.KLCoef = 1e300 }, "grad_norm", 0},
		{"grpo beta 1e308", GRPO, func(c *Config) { c.Beta = 1e308 }, "objective", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults(tc.kind, BigramModel)
			cfg.Steps, cfg.Until, cfg.Rollouts, cfg.LogEvery = 20, 0, 32, 1
			tc.set(&cfg)
			tr, err := New(cfg, g, Setup{})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			finite := func(r Row) bool {
				for _, q := range append(r.quantities(), r.Batch.quantities()...) {
					if math.IsInf(q.value, 0) {
						return false
					}
				}
				return true
			}
			_, err = tr.Run(context.Background(), Hooks{
				Row: func(r Row) error {
					if !finite(r) {
						t.Errorf("row %d logged with an infinite value", r.Step)
					}
					return nil
				},
				Step: func(steps int) error {
					if steps > tc.step {
						t.Errorf("step hook (a checkpoint) called after step %d; want the run stopped at step %d", steps, tc.step)
					}
					return nil
				},
			})
			var nf *NonFinite
			if !errors.As(err, &nf) || nf.Quantity != tc.quantity || nf.Step != tc.step || !math.IsInf(nf.Value, 0) {
				t.Fatalf("got %v, want step %d: %s is infinite", err, tc.step, tc.quantity)
			}
			if tc.kind == PPO {
				if _, err := tr.Checkpoint(nil); !errors.As(err, &nf) {
					t.Errorf("checkpoint after the failed step: got %v, want it refused", err)
				}
			}
		})
	}
}
