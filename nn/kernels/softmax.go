package kernels

import (
	"bytes"
	"fmt"
	"math"
	"unsafe"
)

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
	normalizeRows(prob, offsets, sums)
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

// LogSoftmaxRowsBackwardRepeat is LogSoftmaxRowsBackward, bit for bit, but
// a repeat whose probabilities were copied (copied, as the forward
// LogSoftmaxRowsRepeat left it) and whose rows of g equal its source's bit
// for bit gets its source's gradient copied: each row's gradient is a
// function of its own rows of pi and g.
func LogSoftmaxRowsBackwardRepeat(grad, pi, g []float64, offsets []int, reps []Repeat, copied []bool) {
	again := false
	for i, r := range reps {
		s, f := offsets[r.Row], offsets[r.From]
		copied[i] = copied[i] && sameBits(g[s:offsets[r.Row+r.Rows]], g[f:])
		again = again || copied[i]
	}
	if !again {
		LogSoftmaxRowsBackward(grad, pi, g, offsets)
		return
	}
	eachComputed(offsets, reps, copied, func(r0, r1 int) {
		LogSoftmaxRowsBackward(grad, pi, g, offsets[r0:r1+1])
	})
	copyRepeats(grad, offsets, reps, copied)
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

// Repeat names Rows rows of a softmax's table, from row Row on, that often
// hold the same values as the rows from row From (From + Rows <= Row, row
// for row of the same lengths): the branches of a graph whose policy is
// still symmetric. CheckRepeats checks the layout once.
type Repeat struct{ Row, From, Rows int }

// CheckRepeats checks reps against the rows of offsets: each inside the
// table, after its source, rows of its source's lengths, in increasing Row
// order without overlap.
func CheckRepeats(offsets []int, reps []Repeat) error {
	rows, next := len(offsets)-1, 0
	for i, r := range reps {
		if r.Rows < 1 || r.From < 0 || r.From+r.Rows > r.Row || r.Row < next || r.Row+r.Rows > rows {
			return fmt.Errorf("repeat %d (rows %d to %d of rows %d on): want %d rows after its source, in order, inside %d rows", i, r.Row, r.Row+r.Rows, r.From, r.Rows, rows)
		}
		for j := range r.Rows {
			if offsets[r.Row+j+1]-offsets[r.Row+j] != offsets[r.From+j+1]-offsets[r.From+j] {
				return fmt.Errorf("repeat %d: row %d has %d entries, its source row %d %d", i, r.Row+j, offsets[r.Row+j+1]-offsets[r.Row+j], r.From+j, offsets[r.From+j+1]-offsets[r.From+j])
			}
		}
		next = r.Row + r.Rows
	}
	return nil
}

// SoftmaxRowsRepeat is SoftmaxRows, bit for bit, but a repeat whose values
// in x equal its source's, bit for bit, gets its source's probabilities
// copied instead of computed: the headline's 15 identical branches cost
// one. reps are checked by CheckRepeats; copied is scratch of len(reps).
// prob may alias x.
//
// Bit for bit: SoftmaxRows takes the exponentials of the whole table at
// once (Exps), four at a time but for its last len % 4 (or for all when
// one is out of the vector range), which go one by one and may differ in
// the last place. A repeat is copied only where both it and its source
// take the four-wide path there, and the rows computed here take each
// exponential on the path SoftmaxRows takes it on (TestSoftmaxRowsRepeat).
func SoftmaxRowsRepeat(prob, x []float64, offsets []int, reps []Repeat, copied []bool) {
	if !softmaxRepeat(prob, prob, x, offsets, reps, copied, nil) {
		SoftmaxRows(prob, x, offsets)
		return
	}
	copyRepeats(prob, offsets, reps, copied)
}

// LogSoftmaxRowsRepeat is LogSoftmaxRows, bit for bit, copying the
// log-probabilities, probabilities and row sums' logs of the repeats whose
// values in x equal their source's, as SoftmaxRowsRepeat. lse must hold a
// value per row; out may alias x, prob may not.
func LogSoftmaxRowsRepeat(out, prob, x []float64, offsets []int, lse []float64, reps []Repeat, copied []bool) {
	if !softmaxRepeat(prob, out, x, offsets, reps, copied, lse) {
		LogSoftmaxRows(out, prob, x, offsets, lse)
		return
	}
	eachComputed(offsets, reps, copied, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			lse[r] = math.Log(lse[r])
		}
		for r := r0; r < r1; r++ {
			l, o := lse[r], out[offsets[r]:offsets[r+1]]
			for i := range o {
				o[i] -= l
			}
		}
	})
	copyRepeats(out, offsets, reps, copied)
	copyRepeats(prob, offsets, reps, copied)
	for i, r := range reps {
		if copied[i] {
			copy(lse[r.Row:r.Row+r.Rows], lse[r.From:])
		}
	}
}

// softmaxRepeat marks the repeats to copy and computes every other row:
// shifted = x - the row's maximum, prob its softmax (prob may alias
// shifted), sums each row's sum when not nil, each exponential on the path
// SoftmaxRows takes it on. It returns false, having computed nothing, when
// no repeat is to be copied.
func softmaxRepeat(prob, shifted, x []float64, offsets []int, reps []Repeat, copied []bool, sums []float64) bool {
	lo, end := offsets[0], offsets[len(offsets)-1]
	wide := end // entries before wide go four at a time in SoftmaxRows (when in range)
	if haveAVX {
		wide = lo + (end-lo)&^3
	}
	some := false
	for i, r := range reps {
		s, f := offsets[r.Row], offsets[r.From]
		n := offsets[r.Row+r.Rows] - s
		copied[i] = s+n <= wide && sameBits(x[s:s+n], x[f:f+n])
		some = some || copied[i]
	}
	if !some {
		return false
	}
	inRange := haveAVX
	eachComputed(offsets, reps, copied, func(r0, r1 int) {
		shiftRows(shifted, x, offsets[r0:r1+1])
		for _, v := range shifted[offsets[r0]:max(offsets[r0], min(offsets[r1], wide))] {
			if !(v > -708 && v < 709) {
				inRange = false
			}
		}
	})
	eachComputed(offsets, reps, copied, func(r0, r1 int) {
		s, e, v := offsets[r0], offsets[r1], 0
		if inRange && s < wide {
			v = min(e, wide) - s
			expsWide(prob[s:s+v], shifted[s:s+v])
		}
		for i := s + v; i < e; i++ {
			prob[i] = Exp(shifted[i])
		}
		var rowSums []float64
		if sums != nil {
			rowSums = sums[r0:r1]
		}
		normalizeRows(prob, offsets[r0:r1+1], rowSums)
	})
	return true
}

// eachComputed calls each(r0, r1) for every run of rows [r0, r1) outside
// the copied repeats, in order.
func eachComputed(offsets []int, reps []Repeat, copied []bool, each func(r0, r1 int)) {
	row := 0
	for i, r := range reps {
		if copied[i] {
			if row < r.Row {
				each(row, r.Row)
			}
			row = r.Row + r.Rows
		}
	}
	if row < len(offsets)-1 {
		each(row, len(offsets)-1)
	}
}

// copyRepeats copies the values of each copied repeat's source rows into
// its rows, in order.
func copyRepeats(v []float64, offsets []int, reps []Repeat, copied []bool) {
	for i, r := range reps {
		if copied[i] {
			copy(v[offsets[r.Row]:offsets[r.Row+r.Rows]], v[offsets[r.From]:])
		}
	}
}

// sameBits reports whether a and b (of a's length) hold the same bits,
// compared as bytes (bytes.Equal's vector loop: a float64 loop took as
// long as the softmax it saves).
func sameBits(a, b []float64) bool {
	if len(a) == 0 {
		return true
	}
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 8*len(a)), unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), 8*len(a)))
}

// expsWide writes dst[i] = e^src[i] four at a time with AVX2 for every i,
// the last len % 4 through a block padded with zeros: each value is the
// one Exps's four-wide path gives it wherever it falls. Every argument
// must be in the vector range.
func expsWide(dst, src []float64) {
	n4 := len(src) &^ 3
	if n4 > 0 {
		expsAVX(dst[:n4], src[:n4], 0, &expConsts, &expTable[0], false)
	}
	if n4 < len(src) {
		var pad [4]float64
		copy(pad[:], src[n4:])
		expsAVX(pad[:], pad[:], 0, &expConsts, &expTable[0], false)
		copy(dst[n4:], pad[:])
	}
}

// normalizeRows divides each row of p by its sum and writes the sums into
// sums when it is not nil.
func normalizeRows(p []float64, offsets []int, sums []float64) {
	lo := offsets[0]
	for r, hi := range offsets[1:] {
		row := p[lo:hi]
		sum := 0.0
		for _, v := range row {
			sum += v
		}
		if sums != nil {
			sums[r] = sum
		}
		inv := 1 / sum
		for i := range row {
			row[i] *= inv
		}
		lo = hi
	}
}
