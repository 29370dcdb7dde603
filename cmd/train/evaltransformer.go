package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// agentEval is what train eval -checkpoint does with a model that is not a
// Markov policy (a transformer): Monte Carlo only.
type agentEval struct {
	n, horizon int
	seed       uint64
	search     bool
	json       bool
	// nSet and horizonSet say whether -mc and -horizon were given: only
	// when not are they the run's own.
	nSet, horizonSet bool
}

// attentionRollouts is the number of rollouts behind an attention summary
// (as summary.json's).
const attentionRollouts = 200

// transformerReport is what train eval -checkpoint prints for a
// transformer: the keys of the bigram's report that apply (no exact
// analysis: the mc_* keys carry the hitting time), its attention and the
// Monte Carlo horizon.
type transformerReport struct {
	Graph       string                   `json:"graph"`
	Policy      string                   `json:"policy"`
	Model       string                   `json:"model"`
	Step        int                      `json:"step"`
	States      int                      `json:"states"`
	Transitions int                      `json:"transitions"`
	Theory      eval.Predictions         `json:"theory"`
	Horizon     int                      `json:"mc_horizon"`
	Attention   *trainers.AttentionStats `json:"attention"`
	MC          eval.MCResult            `json:"-"`
}

// evalTransformer estimates a transformer's hitting time by Monte Carlo
// (the run's number of evaluation rollouts and horizon unless -mc and
// -horizon say otherwise) and summarises its attention. Monte Carlo is its
// only measure and its rollouts need a limit, so -mc 0 and -horizon 0 (a
// Markov policy's none) are refused.
func evalTransformer(c *experiment.Checkpointed, o agentEval, w, stderr io.Writer) error {
	if o.search {
		return usagef("eval: -search-agent: the search agent samples a Markov policy's table; %s holds a transformer (drop -search-agent)", c.Dir)
	}
	n := trainers.DefaultTransformerOptions(c.Config.Train.Trainer).EvalRollouts
	if t := c.Config.Transformer; t != nil {
		n = t.EvalRollouts
	}
	if o.nSet && o.n == 0 {
		return usagef("eval: -mc 0: %s holds a transformer, measured by Monte Carlo only: want at least 2 rollouts (default: the run's %d)", c.Dir, n)
	}
	if o.horizonSet && o.horizon == 0 {
		return usagef("eval: -horizon 0: %s holds a transformer, whose rollouts need a limit: want >= 1 (default: the run's %d)", c.Dir, c.Trainer.Horizon())
	}
	if !o.nSet {
		o.n = n
	}
	if !o.horizonSet {
		o.horizon = c.Trainer.Horizon()
	}
	g := c.Graph
	res, err := interruptible("Monte Carlo", o.n, func(ctx context.Context) (eval.MCResult, error) {
		return eval.AgentMonteCarlo(ctx, g, c.Agents(), o.n, o.horizon, o.seed)
	})
	if err != nil {
		return err
	}
	att, err := c.Trainer.Attention(attentionRollouts, o.seed)
	if err != nil {
		return err
	}
	heatMap := filepath.Join(c.Dir, experiment.AttentionFile)
	if err := experiment.RedrawAttention(c.Dir, g.Config.Name(), c.Step, att); err != nil {
		if !errors.Is(err, experiment.ErrInUse) {
			return err
		}
		// A run is training in the folder: the evaluation stands, and the
		// heat map is the run's to draw at its end.
		fmt.Fprintf(stderr, "train: eval: %s not redrawn: a run is training in %s and draws it at its end\n", heatMap, c.Dir)
		heatMap = "not redrawn (a run is training in the folder)"
	}
	rep := &transformerReport{Graph: g.Config.Name(), Policy: "checkpoint " + c.Dir, Model: string(c.Config.Model), Step: c.Step,
		States: g.NumStates(), Transitions: len(g.Next), Theory: c.Trainer.Predictions(), Horizon: o.horizon, Attention: &att, MC: res}
	if o.json {
		return writeJSON(w, rep, &rep.MC)
	}
	fmt.Fprintf(w, "graph %s: %d edge states, %d valid transitions\n", rep.Graph, rep.States, rep.Transitions)
	fmt.Fprintf(w, "policy %s: a %s (%s) at step %d: not a Markov policy, so no exact analysis\n", rep.Policy, rep.Model, c.Config.Train.Trainer, rep.Step)
	mcLine(w, fmt.Sprintf("Monte Carlo, horizon %d", o.horizon), &res)
	if res.SuccessRate < 1 {
		fmt.Fprintf(w, "  %.1f%% of the rollouts missed within the horizon: the hitting time is at least the mean length %s\n", 100*(1-res.SuccessRate), num(res.MeanLength))
	}
	fmt.Fprintf(w, "attention along %d rollouts (%d positions of trained states): %.2f%% off the current token", attentionRollouts, att.Positions, 100*att.OffCurrent)
	if c.Config.Transformer != nil && c.Config.Transformer.Prompt {
		fmt.Fprintf(w, ", %.2f%% on the prompt", 100*att.OnPrompt)
	}
	fmt.Fprintf(w, "; heat map by position: %s\n", heatMap)
	writeTheory(w, rep.Theory)
	return nil
}
