package kernels

import "math"

// LogSoftmaxRows writes out[e] = (x[e] - m) - log sum exp(x - m) row by
// row, the rows being x[offsets[r]:offsets[r+1]] and m each row's maximum:
// the largest term of the sum is exp(0) = 1 exactly, so the sum lies in
// [1, len(row)] and neither overflows nor underflows to 0. prob receives
// the softmax, exp(x[e] - m) / sum, from the same exponentials (nil: not
// kept). out may alias x; lse is scratch of one value per row (nil:
// allocated here).
//
// The logs of the row sums are taken in a separate loop: there they do not
// wait on one another, while inside the row loop each log waits on its row's
// sum (about 4x slower at rows of 6).
func LogSoftmaxRows(out, prob, x []float64, offsets []int, lse []float64) {
	if lse == nil {
		lse = make([]float64, len(offsets)-1)
	}
	if prob == nil {
		prob = make([]float64, offsets[len(offsets)-1])
	}
	shiftRows(out, x, offsets)
	expRows(prob, out, offsets, lse)
	for r, sum := range lse {
		lse[r] = math.Log(sum)
	}
	lo := offsets[0]
	for r, hi := range offsets[1:] {
		l, o := lse[r], out[lo:hi]
		for i := range o {
			o[i] -= l
		}
		lo = hi
	}
}

// SoftmaxRows writes prob[e] = exp(x[e] - m) / sum exp(x - m) row by row,
// as LogSoftmaxRows does (the same values to rounding) without the logs.
// prob may alias x.
func SoftmaxRows(prob, x []float64, offsets []int) {
	shiftRows(prob, x, offsets)
	expRows(prob, prob, offsets, nil)
}

// shiftRows writes d[e] = x[e] - m, m the maximum of e's row (d may alias
// x).
func shiftRows(d, x []float64, offsets []int) {
	lo := offsets[0]
	for _, hi := range offsets[1:] {
		row, o := x[lo:hi], d[lo:hi]
		o = o[:len(row)]
		m := row[0]
		for _, v := range row[1:] {
			if v > m { // not max(m, v): the builtin's NaN and signed-zero cases cost a branch each
				m = v
			}
		}
		for i, v := range row {
			o[i] = v - m
		}
		lo = hi
	}
}

// expRows writes prob[e] = exp(d[e]) / sum_row exp(d) for the shifted rows
// d (every row's maximum 0, whose exponential is exactly 1), the
// exponentials of the whole span taken at once (Exps), and each row's sum
// into sums when it is not nil. prob may alias d.
func expRows(prob, d []float64, offsets []int, sums []float64) {
	lo, end := offsets[0], offsets[len(offsets)-1]
	Exps(prob[lo:end], d[lo:end], 0)
	for r, hi := range offsets[1:] {
		p := prob[lo:hi]
		sum := 0.0
		for _, v := range p {
			sum += v
		}
		if sums != nil {
			sums[r] = sum
		}
		inv := 1 / sum
		for i := range p {
			p[i] *= inv
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
