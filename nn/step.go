package nn

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/rlvr-backtrack/backtrack/nn/kernels"
	"github.com/rlvr-backtrack/backtrack/nn/ops"
)

// Step runs training steps on one graph: it owns the gradient nodes of a
// scalar cost with respect to the learnables, one tape machine compiled once
// for the whole graph, and the solver. Each Run evaluates the cost and its
// gradient, lets the solver update the learnables in place and resets the
// machine.
//
// The tape machine runs every node of the graph, so a graph should hold one
// cost. Fill the cost's input nodes with G.Let before each Run. A Step is
// not safe for concurrent use; use one graph and one Step per goroutine.
type Step struct {
	vm         G.VM
	solver     G.Solver
	learnables []G.ValueGrad
	cost       G.Value     // filled by the read node at each run
	acc        [][]float64 // gradients summed by Accumulate, per learnable
	applied    bool        // acc holds the gradient of the last Apply
	gradNorm   float64     // L2 norm of the last update's gradient
}

// GradNorm is the L2 norm, over every learnable, of the gradient of the
// last update (Run or Apply) before the solver used it; 0 before any.
func (s *Step) GradNorm() float64 { return s.gradNorm }

// NewStep adds the gradient of cost with respect to learnables to the
// cost's graph and compiles the graph into a tape machine. Build the whole
// graph before calling it. Close the Step when done.
func NewStep(cost *G.Node, learnables G.Nodes, solver G.Solver) (s *Step, err error) {
	defer recoverGraph("step", &err)
	if cost == nil || !cost.IsScalar() {
		return nil, fmt.Errorf("nn: step: cost must be a scalar node")
	}
	if len(learnables) == 0 {
		return nil, fmt.Errorf("nn: step: no learnables")
	}
	if solver == nil {
		return nil, fmt.Errorf("nn: step: nil solver")
	}
	if _, err := G.Grad(cost, learnables...); err != nil {
		return nil, fmt.Errorf("nn: step: gradient: %w", err)
	}
	s = &Step{solver: solver, learnables: G.NodesToValueGrads(learnables)}
	// The cost is copied out by a read node while the machine runs: the
	// register behind cost.Value() can be reused by later instructions
	// (see TestTapeMachineStaleValue in nn/stock).
	G.Read(cost, &s.cost)
	s.vm = G.NewTapeMachine(cost.Graph())
	return s, nil
}

// Run takes one step and returns the cost before the update.
//
// gorgonia's TapeMachine.RunAll executes the tape on a goroutine of its own,
// so a panic inside an op cannot be recovered here and ends the program;
// the ops of this package return errors instead of panicking.
func (s *Step) Run() (cost float64, err error) {
	defer recoverGraph("step", &err)
	defer s.vm.Reset()
	if err := s.vm.RunAll(); err != nil {
		return 0, fmt.Errorf("nn: step: run: %w", err)
	}
	cost, err = ops.Scalar(s.cost)
	if err != nil {
		return 0, fmt.Errorf("nn: step: cost: %w", err)
	}
	if math.IsNaN(cost) || math.IsInf(cost, 0) {
		return cost, fmt.Errorf("nn: step: loss is %v; parameters not updated", cost)
	}
	if s.gradNorm, err = s.checkedNorm(); err != nil {
		return cost, err
	}
	if err := s.solver.Step(s.learnables); err != nil {
		return 0, fmt.Errorf("nn: step: update: %w", err)
	}
	return cost, nil
}

// Accumulate evaluates the cost and its gradient, adds the gradient to a
// sum kept by the Step and leaves the learnables unchanged; Apply then
// updates them from the sum. A loss too large for one graph (many windows
// of a long batch) is the sum of the losses of several fills of the same
// graph, and so is its gradient. It refuses NaN or infinite costs and
// gradients as Run does.
func (s *Step) Accumulate() (cost float64, err error) {
	defer recoverGraph("step", &err)
	defer s.vm.Reset()
	if err := s.vm.RunAll(); err != nil {
		return 0, fmt.Errorf("nn: step: run: %w", err)
	}
	if cost, err = ops.Scalar(s.cost); err != nil {
		return 0, fmt.Errorf("nn: step: cost: %w", err)
	}
	if math.IsNaN(cost) || math.IsInf(cost, 0) {
		return cost, fmt.Errorf("nn: step: loss is %v; nothing accumulated", cost)
	}
	if _, err := s.checkedNorm(); err != nil {
		return cost, err
	}
	if s.acc == nil {
		s.acc = make([][]float64, len(s.learnables))
	}
	if s.applied { // a new sum
		for _, a := range s.acc {
			clear(a)
		}
		s.applied = false
	}
	for i, vg := range s.learnables {
		gr, _ := vg.Grad() // checked above
		data := gr.Data().([]float64)
		if s.acc[i] == nil {
			s.acc[i] = make([]float64, len(data))
		}
		for j, g := range data {
			s.acc[i][j] += g
		}
		clear(data) // gorgonia may add the next run's gradient to it
	}
	return cost, nil
}

// Apply updates the learnables from the gradients summed by Accumulate
// since the last Apply; the next Accumulate starts a new sum.
func (s *Step) Apply() (err error) {
	defer recoverGraph("step", &err)
	if s.acc == nil || s.applied {
		return fmt.Errorf("nn: step: apply without an accumulate since the last")
	}
	for i, vg := range s.learnables {
		gr, err := vg.Grad()
		if err != nil {
			return fmt.Errorf("nn: step: gradient: %w", err)
		}
		copy(gr.Data().([]float64), s.acc[i])
	}
	s.applied = true
	s.gradNorm = s.norm()
	if err := s.solver.Step(s.learnables); err != nil {
		return fmt.Errorf("nn: step: update: %w", err)
	}
	return nil
}

// Applied returns the gradient the last Apply gave the solver, per
// learnable (the sum of the Accumulates before it), or nil when Apply has
// not run since the last Accumulate. Do not modify it.
func (s *Step) Applied() [][]float64 {
	if !s.applied {
		return nil
	}
	return s.acc
}

// norm is the L2 norm of the learnables' gradients.
func (s *Step) norm() float64 {
	sq := 0.0
	for _, vg := range s.learnables {
		if gr, err := vg.Grad(); err == nil {
			if data, ok := gr.Data().([]float64); ok {
				sq += kernels.SumSquares(data)
			}
		}
	}
	return math.Sqrt(sq)
}

// checkedNorm returns the L2 norm of the learnables' gradients, refusing a
// NaN or infinite gradient before any solver sees it: sign descent would
// turn a NaN into a silent full step.
func (s *Step) checkedNorm() (float64, error) {
	if n := s.norm(); !math.IsNaN(n) && !math.IsInf(n, 0) {
		return n, nil
	}
	for _, vg := range s.learnables {
		gr, err := vg.Grad()
		if err != nil {
			return 0, fmt.Errorf("nn: step: gradient: %w", err)
		}
		data, ok := gr.Data().([]float64)
		if !ok {
			continue
		}
		for i, g := range data {
			if math.IsNaN(g) || math.IsInf(g, 0) {
				name := "parameter"
				if n, ok := vg.(*G.Node); ok {
					name = n.Name()
				}
				return 0, fmt.Errorf("nn: step: gradient of %s[%d] is %v; parameters not updated", name, i, g)
			}
		}
	}
	return math.Inf(1), nil // finite gradients whose squares overflow
}

// Eval evaluates the cost (and, as a by-product, its gradient) without
// updating the learnables.
func (s *Step) Eval() (cost float64, err error) {
	defer recoverGraph("step", &err)
	defer s.vm.Reset()
	if err := s.vm.RunAll(); err != nil {
		return 0, fmt.Errorf("nn: step: run: %w", err)
	}
	return ops.Scalar(s.cost)
}

// Close releases the tape machine.
func (s *Step) Close() error { return s.vm.Close() }

// recoverGraph turns a panic raised while building or running a gorgonia
// graph into an error, at the exported boundary. Use as
// defer recoverGraph("what", &err) in a function with a named error result.
func recoverGraph(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("nn: %s: gorgonia panic: %v", what, r)
	}
}
