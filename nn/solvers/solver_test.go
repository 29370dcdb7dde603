package solvers

import (
	"math"
	"reflect"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// param is a ValueGrad outside any graph, for driving solvers directly.
type param struct{ w, g *tensor.Dense }

func newParam(w, g []float64) param { return param{vec(w), vec(g)} }

func (p param) Value() G.Value         { return p.w }
func (p param) Grad() (G.Value, error) { return p.g, nil }
func (p param) weights() []float64     { return p.w.Data().([]float64) }
func (p param) setGrad(g []float64)    { copy(p.g.Data().([]float64), g) }
func (p param) gradient() []float64    { return p.g.Data().([]float64) }

// vec is a float64 vector holding a copy of x.
func vec(x []float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(x)), tensor.WithBacking(append([]float64(nil), x...)))
}

// checkClose compares got with want element by element to rel times
// max(|want|, floor).
func checkClose(t *testing.T, what string, got, want []float64, rel, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= rel*math.Max(math.Abs(want[i]), floor)) {
			t.Errorf("%s[%d]: got %.17g, want %.17g (difference %.3g)", what, i, got[i], want[i], d)
		}
	}
}

func vgs(ps ...param) (out []G.ValueGrad) {
	for _, p := range ps {
		out = append(out, p)
	}
	return out
}

func TestOptimConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	with := func(f func(*Config)) Config { c := ok; f(&c); return c }
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"default", ok, ""},
		{"sgd", with(func(c *Config) { c.Name = "sgd" }), ""},
		{"adam", with(func(c *Config) { c.Name = "adam" }), ""},
		{"unknown", with(func(c *Config) { c.Name = "foo" }), `solvers: optimizer "foo": want sign, sgd or adam`},
		{"zero lr", with(func(c *Config) { c.LR = 0 }), "lr 0: want finite > 0"},
		{"NaN lr", with(func(c *Config) { c.LR = math.NaN() }), "lr NaN"},
		{"sign ignores beta1", with(func(c *Config) { c.Beta1 = 2 }), ""},
		{"adam beta1", with(func(c *Config) { c.Name, c.Beta1 = "adam", 1 }), "beta1 1: want in [0, 1)"},
		{"adam beta2", with(func(c *Config) { c.Name, c.Beta2 = "adam", -0.1 }), "beta2 -0.1: want in [0, 1)"},
		{"adam eps", with(func(c *Config) { c.Name, c.Eps = "adam", 0 }), "eps 0: want finite > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if _, serr := New(tt.cfg); (serr == nil) != (err == nil) {
				t.Errorf("New error %v disagrees with Validate error %v", serr, err)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got error %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSolversOneStep(t *testing.T) {
	w := []float64{1, 2, 3, 4, 5}
	g := []float64{0.5, -2, 0, 1e-3, math.Copysign(0, -1)}
	tests := []struct {
		cfg  Config
		want []float64
	}{
		// sign: w - 0.1 sign(g), sign(0) = sign(-0) = 0.
		{Config{Name: "sign", LR: 0.1}, []float64{0.9, 2.1, 3, 3.9, 5}},
		// sgd: w - 0.1 g.
		{Config{Name: "sgd", LR: 0.1}, []float64{0.95, 2.2, 3, 3.9999, 5}},
		// adam, first step: m/(1-b1) = g and v/(1-b2) = g^2, so w - 0.1 g/(|g| + eps).
		{Config{Name: "adam", LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
			[]float64{1 - 0.1*0.5/(0.5+1e-8), 2 + 0.1*2/(2+1e-8), 3, 4 - 0.1*1e-3/(1e-3+1e-8), 5}},
	}
	for _, tt := range tests {
		t.Run(tt.cfg.Name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := newParam(w, g)
			if err := s.Step(vgs(p)); err != nil {
				t.Fatal(err)
			}
			checkClose(t, "weights", p.weights(), tt.want, 1e-15, 1)
			if got := p.gradient(); !reflect.DeepEqual(got, []float64{0, 0, 0, 0, 0}) {
				t.Errorf("gradient after step: got %v, want zeroed", got)
			}
		})
	}
}

// TestAdamResumeBitIdentical runs Adam for 10 steps on two parameters, and
// again with the state saved after 4 steps and restored into a new solver.
func TestAdamResumeBitIdentical(t *testing.T) {
	cfg := Config{Name: "adam", LR: 0.05, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}
	grad := func(step int, w []float64) []float64 {
		g := make([]float64, len(w))
		for i, v := range w {
			g[i] = v - float64(i) + 0.1*float64(step%3) // a moving quadratic
		}
		return g
	}
	run := func(s Solver, a, b param, from, to int) {
		for k := from; k < to; k++ {
			a.setGrad(grad(k, a.weights()))
			b.setGrad(grad(k, b.weights()))
			if err := s.Step(vgs(a, b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	s1, _ := New(cfg)
	a1, b1 := newParam([]float64{1, -2, 3}, make([]float64, 3)), newParam([]float64{0.5, 7}, make([]float64, 2))
	run(s1, a1, b1, 0, 10)

	s2, _ := New(cfg)
	if got, want := s2.State(), []float64{0, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("fresh state: got %v, want %v", got, want)
	}
	a2, b2 := newParam([]float64{1, -2, 3}, make([]float64, 3)), newParam([]float64{0.5, 7}, make([]float64, 2))
	run(s2, a2, b2, 0, 4)
	state := s2.State()
	if got, want := len(state), 2+2+2*(3+2); got != want {
		t.Fatalf("state length: got %d, want %d", got, want)
	}
	if state[0] != 4 {
		t.Errorf("saved step count: got %v, want 4", state[0])
	}
	s3, _ := New(cfg)
	if err := s3.SetState(state); err != nil {
		t.Fatal(err)
	}
	if got := s3.State(); !reflect.DeepEqual(got, state) {
		t.Errorf("state round trip: got %v, want %v", got, state)
	}
	run(s3, a2, b2, 4, 10)
	if !reflect.DeepEqual(a2.weights(), a1.weights()) || !reflect.DeepEqual(b2.weights(), b1.weights()) {
		t.Errorf("resumed weights: got %v %v, want bit-identical %v %v", a2.weights(), b2.weights(), a1.weights(), b1.weights())
	}
	if got, want := s3.State(), s1.State(); !reflect.DeepEqual(got, want) {
		t.Errorf("resumed state: got %v, want %v", got, want)
	}
}

func TestSolverStateErrors(t *testing.T) {
	tests := []struct {
		name  string
		s     Solver
		state []float64
		want  string
	}{
		{"sign with state", &Sign{LR: 1}, []float64{1}, "want none"},
		{"sgd with state", &SGD{LR: 1}, []float64{1}, "want none"},
		{"adam too short", &Adam{}, []float64{1}, "want at least 2"},
		{"adam fractional step", &Adam{}, []float64{1.5, 0}, "step count 1.5"},
		{"adam negative count", &Adam{}, []float64{1, -1}, "parameter count -1"},
		{"adam missing sizes", &Adam{}, []float64{1, 2, 3}, "want at least 4"},
		{"adam wrong length", &Adam{}, []float64{1, 1, 2, 0, 0, 0}, "want 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.SetState(tt.state)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
	for _, s := range []Solver{&Sign{LR: 1}, &SGD{LR: 1}, &Adam{}} {
		if err := s.SetState(s.State()); err != nil {
			t.Errorf("%T: restoring its own state: got %v, want nil", s, err)
		}
	}
	// A state sized for one parameter refuses a model of two.
	a := &Adam{LR: 0.1, Beta1: 0.9, Beta2: 0.9, Eps: 1e-8}
	if err := a.SetState([]float64{0, 1, 1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	err := a.Step(vgs(newParam([]float64{1}, []float64{1}), newParam([]float64{1}, []float64{1})))
	if err == nil || !strings.Contains(err.Error(), "got 2 parameters, state holds 1") {
		t.Errorf("mismatched model: got error %v, want one naming the counts", err)
	}
	// A state sized for a parameter of 1 refuses one of 2, and moves nothing.
	p := newParam([]float64{1, 2}, []float64{1, 1})
	err = a.Step(vgs(p))
	if err == nil || !strings.Contains(err.Error(), "parameter 0 has 2 values, state holds 1") {
		t.Errorf("mismatched size: got error %v, want one naming the sizes", err)
	}
	if got, want := p.weights(), []float64{1, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("weights after a refused step: got %v, want unchanged %v", got, want)
	}
	if got := a.Steps(); got != 0 {
		t.Errorf("steps after a refused step: got %d, want 0", got)
	}
}

// BenchmarkSign times one sign-descent update of the paper's main size
// (16,500 weights; exact RLVR's headline runs one a step), gradients of
// random sign with some exact zeros.
func BenchmarkSign(b *testing.B) {
	const n = 16500
	w, g := make([]float64, n), make([]float64, n)
	for i := range g {
		g[i] = float64(i%7) - 3 // -3..3: a zero in seven
	}
	p := newParam(w, g)
	s := &Sign{LR: 0.01}
	model := []G.ValueGrad{p}
	b.ReportAllocs()
	for b.Loop() {
		p.setGrad(g)
		if err := s.Step(model); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "weights/s")
}

// TestSignStepIsCopysign: the bit-built sign step equals w -= Copysign(LR *
// [d != 0], d) bit for bit, for zeros of both signs, infinities, NaN,
// subnormals and ordinary gradients, on weights of both zero signs.
func TestSignStepIsCopysign(t *testing.T) {
	ds := []float64{0, math.Copysign(0, -1), 1, -1, 3.5e-300, -5e-324, 5e-324, math.Inf(1), math.Inf(-1), math.NaN(), 1e300, -2.25}
	for _, lr := range []float64{0.01, 0.025, 1e-300} {
		for _, w0 := range []float64{0, math.Copysign(0, -1), 0.01, -7.5} {
			w, g := make([]float64, len(ds)), append([]float64(nil), ds...)
			for i := range w {
				w[i] = w0
			}
			p := newParam(w, g)
			if err := (&Sign{LR: lr}).Step([]G.ValueGrad{p}); err != nil {
				t.Fatal(err)
			}
			for i, d := range ds {
				b := math.Float64bits(d) << 1
				want := w0 - math.Copysign(lr*float64((b|-b)>>63), d)
				if got := p.weights()[i]; math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("lr %g, w %g, d %g: got %v (%#x), want %v (%#x)", lr, w0, d, got, math.Float64bits(got), want, math.Float64bits(want))
				}
			}
		}
	}
}
