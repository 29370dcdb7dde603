package experiment

import (
	"bytes"
	"encoding/json"

	"github.com/rlvr-backtrack/backtrack/checkpoints"
)

// ExportFile is the default name of a run folder's export.
const ExportFile = "model.npz"

// Arrays are the checkpointed model as named arrays for numpy
// (checkpoints.WriteNPZ): every parameter by its name and shape (a bigram's
// "logits", one per valid transition in CSR order, or (states, states) for
// a dense pretrained bigram; a transformer's E, P, WQ, WK, WV, WO, LN_gain,
// LN_bias, U, B as trainers checkpoint them), "transitions" (the model's
// support: one (from, to) pair of token ids per logit of a bigram or entry
// of B, a prompted transformer's target rows last, each to s0 -> f; for a
// dense bigram the valid transitions), "probs" (a bigram's transition
// probabilities, one per pair of "transitions"),
// "vocab" (token names by id), "step" and "config" (the run's
// configuration as JSON text).
func (c *Checkpointed) Arrays() []checkpoints.Array {
	var out []checkpoints.Array
	v := c.Graph.NumStates()
	for _, t := range c.Params {
		shape := t.Shape
		switch {
		case c.Kind == "dense-bigram" && t.Name == "logits":
			shape = []int{v, v}
		case len(shape) == 0:
			shape = []int{len(t.Data)}
		}
		out = append(out, checkpoints.Array{Name: t.Name, Shape: shape, Float: t.Data})
	}
	g := c.Graph
	var pairs []int64
	for s := range v {
		for _, n := range g.Row(s) {
			pairs = append(pairs, int64(s), int64(n))
		}
	}
	if c.Config.Transformer != nil && c.Config.Transformer.Prompt {
		for x := 1; x <= g.W(); x++ {
			id, _ := c.Vocab.Target(x)
			pairs = append(pairs, int64(id), 0)
		}
	}
	out = append(out, checkpoints.Array{Name: "transitions", Shape: []int{len(pairs) / 2, 2}, Int: pairs})
	if c.Probs != nil {
		out = append(out, checkpoints.Array{Name: "probs", Shape: []int{len(c.Probs)}, Float: c.Probs})
	}
	names := make([]string, c.Vocab.Size())
	for i := range names {
		names[i], _ = c.Vocab.Name(i)
	}
	out = append(out, checkpoints.Array{Name: "vocab", Shape: []int{len(names)}, Text: names})
	out = append(out, checkpoints.Array{Name: "step", Int: []int64{int64(c.Step)}})
	cfg, _ := json.Marshal(c.Config)
	var compact bytes.Buffer
	json.Compact(&compact, cfg)
	out = append(out, checkpoints.Array{Name: "config", Text: []string{compact.String()}})
	return out
}

// ArraysBytes is about the memory Arrays and writing them take besides the
// checkpoint and the graph: the transitions (two int64 each), the
// vocabulary (numpy's 4 bytes per character, up to 64 characters a name),
// the parameters and probabilities they share with the checkpoint, all
// counted once more for their encoding as they are written.
func (c *Checkpointed) ArraysBytes() float64 {
	g := c.Graph
	arrays := 16*float64(len(g.Next)+g.W()) + 4*64*float64(c.Vocab.Size()) + 8*float64(len(c.Probs))
	for _, t := range c.Params {
		arrays += 8 * float64(len(t.Data))
	}
	return 2 * arrays
}
