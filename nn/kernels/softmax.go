package kernels

import "math"

// LogSoftmaxRows writes out[e] = (x[e] - m) - log sum exp(x - m) row by
// row, the rows being x[offsets[r]:offsets[r+1]] and m each row's maximum:
// the largest term of the sum is exp(0) = 1 (added as 1, without calling
// exp), so the sum lies in [1, len(row)] and neither overflows nor
// underflows to 0. out may alias x; lse is scratch of one value per row
// (nil: allocated here).
//
// The logs of the row sums are taken in a separate loop: there they do not
// wait on one another, while inside the row loop each log waits on its row's
// sum (about 4x slower at rows of 6).
func LogSoftmaxRows(out, x []float64, offsets []int, lse []float64) {
	if lse == nil {
		lse = make([]float64, len(offsets)-1)
	}
	lo := offsets[0]
	for r, hi := range offsets[1:] {
		row, o := x[lo:hi], out[lo:hi]
		o = o[:len(row)]
		lo = hi
		m, j := row[0], 0
		for i, v := range row {
			if v > m {
				m, j = v, i
			}
		}
		sum := 1.0
		for i, v := range row {
			d := v - m
			o[i] = d
			if i != j {
				sum += Exp(d)
			}
		}
		lse[r] = sum
	}
	for r, sum := range lse {
		lse[r] = math.Log(sum)
	}
	lo = offsets[0]
	for r, hi := range offsets[1:] {
		l, o := lse[r], out[lo:hi]
		for i := range o {
			o[i] -= l
		}
		lo = hi
	}
}

// LogSoftmaxRowsBackward writes grad[e] = g[e] - pi[e] * sum_row(g), the
// vector-Jacobian product of LogSoftmaxRows, pi the softmax.
func LogSoftmaxRowsBackward(grad, pi, g []float64, offsets []int) {
	for r := 0; r+1 < len(offsets); r++ {
		lo, hi := offsets[r], offsets[r+1]
		gr := g[lo:hi]
		sum := 0.0
		for _, v := range gr {
			sum += v
		}
		p, o := pi[lo:hi], grad[lo:hi]
		for i, v := range gr {
			o[i] = v - p[i]*sum
		}
	}
}

// LogSoftmax writes the log-softmax of the row z into logp (which may
// alias z) and its softmax into prob, as LogSoftmaxRows does on one row
// (to rounding: the exponentials are taken four at a time by Exps and
// summed in row order); each exponential is taken once for both. It
// returns the row's maximum m and l = log sum exp(z - m): log-softmax(z) =
// (z - m) - l.
func LogSoftmax(logp, prob, z []float64) (m, l float64) {
	prob = prob[:len(z)]
	logp = logp[:len(z)]
	m = z[0]
	for _, v := range z {
		if v > m {
			m = v
		}
	}
	Exps(prob, z, m) // the maximum's is exactly 1
	sum := 0.0
	for _, p := range prob {
		sum += p
	}
	l, inv := math.Log(sum), 1/sum
	for i, v := range z {
		logp[i] = (v - m) - l
		prob[i] *= inv
	}
	return m, l
}
