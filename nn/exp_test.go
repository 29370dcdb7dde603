package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp: exp agrees with math.Exp to 2 units in the last place over the
// whole normal range (random and chosen arguments), and exactly at the
// edges and special values it leaves to math.Exp.
func TestExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 1e-300, -1e-300, math.Ln2, -math.Ln2 / 256, 50 * math.Ln2, -707.99, 708.99, -5e-3, 2.7e-3}
	for range 200000 {
		xs = append(xs, -750+760*rng.Float64(), -1-rng.ExpFloat64()*3, 0.01*rng.NormFloat64())
	}
	for _, x := range xs {
		got, want := exp(x), math.Exp(x)
		if math.Abs(got-want) > 2*ulp(want) {
			t.Fatalf("exp(%v): got %v, want %v (%v ulp)", x, got, want, math.Abs(got-want)/ulp(want))
		}
	}
	for _, x := range []float64{-708, 709, -745.2, -800, 710, math.Inf(-1), math.Inf(1)} {
		if got, want := exp(x), math.Exp(x); got != want {
			t.Errorf("exp(%v): got %v, want %v", x, got, want)
		}
	}
	if got := exp(math.NaN()); !math.IsNaN(got) {
		t.Errorf("exp(NaN): got %v, want NaN", got)
	}
}

// ulp is the spacing of float64 values at |x|.
func ulp(x float64) float64 {
	x = math.Abs(x)
	return math.Nextafter(x, math.Inf(1)) - x
}

// BenchmarkExp compares exp with math.Exp on arguments in [-10, 0], the
// range of a max-shifted softmax.
func BenchmarkExp(b *testing.B) {
	xs := make([]float64, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range xs {
		xs[i] = -10 * rng.Float64()
	}
	for _, c := range []struct {
		name string
		f    func(float64) float64
	}{{"exp", exp}, {"math.Exp", math.Exp}} {
		b.Run(c.name, func(b *testing.B) {
			s := 0.0
			for i := 0; b.Loop(); i++ {
				s += c.f(xs[i&1023])
			}
			_ = s
		})
	}
}
