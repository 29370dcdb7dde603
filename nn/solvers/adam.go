package solvers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
)

// Adam is the Adam optimiser (Kingma and Ba, 2015) with bias correction:
//
//	m = Beta1 m + (1-Beta1) g,  v = Beta2 v + (1-Beta2) g^2,  t = t+1
//	theta -= LR * (m / (1-Beta1^t)) / (sqrt(v / (1-Beta2^t)) + Eps)
//
// so its first step moves each coordinate by LR * g/(|g|+Eps), about
// LR * sign(g).
//
// We do not use gorgonia's AdamSolver: its step count and moments are
// unexported fields (iter, cache), so a checkpoint could not save them and a
// resumed run would restart the bias correction and lose the moments. This
// one exposes them through State and SetState.
type Adam struct {
	LR, Beta1, Beta2, Eps float64

	t    int         // steps taken
	m, v [][]float64 // moments, one slice per parameter, in model order
}

// Step applies one Adam update to every value. The moments are sized on the
// first step (or by SetState); later steps must pass the same parameters in
// the same order.
func (s *Adam) Step(model []G.ValueGrad) error {
	if s.m == nil {
		s.m = make([][]float64, len(model))
		s.v = make([][]float64, len(model))
	}
	if len(s.m) != len(model) {
		return fmt.Errorf("solvers: optimizer adam: got %d parameters, state holds %d", len(model), len(s.m))
	}
	// Check every size before updating anything.
	for k, vg := range model {
		if n := vg.Value().Shape().TotalSize(); s.m[k] != nil && len(s.m[k]) != n {
			return fmt.Errorf("solvers: optimizer adam: parameter %d has %d values, state holds %d", k, n, len(s.m[k]))
		}
	}
	t := s.t + 1
	c1 := 1 - math.Pow(s.Beta1, float64(t))
	c2 := 1 - math.Pow(s.Beta2, float64(t))
	err := eachParam("adam", model, func(k int, w, g []float64) {
		if s.m[k] == nil {
			s.m[k] = make([]float64, len(w))
			s.v[k] = make([]float64, len(w))
		}
		m, v := s.m[k], s.v[k]
		for i, d := range g {
			m[i] = s.Beta1*m[i] + (1-s.Beta1)*d
			v[i] = s.Beta2*v[i] + (1-s.Beta2)*d*d
			w[i] -= s.LR * (m[i] / c1) / (math.Sqrt(v[i]/c2) + s.Eps)
		}
	})
	if err != nil {
		return err
	}
	s.t = t
	return nil
}

// SetLR changes the learning rate.
func (s *Adam) SetLR(lr float64) { s.LR = lr }

// Steps returns the number of steps taken.
func (s *Adam) Steps() int { return s.t }

// State returns [t, K, n_1 .. n_K, m_1, v_1, .., m_K, v_K]: the step count,
// the number of parameters, their sizes, then each parameter's first and
// second moments. Before the first step it is [0, 0]. Counts are stored as
// float64, exact below 2^53.
func (s *Adam) State() []float64 {
	out := []float64{float64(s.t), float64(len(s.m))}
	for _, m := range s.m {
		out = append(out, float64(len(m)))
	}
	for k := range s.m {
		out = append(out, s.m[k]...)
		out = append(out, s.v[k]...)
	}
	return out
}

// SetState restores a state returned by State.
func (s *Adam) SetState(state []float64) error {
	count := func(x float64, what string) (int, error) {
		if x < 0 || x != math.Trunc(x) || x > 1<<53 {
			return 0, fmt.Errorf("solvers: optimizer adam: state %s %v: want a non-negative integer", what, x)
		}
		return int(x), nil
	}
	if len(state) < 2 {
		return fmt.Errorf("solvers: optimizer adam: state has %d values: want at least 2", len(state))
	}
	t, err := count(state[0], "step count")
	if err != nil {
		return err
	}
	k, err := count(state[1], "parameter count")
	if err != nil {
		return err
	}
	if len(state) < 2+k {
		return fmt.Errorf("solvers: optimizer adam: state has %d values: want at least %d for %d parameters", len(state), 2+k, k)
	}
	sizes := make([]int, k)
	want := 2 + k
	for i := range sizes {
		if sizes[i], err = count(state[2+i], "parameter size"); err != nil {
			return err
		}
		want += 2 * sizes[i]
	}
	if len(state) != want {
		return fmt.Errorf("solvers: optimizer adam: state has %d values: want %d", len(state), want)
	}
	var m, v [][]float64
	if k > 0 {
		m, v = make([][]float64, k), make([][]float64, k)
	}
	rest := state[2+k:]
	for i, n := range sizes {
		m[i] = append([]float64(nil), rest[:n]...)
		v[i] = append([]float64(nil), rest[n:2*n]...)
		rest = rest[2*n:]
	}
	s.t, s.m, s.v = t, m, v
	return nil
}
