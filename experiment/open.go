package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/tokenizer"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

// Checkpointed is the model checkpointed in a run folder, opened to look
// inside it: sample it, evaluate it, export its parameters. A bigram is
// its transition table; a transformer is restored into a trainer built
// from the checkpoint's configuration (never stepped). Close it after use.
type Checkpointed struct {
	Dir    string
	Kind   string // the parameter layout: bigram, dense-bigram or transformer
	Step   int
	Config Config
	Graph  *tasks.Graph
	// Vocab is the model's vocabulary (with a prompt, the targets are
	// rows too: tokenizer.Vocab.ForModel).
	Vocab *tokenizer.Vocab
	// Params are the model's parameters by name and shape, as
	// checkpointed (without the optimiser's state or the critic).
	Params []checkpoints.Tensor
	// Probs is a bigram's transition table in CSR order (a dense
	// pretrained bigram's restricted to the valid transitions); nil for a
	// transformer.
	Probs []float64
	// Trainer holds a transformer (nil for a bigram).
	Trainer *trainers.Trainer
}

// Open reads the checkpoint of the run folder dir within a memory budget
// in bytes (0: the one its configuration recorded), as train run checks
// its own: a checkpoint file, graph or model that would not fit is refused
// before it is read or built. Errors are InputErrors: a folder without a
// readable checkpoint, one over the budget, or one written before runs kept
// their teacher and starting bigram (-init) whose folders can no longer be
// read.
func Open(dir string, budget int64) (*Checkpointed, error) {
	if st, err := os.Stat(filepath.Join(dir, CheckpointFile)); err == nil && budget > 0 && 2*float64(st.Size()) > float64(budget) {
		return nil, inputf("%s is %s: reading it needs about twice that, over the memory budget of %s (-max-bytes)",
			filepath.Join(dir, CheckpointFile), tasks.HumanBytes(float64(st.Size())), tasks.HumanBytes(float64(budget)))
	}
	ck, cfg, err := readCheckpoint(dir)
	if err != nil {
		return nil, &InputError{err}
	}
	gc := cfg.Graph
	if budget > 0 {
		gc.MaxBytes = budget
	}
	g, err := tasks.New(gc)
	if err != nil {
		return nil, inputf("%v", strings.TrimPrefix(err.Error(), "tasks: "))
	}
	c := &Checkpointed{Dir: dir, Kind: ck.Kind, Step: ck.Step, Config: cfg, Graph: g, Vocab: tokenizer.New(g)}
	for _, t := range ck.Tensors {
		if trainers.IsParameter(t.Name) {
			c.Params = append(c.Params, t)
		}
	}
	switch ck.Kind {
	case "bigram", "dense-bigram":
		if c.Probs, err = bigramProbs(ck, g); err != nil {
			return nil, &InputError{err}
		}
		return c, nil
	case "transformer":
		if c.Trainer, _, err = newTrainer(cfg, g, ck); err != nil {
			return nil, err
		}
		if err := c.Trainer.Restore(ck); err != nil {
			c.Trainer.Close()
			return nil, inputf("checkpoint: %v", err)
		}
		c.Vocab = c.Trainer.Vocab()
		return c, nil
	}
	return nil, inputf("checkpoint of a %s model: want bigram, dense-bigram or transformer", ck.Kind)
}

// Close releases a transformer's graph.
func (c *Checkpointed) Close() error {
	if c.Trainer != nil {
		return c.Trainer.Close()
	}
	return nil
}

// Agents makes agents sampling the model, one per goroutine.
func (c *Checkpointed) Agents() func() (eval.Agent, error) {
	if c.Trainer != nil {
		return c.Trainer.Agents()
	}
	return func() (eval.Agent, error) { return eval.NewMarkovAgent(c.Graph, c.Probs) }
}

// Replay returns the log-probability of each transition of path (states,
// s0 -> f first) toward target under the model, computed afresh
// (trainers.Trainer.Replay for a transformer, the table for a bigram).
func (c *Checkpointed) Replay(target int, path []int) ([]float64, error) {
	if c.Trainer != nil {
		return c.Trainer.Replay(target, path)
	}
	g := c.Graph
	out := make([]float64, 0, len(path))
	for i := 0; i+1 < len(path); i++ {
		s := path[i]
		if s < 0 || s >= g.NumStates() {
			return nil, fmt.Errorf("experiment: replay: position %d: state %d: want 0 to %d", i, s, g.NumStates()-1)
		}
		e := g.Entry(s, path[i+1])
		if e < 0 {
			return nil, fmt.Errorf("experiment: replay: position %d: %s -> state %d is not a transition", i, g.Name(s), path[i+1])
		}
		out = append(out, math.Log(c.Probs[e]))
	}
	return out, nil
}
