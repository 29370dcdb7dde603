package main

import (
	"fmt"
	"io"
	"time"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// largeEval is the memory estimate (bytes) from which train eval says on
// stderr what it needs and which step of the analysis it is in: W=K=200,
// L=5 (about 360 MiB) takes a few seconds, W=K=1000 (about 9 GiB)
// minutes.
const largeEval = 256 << 20

// Per-item memory of eval's report, besides the graph (tasks.EstimateBytes):
// a row of an a, b, c, d table, a row of -probs' listing per transition,
// each counted with its JSON (encoded, decoded into a map, encoded again).
const (
	evalRowBytes   = 1024
	evalProbsBytes = 256
)

// evalSteps reports the steps of a long exact analysis on stderr (nil: a
// small one, nothing reported).
type evalSteps struct {
	w     io.Writer
	start time.Time
}

// planEval checks an exact analysis of graph c (and, with probs, the
// listing of every transition's probability) against the memory budget,
// before anything is built, and for a large one says on w what it needs:
// the steps are then reported (evalSteps.say).
func planEval(w io.Writer, c tasks.Config, probs bool) (*evalSteps, error) {
	states, transitions := c.Size()
	graph := tasks.EstimateBytes(states, transitions)
	rows := 0.0 // the a, b, c, d tables: one row per branch and depth, twice
	for _, b := range c.Shape() {
		rows += 2 * float64(len(b))
	}
	report, what := evalRowBytes*rows, "the report (its a, b, c, d tables)"
	if probs {
		report, what = report+evalProbsBytes*transitions, "the report with every transition's probability (-probs)"
	}
	if err := overBudget("eval", what, report, graph, c.Budget()); err != nil {
		return nil, err
	}
	if graph+report < largeEval {
		return nil, nil
	}
	fmt.Fprintf(w, "train: eval: graph %s: %.0f states, %.0f transitions: about %s of memory, within the budget of %s (-max-bytes); the exact analysis takes a while\n",
		c.Name(), states, transitions, tasks.HumanBytes(graph+report), tasks.HumanBytes(float64(c.Budget())))
	return &evalSteps{w: w, start: time.Now()}, nil
}

// say reports that a step begins, with the time since the analysis began.
func (s *evalSteps) say(step string) {
	if s != nil {
		fmt.Fprintf(s.w, "train: eval: %.1fs: %s\n", time.Since(s.start).Seconds(), step)
	}
}
