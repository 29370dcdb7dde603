package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// TestProgressFraction: with -until the bar measures the way from the first
// row's distance to the limit to the target on a log scale (from 100% to
// 1% away, 10% away is half-way), a Monte Carlo row by its interval's upper
// end as the stop rule reads it, and reaches the end exactly when the rule
// fires; without -until, or when the steps are further along, the steps.
func TestProgressFraction(t *testing.T) {
	row := func(step int, h, ci, success float64) trainers.Row {
		return trainers.Row{Step: step, HittingTime: h, HittingTimeCI95: ci, MCSuccessRate: success, Estimated: success > 0}
	}
	for _, tc := range []struct {
		name  string
		until float64
		r     trainers.Row
		want  float64
	}{
		{"until, 10% away", 0.01, row(30, 110, 0, 0), 0.5},
		{"until, 1% away", 0.01, row(30, 101, 0, 0), 1},
		{"until, 10% below the limit", 0.01, row(30, 90, 0, 0), 0.5},
		{"until, Monte Carlo upper end 10% away", 0.01, row(30, 105, 5, 1), 0.5},
		{"until, Monte Carlo lower bound 10% away", 0.01, row(30, 110, 50, 0.9), 0.5},
		{"until, steps further along", 0.01, row(15000, 150, 0, 0), 0.75},
		{"no until: steps", 0, row(30, 101, 0, 0), 30.0 / 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProgress(new(bytes.Buffer))
			cfg := experiment.DefaultConfig()
			cfg.Train.Steps, cfg.Train.Until = 20000, tc.until
			p.start(cfg, 0, 100)
			p.update(row(0, 200, 0, 0)) // 100% away
			if got := p.fraction(tc.r); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProgressBar: on a terminal the bar shows a line before the first
// measurement, every render shows the step and the value of one row, with
// the distance to the limit, the tokens per second and (PPO) the KL.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf)
	p.terminal = true
	cfg := experiment.DefaultConfig()
	cfg.Model, cfg.Train.Trainer, cfg.Train.Steps, cfg.Train.Until = trainers.TransformerModel, trainers.PPO, 40, 0.05
	p.start(cfg, 0, 35)
	if !strings.Contains(buf.String(), "step 0/40 measuring the policy (Monte Carlo)") {
		t.Fatalf("before the first measurement: got %q", buf.String())
	}
	// A run that draws walks with hindsight targets (the transformer's
	// default PPO) says so, on a terminal or not.
	for _, terminal := range []bool{true, false} {
		var hb bytes.Buffer
		hp := newProgress(&hb)
		hp.terminal = terminal
		h := cfg
		h.Train.Hindsight = true
		hp.start(h, 0, 35)
		if want := "step 0/40 measuring the policy (Monte Carlo; batches of walks with hindsight targets)"; !strings.Contains(hb.String(), want) {
			t.Errorf("terminal %v: hindsight: got %q, want %q", terminal, hb.String(), want)
		}
		hp.finish(true)
	}
	r := trainers.Row{Step: 10, HittingTime: 70, HittingTimeCI95: 3.5, MCSuccessRate: 1, Estimated: true, Rollouts: 128, Tokens: 5000}
	r.Batch.ApproxKL = 0.0021
	p.update(r)
	p.rate = 12345
	p.render()
	out := buf.String()
	last := out[strings.LastIndex(out, "\r")+1:]
	for _, want := range []string{"step 10/40 H 70±3.5 limit 35 +110% (stop +5%) 12.3k tok/s kl 0.0021"} {
		if !strings.Contains(last, want) {
			t.Errorf("render %q: want %q", last, want)
		}
	}
}

// lastFrame is the bar's last render in a terminal's output.
func lastFrame(out string) string { return out[strings.LastIndex(out, "\r")+1:] }

// TestProgressBarEnds: a bar at 0% predicts no time left (its way is on a
// log scale, so only the run's own estimate, once 1% is behind, says
// how long); a small run whose rows come faster than the bar renders ends
// with its last row at 100%; an interrupted one stays where it was.
func TestProgressBarEnds(t *testing.T) {
	for _, completed := range []bool{true, false} {
		var buf bytes.Buffer
		p := newProgress(&buf)
		p.terminal = true
		cfg := experiment.DefaultConfig()
		cfg.Train.Steps, cfg.Train.Until = 40, 0.05
		p.start(cfg, 0, 35)
		p.update(trainers.Row{Step: 0, HittingTime: 275})
		if f := lastFrame(buf.String()); !strings.Contains(f, "  0%") || strings.Contains(f, "left") || strings.Contains(f, ":0s]") {
			t.Errorf("at 0%%: %q, want no time left predicted", f)
		}
		for step := 10; step <= 30; step += 10 { // faster than the bar renders
			p.update(trainers.Row{Step: step, HittingTime: 100})
		}
		p.finish(completed)
		// Interrupted at step 30 of 40, 186% away from the limit (6.86 at
		// first, the target 5%): the steps are further along, 75%.
		want := map[bool]string{true: "100%", false: " 75%"}[completed]
		if f := lastFrame(buf.String()); !strings.Contains(f, "step 30/40 H 100") || !strings.Contains(f, want) {
			t.Errorf("completed %v: last frame %q, want the last row at %s", completed, f, want)
		}
	}
}

// TestPretrainLogLine: off a terminal, pretraining logs Theorem 1's
// quantities, not a hitting time it does not have.
func TestPretrainLogLine(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf)
	cfg := experiment.DefaultConfig()
	cfg.Train.Trainer = trainers.Pretrain
	p.start(cfg, 0, 0)
	p.update(trainers.Row{Step: 0, HittingTime: math.NaN(), InvalidMass: 0.96, BoundRatio: 0.1, Objective: 3.4, A: math.NaN()})
	if got := buf.String(); !strings.HasPrefix(got, "step 0/20000 invalid_mass 0.96 bound_ratio 0.1 objective 3.4") || strings.Contains(got, "NaN") {
		t.Errorf("got %q, want invalid_mass and bound_ratio, no NaN", got)
	}
}
