package trainers

import (
	"context"
	"math"
	"testing"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// TestPlateauHalvesThenEndsAtBest: under lr_decay plateau a run halves
// its rate each time it goes Patience steps without a new best, stops once
// its halvings are spent, and ends with the parameters of its best row: the
// final hitting time is the best row's, exactly. The rule is replayed from
// the logged rows, independently of the trainer's bookkeeping; a run
// interrupted half way and resumed from its checkpoint does the same.
func TestPlateauHalvesThenEndsAtBest(t *testing.T) {
	g := graph(t, tasks.Config{W: 3, K: 2, L: 2})
	cfg := Defaults(GRPO, BigramModel)
	cfg.GroupSize = 4
	cfg.Optim.Name, cfg.Optim.LR = "adam", 0.1
	cfg.Rollouts, cfg.Until, cfg.Steps, cfg.LogEvery = 16, 0, 3000, 1
	cfg.LRDecay, cfg.Patience, cfg.Halvings = "plateau", 40, 2
	run := func(stopAt int) ([]Row, Final, *Trainer) {
		tr, err := New(cfg, g, Setup{})
		if err != nil {
			t.Fatal(err)
		}
		var rows []Row
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err = tr.Run(ctx, Hooks{Row: func(r Row) error {
			rows = append(rows, r)
			if stopAt > 0 && r.Step == stopAt {
				cancel()
			}
			return nil
		}})
		if stopAt > 0 {
			ck, err := tr.Checkpoint(nil)
			if err != nil {
				t.Fatal(err)
			}
			tr.Close()
			if tr, err = New(cfg, g, Setup{}); err != nil {
				t.Fatal(err)
			}
			if err := tr.Restore(ck); err != nil {
				t.Fatal(err)
			}
			rows = rows[:len(rows)-1] // measured again
			if _, err = tr.Run(context.Background(), Hooks{Row: func(r Row) error { rows = append(rows, r); return nil }}); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		f, err := tr.Final(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rows, f, tr
	}
	rows, final, tr := run(0)
	defer tr.Close()

	// The rule, replayed.
	best, bestStep, since, halvings, stop := math.Inf(1), 0, 0, 0, -1
	for i, r := range rows {
		if r.Step != i {
			t.Fatalf("row %d is step %d", i, r.Step)
		}
		switch {
		case i == 0 || r.HittingTime < best-1e-9*best:
			best, bestStep, since = r.HittingTime, r.Step, r.Step
		case r.Step-since >= cfg.Patience && halvings < cfg.Halvings:
			halvings, since = halvings+1, r.Step
		case r.Step-since >= cfg.Patience:
			stop = r.Step
		}
		if want := math.Ldexp(cfg.Optim.LR, -halvings); r.LR != want {
			t.Fatalf("step %d: lr %v, want %v after %d halvings", r.Step, r.LR, want, halvings)
		}
		if stop >= 0 {
			break
		}
	}
	if stop < 0 || stop != rows[len(rows)-1].Step || halvings != cfg.Halvings {
		t.Fatalf("the run stopped at step %d, the rule at %d (%d halvings)", rows[len(rows)-1].Step, stop, halvings)
	}
	if got := tr.Stop(); got != StopPlateau && got != StopOptimum {
		t.Errorf("stop reason %s, want plateau or optimum", got)
	}
	if final.Step != bestStep || final.HittingTime != best || bestStep == 0 || bestStep == stop {
		t.Errorf("final hitting time %v at step %d, want the best row's %v at step %d (stopped at %d)", final.HittingTime, final.Step, best, bestStep, stop)
	}
	if s, h, _ := tr.Best(); s != bestStep || h != best {
		t.Errorf("Best() = %d, %v; want %d, %v", s, h, bestStep, best)
	}
	t.Logf("best %.6f at step %d; stopped at %d after %d halvings", best, bestStep, stop, halvings)

	resumed, rfinal, rtr := run(stop / 2)
	defer rtr.Close()
	if len(resumed) != len(rows) || rfinal != final {
		t.Fatalf("resumed at step %d: %d rows, final %+v; uninterrupted: %d rows, final %+v", stop/2, len(resumed), rfinal, len(rows), final)
	}
	for i := range rows {
		a, b := rows[i], resumed[i]
		a.StepSeconds, b.StepSeconds = 0, 0
		if a.HittingTime != b.HittingTime || a.LR != b.LR || a.Tokens != b.Tokens {
			t.Fatalf("row %d differs after the resume: %+v vs %+v", i, a, b)
		}
	}
}
