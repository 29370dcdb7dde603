package solvers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
)

// Group is one group of parameters of a Groups: an optimiser configuration and
// the indices, in the model's learnables order, of the parameters it
// updates.
type Group struct {
	Config Config
	Params []int
}

// Groups updates groups of parameters with their own optimisers and
// learning rates: a transformer's bigram logit table at the bigram's rate,
// its attention and embeddings at a smaller one. Every parameter belongs to
// exactly one group.
type Groups struct {
	groups  []Group
	solvers []Solver
	base    []float64 // each group's configured lr, for SetLR
	scratch []G.ValueGrad
}

var _ Solver = (*Groups)(nil)

// NewGroups builds one solver per group; n is the number of
// parameters, each of which must be in exactly one group.
func NewGroups(n int, groups []Group) (*Groups, error) {
	seen := make([]bool, n)
	s := &Groups{groups: groups}
	for gi, g := range groups {
		for _, p := range g.Params {
			if p < 0 || p >= n || seen[p] {
				return nil, fmt.Errorf("solvers: solver group %d: parameter %d: want each of 0..%d in one group", gi, p, n-1)
			}
			seen[p] = true
		}
		sv, err := New(g.Config)
		if err != nil {
			return nil, fmt.Errorf("solvers: solver group %d: %w", gi, err)
		}
		s.solvers, s.base = append(s.solvers, sv), append(s.base, g.Config.LR)
	}
	for p, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("solvers: solver groups: parameter %d is in no group", p)
		}
	}
	return s, nil
}

// Solver is group i's solver, for a caller that updates the groups'
// parameters in separate graphs (its state stays part of this solver's).
func (s *Groups) Solver(i int) Solver { return s.solvers[i] }

// Step updates each group with its solver.
func (s *Groups) Step(model []G.ValueGrad) error {
	for gi, g := range s.groups {
		s.scratch = s.scratch[:0]
		for _, p := range g.Params {
			if p >= len(model) {
				return fmt.Errorf("solvers: solver group %d: parameter %d of %d", gi, p, len(model))
			}
			s.scratch = append(s.scratch, model[p])
		}
		if err := s.solvers[gi].Step(s.scratch); err != nil {
			return err
		}
	}
	return nil
}

// SetLR sets the first group's learning rate to lr and scales the others
// with it (a schedule keeps the groups' ratios).
func (s *Groups) SetLR(lr float64) {
	for gi, sv := range s.solvers {
		sv.SetLR(s.base[gi] * lr / s.base[0])
	}
}

// State returns [G, n_1, state_1.., n_G, state_G..]: the number of groups,
// then each group's solver state with its length.
func (s *Groups) State() []float64 {
	out := []float64{float64(len(s.solvers))}
	for _, sv := range s.solvers {
		st := sv.State()
		out = append(out, float64(len(st)))
		out = append(out, st...)
	}
	return out
}

// SetState restores a state returned by State.
func (s *Groups) SetState(state []float64) error {
	if len(state) < 1 || state[0] != float64(len(s.solvers)) {
		return fmt.Errorf("solvers: solver groups: state for %v groups: want %d", first(state), len(s.solvers))
	}
	rest := state[1:]
	for gi, sv := range s.solvers {
		if len(rest) < 1 || rest[0] < 0 || rest[0] != math.Trunc(rest[0]) || int(rest[0]) > len(rest)-1 {
			return fmt.Errorf("solvers: solver group %d: state truncated", gi)
		}
		n := int(rest[0])
		if err := sv.SetState(rest[1 : 1+n]); err != nil {
			return fmt.Errorf("solvers: solver group %d: %w", gi, err)
		}
		rest = rest[1+n:]
	}
	if len(rest) != 0 {
		return fmt.Errorf("solvers: solver groups: %d values after the last group", len(rest))
	}
	return nil
}

// first is state[0], or NaN for an empty state (for messages).
func first(state []float64) float64 {
	if len(state) == 0 {
		return math.NaN()
	}
	return state[0]
}
