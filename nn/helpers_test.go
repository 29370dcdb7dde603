package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// vec returns a float64 vector backed by a copy of x.
func vec(x []float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(x)), tensor.WithBacking(append([]float64(nil), x...)))
}

// centralDiff returns the central finite-difference gradient of f at x,
// dividing by the steps actually taken (x+h rounds at large |x|).
func centralDiff(f func([]float64) float64, x []float64, h float64) []float64 {
	grad := make([]float64, len(x))
	y := append([]float64(nil), x...)
	for i := range x {
		y[i] = x[i] + h
		up := y[i]
		fp := f(y)
		y[i] = x[i] - h
		down := y[i]
		fm := f(y)
		y[i] = x[i]
		grad[i] = (fp - fm) / (up - down)
	}
	return grad
}

// checkClose reports entries where |got-want| > rel*max(|want|, floor).
func checkClose(t *testing.T, what string, got, want []float64, rel, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.IsNaN(got[i]) || math.IsInf(got[i], 0) {
			t.Errorf("%s[%d]: got %v, want finite %v", what, i, got[i], want[i])
			continue
		}
		if d := math.Abs(got[i] - want[i]); d > rel*math.Max(math.Abs(want[i]), floor) {
			t.Errorf("%s[%d]: got %.17g, want %.17g (difference %.3g)", what, i, got[i], want[i], d)
		}
	}
}

// randomWindows returns b windows of 1 to n tokens at random starts, with a
// random prompt when prompt is true (-1 otherwise).
func randomWindows(rng *rand.Rand, s Support, b, n int, prompt bool) []Window {
	rows := make([]Window, b)
	for i := range rows {
		p := -1
		if prompt {
			p = rng.IntN(s.Rows())
		}
		rows[i] = Window{Prompt: p, Start: rng.IntN(10), Tokens: randomWalk(rng, s, 1+rng.IntN(n))}
	}
	return rows
}
