package figures

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// maxLabels is the most labelled ticks an axis gets by default;
// powers of ten alone, evenly spaced on a log axis, may take up to
// maxDecadeLabels.
const (
	maxLabels       = 8
	maxDecadeLabels = 11
)

// logTicks labels a log axis at 1-2-3-5, 1-2-5 or 1-3 times powers of
// ten, the densest that gives at most maxLabels labels, or else at powers
// of ten (every one, or every n-th for more than maxDecadeLabels), with unlabelled
// ticks at the other integers of each decade; an axis spanning less than
// a decade gets evenly spaced labels (linearTicks), which read better
// there. Every label of an axis has the same format (label). The axis
// holds log10 of the values: lo and hi are log10 of the range, each tick's
// Value log10 of the value its label shows.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := logTickValues(math.Pow(10, lo), math.Pow(10, hi))
	for i := range ts {
		ts[i].Value = math.Log10(ts[i].Value)
	}
	return ts
}

// logTickValues are logTicks' ticks over [lo, hi] in values, not logs.
func logTickValues(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || hi/lo < 10 {
		return linearTicks{}.Ticks(lo, hi)
	}
	e0, e1 := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	decades := e1 - e0
	var major []float64
	for _, set := range [][]int{{1, 2, 3, 5}, {1, 2, 5}, {1, 3}, {1}} {
		major = decadeTicks(set, e0, e1, 1, lo, hi)
		if len(major) <= maxLabels || len(set) == 1 {
			break
		}
	}
	every := 1
	for len(major) > maxDecadeLabels { // very many decades: every other power of ten, ...
		every++
		major = decadeTicks([]int{1}, e0, e1, every, lo, hi)
	}
	var minor []float64
	if decades <= 6 {
		minor = decadeTicks([]int{1, 2, 3, 4, 5, 6, 7, 8, 9}, e0, e1, 1, lo, hi)
	} else {
		minor = decadeTicks([]int{1}, e0, e1, 1, lo, hi)
	}
	return ticks(major, minor)
}

// decadeTicks are m 10^e in [lo, hi] for m in set and every e-th exponent
// from e0 to e1, as exact decimals.
func decadeTicks(set []int, e0, e1, every int, lo, hi float64) []float64 {
	var out []float64
	for e := e0; e <= e1; e++ {
		if (e-e0)%every != 0 {
			continue
		}
		for _, m := range set {
			v, _ := strconv.ParseFloat(strconv.Itoa(m)+"e"+strconv.Itoa(e), 64)
			if v >= lo*(1-1e-12) && v <= hi*(1+1e-12) {
				out = append(out, v)
			}
		}
	}
	return out
}

// linearTicks labels a linear axis every 1, 2 or 5 times a power of ten,
// the smallest step that gives at most n labels (0: maxLabels), with
// unlabelled ticks in between; every label has the same format (label).
type linearTicks struct{ n int }

func (t linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return ticks([]float64{lo}, nil)
	}
	n := t.n
	if n <= 0 {
		n = maxLabels
	}
	e := int(math.Floor(math.Log10((hi-lo)/float64(n)))) - 1
	for {
		for _, m := range []int{1, 2, 5} {
			step, _ := strconv.ParseFloat(strconv.Itoa(m)+"e"+strconv.Itoa(e), 64)
			major := steps(lo, hi, step)
			if len(major) <= n {
				sub := map[int]float64{1: 5, 2: 2, 5: 5}[m]
				return ticks(major, steps(lo, hi, step/sub))
			}
		}
		e++
	}
}

// steps are the multiples of step in [lo, hi], rounded to step's decimals.
func steps(lo, hi, step float64) []float64 {
	decimals := max(0, -int(math.Floor(math.Log10(step)))+1)
	var out []float64
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(k*step, 'f', decimals, 64), 64)
		out = append(out, v+0) // +0: no "-0"
	}
	return out
}

// ticks labels the major values in one format and adds the minor ones
// that are not major.
func ticks(major, minor []float64) []plot.Tick {
	out := make([]plot.Tick, 0, len(major)+len(minor))
	labels := label(major)
	for i, v := range major {
		out = append(out, plot.Tick{Value: v, Label: labels[i]})
	}
	for _, v := range minor {
		isMajor := false
		for _, m := range major {
			isMajor = isMajor || math.Abs(v-m) <= 1e-9*math.Abs(m)
		}
		if !isMajor {
			out = append(out, plot.Tick{Value: v})
		}
	}
	return out
}

// label prints tick values in one format: plain decimals ("0.005",
// "30", "1000000"), or, when one would need more than 7 digits (a value
// of 10^7 or more, or below 10^-4), every value as m e n ("2e7", "1e-5").
func label(vs []float64) []string {
	sci := false
	for _, v := range vs {
		a := math.Abs(v)
		sci = sci || a >= 1e7 || (a > 0 && a < 1e-4)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		if !sci || v == 0 {
			out[i] = strconv.FormatFloat(v, 'f', -1, 64)
			continue
		}
		s := strconv.FormatFloat(v, 'e', -1, 64) // 2e+07
		mant, exp, _ := strings.Cut(s, "e")
		n, _ := strconv.Atoi(exp)
		out[i] = mant + "e" + strconv.Itoa(n)
	}
	return out
}
