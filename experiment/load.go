package experiment

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Bigram is a bigram checkpointed in a run folder: its graph, its
// transition table (CSR order) and the run's configuration.
type Bigram struct {
	Graph  *tasks.Graph
	Probs  []float64
	Config Config
}

// LoadBigram loads the bigram checkpointed in the run folder dir, checking
// that it was trained on graph g (g nil: its own graph). A dense pretrained
// bigram gives its logits on the valid transitions (Assumption
// 'exact_pretrain' drops the rest).
func LoadBigram(dir string, g *tasks.Graph) (*Bigram, error) {
	ck, cfg, err := readCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if ck.Kind != "bigram" && ck.Kind != "dense-bigram" {
		return nil, fmt.Errorf("checkpoint is a %s model, want a bigram", ck.Kind)
	}
	if g == nil {
		if g, err = tasks.New(cfg.Graph); err != nil {
			return nil, err
		}
	} else if a, b := cfg.Graph.Name(), g.Config.Name(); a != b {
		return nil, fmt.Errorf("checkpoint was trained on graph %s, this graph is %s", a, b)
	}
	probs, err := bigramProbs(ck, g)
	if err != nil {
		return nil, err
	}
	return &Bigram{Graph: g, Probs: probs, Config: cfg}, nil
}

// readCheckpoint reads the checkpoint of the run folder dir and its
// configuration, whose graph it validates.
func readCheckpoint(dir string) (*checkpoints.Checkpoint, Config, error) {
	var cfg Config
	ck, err := checkpoints.Load(filepath.Join(dir, CheckpointFile))
	if err != nil {
		return nil, cfg, err
	}
	if err := json.Unmarshal(ck.Config, &cfg); err != nil {
		return nil, cfg, fmt.Errorf("checkpoint config: %v", err)
	}
	if err := cfg.Graph.Validate(); err != nil {
		return nil, cfg, fmt.Errorf("checkpoint config: %v", err)
	}
	return ck, cfg, nil
}

// bigramProbs is the transition table (CSR order) of a bigram checkpoint
// on graph g. A dense pretrained bigram gives its logits on the valid
// transitions (Assumption 'exact_pretrain' drops the rest).
func bigramProbs(ck *checkpoints.Checkpoint, g *tasks.Graph) ([]float64, error) {
	var logits []float64
	var err error
	if ck.Kind == "dense-bigram" {
		v := g.NumStates()
		dense, err := ck.Tensor("logits", v*v)
		if err != nil {
			return nil, err
		}
		logits = make([]float64, len(g.Next))
		for s := range v {
			for i := g.Offsets[s]; i < g.Offsets[s+1]; i++ {
				logits[i] = dense[s*v+g.Next[i]]
			}
		}
	} else if logits, err = ck.Tensor("logits", len(g.Next)); err != nil {
		return nil, err
	}
	m, err := nn.NewBigram(nn.BigramConfig{Vocab: g.NumStates(), Support: nn.Support{Offsets: g.Offsets, Next: g.Next}}, logits)
	if err != nil {
		return nil, err
	}
	return m.Probs(), nil
}

// loadTeacher returns the distillation teacher's transition table:
// rlvr-limit, or the bigram checkpointed in a run folder on the same graph.
func loadTeacher(spec string, g *tasks.Graph) ([]float64, error) {
	if spec == "rlvr-limit" {
		return eval.PolicyRLVRLimit(g), nil
	}
	b, err := LoadBigram(spec, g)
	if err != nil {
		return nil, inputf("teacher (-teacher) %s: %v", spec, err)
	}
	return b.Probs, nil
}

// logitsOf returns logits whose softmax is the transition table probs (CSR
// order): log-probabilities, with impossible transitions at a logit far
// below the rest (their probability underflows to 0).
func logitsOf(probs []float64) []float64 {
	out := make([]float64, len(probs))
	for i, p := range probs {
		out[i] = math.Log(p)
		if p == 0 {
			out[i] = -1e3
		}
	}
	return out
}
