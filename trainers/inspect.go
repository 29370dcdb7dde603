package trainers

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
)

// Agents makes agents sampling the current policy, one per goroutine: the
// bigram's transition table, or the transformer's KV-cache sampler with
// the rows the paper fixes drawn from the starting bigram. A pretrained
// dense bigram is not a policy of the graph: its agents fail.
func (t *Trainer) Agents() func() (eval.Agent, error) {
	if a, ok := t.l.(agentMaker); ok {
		return a.newAgent()
	}
	return func() (eval.Agent, error) {
		return nil, fmt.Errorf("trainers: a %s model is not a policy of the graph", t.l.layout())
	}
}

// Horizon is the Monte Carlo horizon of the run's measurements: 50 times
// the starting bigram's hitting time for a transformer, 0 (none: the
// analysis is exact) for a bigram.
func (t *Trainer) Horizon() int {
	if l, ok := t.l.(*transformer); ok {
		return l.mcCap
	}
	return 0
}

// Replay returns the log-probability of each transition of path (states,
// s0 -> f first) toward target under the current policy, computed afresh:
// for a transformer by a forward pass of a new graph over the whole path
// (not the sampler's cache), for a bigram from its transition table. The
// rows the paper fixes come from the starting bigram, as the agents draw
// them. Sampled rollouts replay to their agents' own log-probabilities.
func (t *Trainer) Replay(target int, path []int) ([]float64, error) {
	g := t.g
	if target < 1 || target > g.W() {
		return nil, fmt.Errorf("trainers: replay: target %d: want 1 to %d", target, g.W())
	}
	entries := make([]int, max(len(path)-1, 0))
	for i := range entries {
		if path[i] < 0 || path[i] >= g.NumStates() {
			return nil, fmt.Errorf("trainers: replay: position %d: state %d: want 0 to %d", i, path[i], g.NumStates()-1)
		}
		if entries[i] = g.Entry(path[i], path[i+1]); entries[i] < 0 {
			return nil, fmt.Errorf("trainers: replay: position %d: %s -> state %d is not a transition", i, g.Name(path[i]), path[i+1])
		}
	}
	out := make([]float64, len(entries))
	switch l := t.l.(type) {
	case *bigram:
		probs := l.model.Probs()
		for i, e := range entries {
			out[i] = math.Log(probs[e])
		}
	case *transformer:
		if len(path) < 2 {
			return out, nil
		}
		lp, err := l.forwardLogProbs(target, path)
		if err != nil {
			return nil, err
		}
		for i, e := range entries {
			out[i] = lp[i]
			if !t.trained[path[i]] { // drawn from the starting bigram
				out[i] = math.Log(l.ref[e])
			}
		}
	default:
		return nil, fmt.Errorf("trainers: replay: a %s model is not a policy of the graph", t.l.layout())
	}
	return out, nil
}

// forwardLogProbs runs path through a new transformer holding the current
// parameters, one window from position 0, and returns the log-probability
// of each transition taken.
func (l *transformer) forwardLogProbs(target int, path []int) ([]float64, error) {
	cfg := l.tr.Config()
	tr, err := nn.NewTransformerFromBigram(cfg, make([]float64, cfg.Support.NNZ()), rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, err
	}
	if err := tr.SetParamValues(l.tr.ParamValues()); err != nil {
		return nil, err
	}
	fw, err := tr.Forward(1, len(path), nn.Fused)
	if err != nil {
		return nil, err
	}
	var taken G.Value
	G.Read(fw.Taken(), &taken)
	vm := G.NewTapeMachine(tr.Graph())
	defer vm.Close()
	if err := fw.SetWindows([]nn.Window{{Prompt: l.prompt(target), Start: 0, Tokens: path}}); err != nil {
		return nil, err
	}
	if err := vm.RunAll(); err != nil {
		return nil, fmt.Errorf("trainers: replay: %w", err)
	}
	return append([]float64(nil), taken.Data().([]float64)[:len(path)-1]...), nil
}
