package sweep

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

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
// degrees of freedom (12.706 at df = 1, 2.776 at 4, 1.960 in the limit),
// gonum's.
func StudentT975(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
}
