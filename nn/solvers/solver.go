package solvers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Solver is a gorgonia solver whose state can be saved and restored
// exactly, so that a run resumed from a checkpoint is bit-identical.
//
// Step updates each value in place from its gradient and then zeroes the
// gradient, as gorgonia's own solvers do (gradients bound with
// G.BindDualValues accumulate across runs otherwise).
type Solver interface {
	G.Solver
	// State returns a copy of the optimiser state as a flat vector (empty
	// for stateless solvers); see each solver for its layout.
	State() []float64
	// SetState restores a vector returned by State.
	SetState(state []float64) error
	// SetLR changes the learning rate (for schedules).
	SetLR(lr float64)
}

// Compile-time interface checks.
var (
	_ Solver = (*Sign)(nil)
	_ Solver = (*SGD)(nil)
	_ Solver = (*Adam)(nil)
)

// Config selects and configures an optimiser.
type Config struct {
	Name  string  `json:"name"`  // sign, sgd or adam
	LR    float64 `json:"lr"`    // learning rate, > 0
	Beta1 float64 `json:"beta1"` // adam: first-moment decay, in [0, 1)
	Beta2 float64 `json:"beta2"` // adam: second-moment decay, in [0, 1)
	Eps   float64 `json:"eps"`   // adam: denominator smoothing, > 0
}

// DefaultConfig returns the paper's sign gradient descent with step
// 0.01, with the usual Adam constants filled in for a switch to adam.
func DefaultConfig() Config {
	return Config{Name: "sign", LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// Validate checks the name and the ranges of the fields the solver uses.
func (c Config) Validate() error {
	switch c.Name {
	case "sign", "sgd", "adam":
	default:
		return fmt.Errorf("solvers: optimizer %q: want sign, sgd or adam", c.Name)
	}
	if !(c.LR > 0) || math.IsInf(c.LR, 0) {
		return fmt.Errorf("solvers: optimizer %s: lr %v: want finite > 0", c.Name, c.LR)
	}
	if c.Name != "adam" {
		return nil
	}
	if !(c.Beta1 >= 0 && c.Beta1 < 1) {
		return fmt.Errorf("solvers: optimizer adam: beta1 %v: want in [0, 1)", c.Beta1)
	}
	if !(c.Beta2 >= 0 && c.Beta2 < 1) {
		return fmt.Errorf("solvers: optimizer adam: beta2 %v: want in [0, 1)", c.Beta2)
	}
	if !(c.Eps > 0) || math.IsInf(c.Eps, 0) {
		return fmt.Errorf("solvers: optimizer adam: eps %v: want finite > 0", c.Eps)
	}
	return nil
}

// New returns the solver cfg names, with fresh state.
func New(cfg Config) (Solver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.Name {
	case "sign":
		return &Sign{LR: cfg.LR}, nil
	case "sgd":
		return &SGD{LR: cfg.LR}, nil
	default:
		return &Adam{LR: cfg.LR, Beta1: cfg.Beta1, Beta2: cfg.Beta2, Eps: cfg.Eps}, nil
	}
}

// Sign is sign gradient descent, the paper's optimiser:
// theta -= LR * sign(grad), with sign(0) = 0. It has no state.
type Sign struct {
	LR float64
}

// SetLR changes the step size.
func (s *Sign) SetLR(lr float64) { s.LR = lr }

// SetLR changes the learning rate.
func (s *SGD) SetLR(lr float64) { s.LR = lr }

// Step applies one sign update to every value.
func (s *Sign) Step(model []G.ValueGrad) error {
	lr := math.Float64bits(math.Abs(s.LR))
	return eachParam("sign", model, func(_ int, w, g []float64) {
		g = g[:len(w)]
		for i, d := range g {
			// Branch-free w -= LR * sign(d), built from bits: the gradient
			// signs of a policy are close to random, so a branch would be
			// mispredicted often. The step is |LR| with d's sign, or a zero
			// with d's sign when d is +0 or -0 (Copysign(LR * 0, d), as
			// before, bit for bit).
			b := math.Float64bits(d)
			mag := b << 1
			nonzero := -((mag | -mag) >> 63) // all ones unless d is +0 or -0
			w[i] -= math.Float64frombits(lr&nonzero | b&(1<<63))
		}
	})
}

// State returns an empty state.
func (s *Sign) State() []float64 { return []float64{} }

// SetState accepts only an empty state.
func (s *Sign) SetState(state []float64) error { return checkNoState("sign", state) }

// SGD is plain gradient descent: theta -= LR * grad. It has no state.
//
// gorgonia's VanillaSolver would do the same, but a few lines here keep the
// three solvers on one code path (eachParam) with one state contract.
type SGD struct {
	LR float64
}

// Step applies one gradient-descent update to every value.
func (s *SGD) Step(model []G.ValueGrad) error {
	return eachParam("sgd", model, func(_ int, w, g []float64) {
		for i, d := range g {
			w[i] -= s.LR * d
		}
	})
}

// State returns an empty state.
func (s *SGD) State() []float64 { return []float64{} }

// SetState accepts only an empty state.
func (s *SGD) SetState(state []float64) error { return checkNoState("sgd", state) }

func checkNoState(name string, state []float64) error {
	if len(state) != 0 {
		return fmt.Errorf("solvers: optimizer %s: got %d state values, want none", name, len(state))
	}
	return nil
}

// eachParam checks every value and gradient of model is a float64 tensor
// of the same size, calls update(k, weights, grad) for the k-th, then zeroes
// the gradient.
func eachParam(name string, model []G.ValueGrad, update func(k int, w, g []float64)) error {
	for k, vg := range model {
		wv := vg.Value()
		gv, err := vg.Grad()
		if err != nil {
			return fmt.Errorf("solvers: optimizer %s: parameter %d: %w", name, k, err)
		}
		w, ok := wv.Data().([]float64)
		if !ok {
			return fmt.Errorf("solvers: optimizer %s: parameter %d holds %T: want float64 data", name, k, wv.Data())
		}
		gd, ok := gv.(*tensor.Dense)
		if !ok || gd.RequiresIterator() {
			return fmt.Errorf("solvers: optimizer %s: parameter %d: gradient %T: want a contiguous dense tensor", name, k, gv)
		}
		g, ok := gd.Data().([]float64)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("solvers: optimizer %s: parameter %d: gradient of %d values for %d weights", name, k, gd.Size(), len(w))
		}
		update(k, w, g)
		clear(g)
	}
	return nil
}
