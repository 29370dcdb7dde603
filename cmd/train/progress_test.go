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
