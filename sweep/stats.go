package sweep

import "math"

// Estimate is a mean over seeds with its 95% interval.
type Estimate struct {
	N    int     // values behind it
	Mean float64 // NaN when N = 0
	CI95 float64 // half-width: t_{0.975, N-1} s / sqrt(N); NaN when N < 2
}

// Mean95 is the mean of xs (NaN values left out) with a Student t 95%
// interval.
func Mean95(xs []float64) Estimate {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	e := Estimate{N: len(v), Mean: math.NaN(), CI95: math.NaN()}
	if e.N == 0 {
		return e
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	e.Mean = sum / float64(e.N)
	if e.N < 2 {
		return e
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - e.Mean) * (x - e.Mean)
	}
	sd := math.Sqrt(ss / float64(e.N-1))
	e.CI95 = StudentT975(e.N-1) * sd / math.Sqrt(float64(e.N))
	return e
}

// StudentT975 is the 0.975 quantile of Student's t distribution with df
// degrees of freedom (12.706 at df = 1, 2.776 at 4, 1.960 in the limit):
// the root of the distribution function, by bisection.
func StudentT975(df int) float64 {
	nu := float64(df)
	// P(T > t) = I_{nu/(nu+t^2)}(nu/2, 1/2) / 2.
	tail := func(t float64) float64 { return 0.5 * regIncBeta(nu/2, 0.5, nu/(nu+t*t)) }
	lo, hi := 0.0, 1000.0
	for range 200 {
		mid := (lo + hi) / 2
		if tail(mid) > 0.025 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by its
// continued fraction (Numerical Recipes, section 6.4).
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, 1-x)/b
}

// betaFraction evaluates the continued fraction of I_x(a, b) by Lentz's
// method.
func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 10000; m++ {
		fm := float64(m)
		for _, num := range []float64{
			fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)),
			-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)),
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			h *= d * c
		}
		if math.Abs(d*c-1) < eps {
			break
		}
	}
	return h
}
