// Package tokenizer maps the directed edge states of a tasks.Graph to token
// ids with readable names, adds one token per target leaf and the special
// tokens, encodes and decodes paths, and writes and reads vocabulary files.
//
// Ids: the state ids of the graph come first (so a state's token id is its
// state id), then the targets <t1>..<tW>, then the special tokens. A model
// has rows for a prefix of the ids (Rows): the states, and the targets too
// when it is prompted with its target (ForModel).
package tokenizer

import (
	"fmt"
	"strings"

	"github.com/rlvr-backtrack/backtrack/tasks"
)

// Special tokens, after the targets.
var Specials = []string{"<bos>", "<pad>"}

// Vocab is the token vocabulary of one graph.
type Vocab struct {
	names     []string
	ids       map[string]int
	numStates int
	numTarget int
	rows      int    // ids [0, rows) are a model's rows
	branches  string // the graph's shape, tasks.FormatBranches
}

// New builds the vocabulary of graph g.
func New(g *tasks.Graph) *Vocab {
	names := make([]string, 0, g.NumStates()+g.W()+len(Specials))
	for s := range g.States {
		names = append(names, g.Name(s))
	}
	for t := 1; t <= g.W(); t++ {
		names = append(names, targetName(t))
	}
	names = append(names, Specials...)
	v, err := fromNames(names, g.NumStates(), g.W(), tasks.FormatBranches(g.Config.Shape()))
	if err != nil {
		panic(err) // state names of a valid graph are unique
	}
	return v
}

func targetName(t int) string { return fmt.Sprintf("<t%d>", t) }

func fromNames(names []string, states, targets int, branches string) (*Vocab, error) {
	ids := make(map[string]int, len(names))
	for i, n := range names {
		if n == "" || strings.ContainsAny(n, " \t\r\n") {
			return nil, fmt.Errorf("tokenizer: token %d %q: names must be non-empty without spaces", i, n)
		}
		if j, dup := ids[n]; dup {
			return nil, fmt.Errorf("tokenizer: token %q appears twice (ids %d and %d)", n, j, i)
		}
		ids[n] = i
	}
	return &Vocab{names: names, ids: ids, numStates: states, numTarget: targets, rows: states, branches: branches}, nil
}

// ForModel returns the vocabulary marked with the rows of a model: the
// states, and with prompt the targets after them (the prompt token of
// target t is Target(t)). The special tokens are never model rows.
func (v *Vocab) ForModel(prompt bool) *Vocab {
	w := *v
	w.rows = v.numStates
	if prompt {
		w.rows += v.numTarget
	}
	return &w
}

// Rows is the number of token ids, from 0, that the model has rows for
// (the states unless ForModel says otherwise).
func (v *Vocab) Rows() int { return v.rows }

// Size is the number of tokens.
func (v *Vocab) Size() int { return len(v.names) }

// NumStates is the number of state tokens (ids 0..NumStates-1).
func (v *Vocab) NumStates() int { return v.numStates }

// Target is the token id of target leaf t (1-based).
func (v *Vocab) Target(t int) (int, error) {
	if t < 1 || t > v.numTarget {
		return 0, fmt.Errorf("tokenizer: target %d: want 1 to %d", t, v.numTarget)
	}
	return v.numStates + t - 1, nil
}

// Special is the token id of a special token such as "<bos>".
func (v *Vocab) Special(name string) (int, error) {
	for i, s := range Specials {
		if s == name {
			return v.numStates + v.numTarget + i, nil
		}
	}
	return 0, fmt.Errorf("tokenizer: special token %q: want one of %s", name, strings.Join(Specials, ", "))
}

// Name is the readable name of token id.
func (v *Vocab) Name(id int) (string, error) {
	if id < 0 || id >= len(v.names) {
		return "", fmt.Errorf("tokenizer: token id %d: want 0 to %d", id, len(v.names)-1)
	}
	return v.names[id], nil
}

// ID is the token id of a name.
func (v *Vocab) ID(name string) (int, error) {
	id, ok := v.ids[name]
	if !ok {
		return 0, fmt.Errorf("tokenizer: unknown token %q", name)
	}
	return id, nil
}

// Encode maps a path of state ids to token ids (the identity on valid
// states: the check is what it adds).
func (v *Vocab) Encode(path []int) ([]int, error) { return v.EncodeTo(make([]int, 0, len(path)), path) }

// EncodeTo appends the ids of path's states to dst and returns it (dst may
// be path[:0]: the ids are written in place).
func (v *Vocab) EncodeTo(dst, path []int) ([]int, error) {
	for i, s := range path {
		if s < 0 || s >= v.numStates {
			return nil, fmt.Errorf("tokenizer: path position %d: state %d: want 0 to %d", i, s, v.numStates-1)
		}
		dst = append(dst, s)
	}
	return dst, nil
}

// Decode maps token ids back to state ids; target and special tokens are
// not states and are refused.
func (v *Vocab) Decode(ids []int) ([]int, error) {
	out := make([]int, len(ids))
	for i, id := range ids {
		if id < 0 || id >= v.numStates {
			name, err := v.Name(id)
			if err != nil {
				return nil, fmt.Errorf("tokenizer: position %d: %w", i, err)
			}
			return nil, fmt.Errorf("tokenizer: position %d: token %q is not an edge state", i, name)
		}
		out[i] = id
	}
	return out, nil
}

// Format writes token ids as space-separated names.
func (v *Vocab) Format(ids []int) (string, error) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		n, err := v.Name(id)
		if err != nil {
			return "", fmt.Errorf("tokenizer: position %d: %w", i, err)
		}
		parts[i] = n
	}
	return strings.Join(parts, " "), nil
}

// Parse reads space-separated token names back to ids.
func (v *Vocab) Parse(text string) ([]int, error) {
	fields := strings.Fields(text)
	out := make([]int, len(fields))
	for i, f := range fields {
		id, err := v.ID(f)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: position %d: %w", i, err)
		}
		out[i] = id
	}
	return out, nil
}

// Matches reports whether v is the vocabulary of graph g.
func (v *Vocab) Matches(g *tasks.Graph) error {
	w := New(g)
	if v.branches != w.branches || len(v.names) != len(w.names) {
		return fmt.Errorf("tokenizer: vocabulary of graph %q (%d tokens) used with graph %q (%d tokens)", v.branches, len(v.names), w.branches, len(w.names))
	}
	for i := range v.names {
		if v.names[i] != w.names[i] {
			return fmt.Errorf("tokenizer: token %d is %q, the graph's is %q", i, v.names[i], w.names[i])
		}
	}
	return nil
}
