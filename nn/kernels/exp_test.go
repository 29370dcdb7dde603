package kernels

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
		got, want := Exp(x), math.Exp(x)
		if math.Abs(got-want) > 2*ulp(want) {
			t.Fatalf("Exp(%v): got %v, want %v (%v ulp)", x, got, want, math.Abs(got-want)/ulp(want))
		}
	}
	for _, x := range []float64{-708, 709, -745.2, -800, 710, math.Inf(-1), math.Inf(1)} {
		if got, want := Exp(x), math.Exp(x); got != want {
			t.Errorf("Exp(%v): got %v, want %v", x, got, want)
		}
	}
	if got := Exp(math.NaN()); !math.IsNaN(got) {
		t.Errorf("Exp(NaN): got %v, want NaN", got)
	}
}

// TestExps: exps agrees with math.Exp to 2 units in the last place on
// rows of every length from 0 to 13 (the 4-wide blocks and the scalar
// tail), in place and not, with a shift, and on rows with an argument out
// of the vector range (masked logits, -1e9), which go to exp.
func TestExps(t *testing.T) { checkExps(t) }

func checkExps(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(13, 14))
	for round := range 3000 {
		n := round % 14
		src := make([]float64, n)
		for i := range src {
			src[i] = 30 * rng.NormFloat64()
		}
		if round%7 == 0 && n > 0 {
			src[rng.IntN(n)] = -1e9 // a masked logit
		}
		m := 0.0
		if n > 0 {
			m = src[0] + rng.NormFloat64()
		}
		if round%11 == 0 && n > 0 { // past the vector range, above and by NaN: the scalar path's
			src[rng.IntN(n)] = []float64{m + 720, math.NaN()}[round/11%2]
		}
		dst := make([]float64, n)
		Exps(dst, src, m)
		for i, v := range src {
			want := math.Exp(v - m) // an infinite one is matched exactly (its ulp is NaN)
			if math.IsNaN(want) != math.IsNaN(dst[i]) || !math.IsNaN(want) && dst[i] != want && !(math.Abs(dst[i]-want) <= 2*ulp(want)) {
				t.Fatalf("round %d: exps[%d] of %v - %v: got %v, want %v", round, i, v, m, dst[i], want)
			}
		}
		want := append([]float64(nil), dst...)
		Exps(src, src, m)
		for i := range src {
			if src[i] != want[i] && !(math.IsNaN(src[i]) && math.IsNaN(want[i])) {
				t.Fatalf("round %d: in place [%d]: got %v, want %v", round, i, src[i], want[i])
			}
		}
	}
}

// ulp is the spacing of float64 values at |x|.
func ulp(x float64) float64 {
	x = math.Abs(x)
	return math.Nextafter(x, math.Inf(1)) - x
}

// BenchmarkExp compares exp and exps (per element, on rows of 1024) with
// math.Exp on arguments in [-10, 0], the range of a max-shifted softmax.
func BenchmarkExp(b *testing.B) {
	xs := make([]float64, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range xs {
		xs[i] = -10 * rng.Float64()
	}
	for _, c := range []struct {
		name string
		f    func(float64) float64
	}{{"Exp", Exp}, {"math.Exp", math.Exp}} {
		b.Run(c.name, func(b *testing.B) {
			s := 0.0
			for i := 0; b.Loop(); i++ {
				s += c.f(xs[i&1023])
			}
			_ = s
		})
	}
	b.Run("Exps", func(b *testing.B) { // per element
		dst := make([]float64, len(xs))
		for b.Loop() {
			Exps(dst, xs, 0)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(xs)), "ns/element")
	})
}

// TestLogs checks Logs against math.Log bit for bit: at every length to
// 13 (blocks of four and a scalar tail), in place and not, over sums of
// exponentials (the table pass's arguments), values near archLog's
// boundary sqrt(2)/2 and near powers of 2, huge and tiny normals, and
// blocks holding a subnormal, zero, a negative, an infinity or NaN (the
// scalar path's).
func TestLogs(t *testing.T) { checkLogs(t) }

func checkLogs(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(15, 16))
	special := []float64{0x1p-1074, 0x1p-1030, 0, math.Copysign(0, -1), -1, math.Inf(1), math.Inf(-1), math.NaN(), 0x1p-1022, math.MaxFloat64}
	for round := range 20000 {
		x := make([]float64, round%14)
		for i := range x {
			switch k := rng.IntN(8); k {
			case 0:
				x[i] = math.Nextafter(7.07106781186547524401e-01*math.Ldexp(1, rng.IntN(40)-20), math.Inf(rng.IntN(3)-1))
			case 1:
				x[i] = math.Ldexp(1, rng.IntN(2000)-1000) * (1 + 1e-15*float64(rng.IntN(5)-2))
			case 2:
				x[i] = math.Exp(700 * rng.NormFloat64())
			default:
				x[i] = 1 + float64(rng.IntN(6))*rng.Float64() // a sum of exponentials, the largest 1
			}
		}
		if round%9 == 0 && len(x) > 0 {
			x[rng.IntN(len(x))] = special[rng.IntN(len(special))]
		}
		got := make([]float64, len(x))
		Logs(got, x)
		for i, v := range x {
			if want := math.Log(v); math.Float64bits(got[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(got[i])) {
				t.Fatalf("round %d: log(%v) [%d of %v] = %v (%x), want math.Log's %v (%x)", round, v, i, x, got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
			}
		}
		Logs(x, x)
		for i := range x {
			if math.Float64bits(got[i]) != math.Float64bits(x[i]) && !(math.IsNaN(got[i]) && math.IsNaN(x[i])) {
				t.Fatalf("round %d: in place [%d]: %v, want %v", round, i, x[i], got[i])
			}
		}
	}
}

// TestExpsTail checks that Exps's last len % 4 arguments get the scalar
// Exp's bits (its one vector call for them does Exp's operations lane by
// lane), over 300,000 arguments across exp's range: where a fused
// multiply-add would round differently, about one argument in 1,500
// (the last product and sum fused was tried, and fails here).
func TestExpsTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	src, dst := make([]float64, 7), make([]float64, 7)
	for round := range 100000 {
		n := []int{1, 2, 3, 5, 6, 7}[round%6]
		scale := []float64{1, 30, 300}[round%3]
		for i := range src[:n] {
			src[i] = scale * rng.NormFloat64()
		}
		m := src[0] * rng.Float64()
		Exps(dst[:n], src[:n], m)
		for i := n &^ 3; i < n; i++ {
			x := src[i] - m
			if !(x > -708 && x < 709) {
				continue
			}
			if want := Exp(x); math.Float64bits(dst[i]) != math.Float64bits(want) {
				t.Fatalf("round %d: exps[%d of %d] of %v: %v, want Exp's %v", round, i, n, x, dst[i], want)
			}
		}
	}
}

// BenchmarkExpsRow times Exps on a row of six, a support row's length at
// the paper's size (four through the vector path, two through the
// scalar tail), as the sampler's log-softmax calls it.
func BenchmarkExpsRow(b *testing.B) {
	src, dst := []float64{-0.3, 0.1, -1.2, 0.4, -0.7, 0.2}, make([]float64, 6)
	for b.Loop() {
		Exps(dst, src, 0.4)
	}
}
