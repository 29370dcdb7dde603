package solvers

import (
	"math"
	"reflect"
	"testing"
)

// TestGroupSolver: each group moves its parameters exactly as its own
// solver alone would; the state round-trips; SetLR keeps the groups' ratio;
// a parameter in no group or in two is refused.
func TestGroupSolver(t *testing.T) {
	adam := Config{Name: "adam", LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	sgd := Config{Name: "sgd", LR: 0.5}
	gs, err := NewGroups(3, []Group{{adam, []int{0, 2}}, {sgd, []int{1}}})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := newParam([]float64{1, 2}, make([]float64, 2)), newParam([]float64{3}, make([]float64, 1)), newParam([]float64{4, 5, 6}, make([]float64, 3))
	ra, rc := newParam([]float64{1, 2}, make([]float64, 2)), newParam([]float64{4, 5, 6}, make([]float64, 3))
	ref, _ := New(adam)
	grads := [][]float64{{0.3, -1}, {2}, {-0.5, 0, 7}}
	for step := range 3 {
		a.setGrad(grads[0])
		b.setGrad(grads[1])
		c.setGrad(grads[2])
		ra.setGrad(grads[0])
		rc.setGrad(grads[2])
		if err := gs.Step(vgs(a, b, c)); err != nil {
			t.Fatal(err)
		}
		if err := ref.Step(vgs(ra, rc)); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a.weights(), ra.weights()) || !reflect.DeepEqual(c.weights(), rc.weights()) {
			t.Fatalf("step %d: adam group %v %v, adam alone %v %v", step, a.weights(), c.weights(), ra.weights(), rc.weights())
		}
		if want := 3 - 0.5*2*float64(step+1); b.weights()[0] != want {
			t.Fatalf("step %d: sgd group %v, want %v", step, b.weights()[0], want)
		}
	}
	again, _ := NewGroups(3, []Group{{adam, []int{0, 2}}, {sgd, []int{1}}})
	if err := again.SetState(gs.State()); err != nil || !reflect.DeepEqual(again.State(), gs.State()) {
		t.Errorf("state round trip: %v", err)
	}
	if err := again.SetState(gs.State()[:5]); err == nil {
		t.Error("a truncated state: got no error")
	}
	gs.SetLR(0.01)
	if got := gs.solvers[1].(*SGD).LR; math.Abs(got-0.05) > 1e-15 {
		t.Errorf("SetLR(0.01): second group lr %v, want 0.05 (the ratio kept)", got)
	}
	for _, groups := range [][]Group{{{adam, []int{0, 1}}}, {{adam, []int{0, 1, 2}}, {sgd, []int{1}}}} {
		if _, err := NewGroups(3, groups); err == nil {
			t.Errorf("%v: got no error", groups)
		}
	}
}
